#!/usr/bin/env bash
# Print the name of a plain Debian 12 (bookworm) image on the local dockerd, making it first if
# needed: debian:bookworm-slim when the daemon has it, else a minbase debootstrap + `docker import`
# (Docker Hub is not reachable from the lab). Used by the kernel builder and the fresh-machine test.
#   docker/debian-base.sh [ARCH]      (default: this machine's architecture)
set -euo pipefail
arch=${1:-$(dpkg --print-architecture)}
platform=linux/$arch
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

if docker image inspect debian:bookworm-slim >/dev/null 2>&1 \
   && [[ $(docker image inspect -f '{{.Architecture}}' debian:bookworm-slim) == "$arch" ]]; then
  echo debian:bookworm-slim; exit 0
fi
security=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
base=rtgate/debootstrap:bookworm-stock-$arch
if [[ $(docker image inspect -f '{{.Architecture}}' "$base" 2>/dev/null) == "$arch" ]]; then
  echo "$base"; exit 0
fi
rootfs=$(mktemp -d /tmp/rtgate-debootstrap.XXXXXX)
trap 'rm -rf "$rootfs" "$rootfs.ctx"' EXIT
echo "debian-base.sh: debootstrap bookworm ($arch) for the base image" >&2
debootstrap --variant=minbase --arch="$arch" bookworm "$rootfs" "$mirror" >&2
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
# The APT sources of a stock Debian 12 install (and of the official image): debootstrap writes
# only `bookworm main`, yet packages such as linux-source-6.12 live in bookworm-security.
rm -f "$rootfs/etc/apt/sources.list"
cat >"$rootfs/etc/apt/sources.list.d/debian.sources" <<SOURCES
Types: deb
URIs: $mirror
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
if [[ $arch == "$(dpkg --print-architecture)" ]]; then
  tar -C "$rootfs" -c . | docker import - "$base" >/dev/null
else
  # Debian's dockerd (20.10) ignores `docker import --platform` and labels the image with its
  # own architecture; a FROM scratch build labels it right (ADD unpacks the tarball, nothing
  # runs under emulation).
  mkdir "$rootfs.ctx"
  tar -C "$rootfs" -cf "$rootfs.ctx/rootfs.tar" .
  printf 'FROM scratch\nADD rootfs.tar /\nCMD ["bash"]\n' >"$rootfs.ctx/Dockerfile"
  docker buildx build --platform "$platform" -t "$base" --load "$rootfs.ctx" >&2
fi
echo "$base"
