#!/usr/bin/env bash
# Build the kernel builder image with `docker buildx` on the local dockerd.
#   docker/kernel-builder.sh [IMAGE]        (default rtgate/kernel-builder:local)
# PLATFORM=linux/arm64 builds the arm64 variant (QEMU user emulation via binfmt_misc).
# BASE_IMAGE=... uses that base; by default debian:bookworm-slim when the daemon has it, else a
# base made here with debootstrap + `docker import` (Docker Hub is not needed).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
image=${1:-rtgate/kernel-builder:local}
platform=${PLATFORM:-linux/$(dpkg --print-architecture)}
arch=${platform#linux/}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

"$root/docker/dockerd.sh"
docker buildx version >/dev/null 2>&1 || {
  echo "kernel-builder.sh: docker buildx missing (scripts/deps.sh docker installs it)" >&2; exit 3; }

if [[ $arch != "$(dpkg --print-architecture)" ]]; then
  # Foreign-arch RUN steps go through qemu-user-static; binfmt_misc may not be mounted yet.
  [[ -e /proc/sys/fs/binfmt_misc/register ]] || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
  update-binfmts --enable "qemu-${arch/arm64/aarch64}" >/dev/null 2>&1 || true
fi

base=${BASE_IMAGE:-}
if [[ -z $base ]]; then
  if docker image inspect debian:bookworm-slim >/dev/null 2>&1 \
     && [[ $(docker image inspect -f '{{.Architecture}}' debian:bookworm-slim) == "$arch" ]]; then
    base=debian:bookworm-slim
  else
    base=rtgate/debootstrap:bookworm-$arch
    if [[ $(docker image inspect -f '{{.Architecture}}' "$base" 2>/dev/null) != "$arch" ]]; then
      rootfs=$(mktemp -d /tmp/rtgate-debootstrap.XXXXXX)
      trap 'rm -rf "$rootfs" "$rootfs.ctx"' EXIT
      echo "kernel-builder.sh: debootstrap bookworm ($arch) for the base image" >&2
      debootstrap --variant=minbase --arch="$arch" bookworm "$rootfs" "$mirror" >&2
      rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
      if [[ $arch == "$(dpkg --print-architecture)" ]]; then
        tar -C "$rootfs" -c . | docker import - "$base" >/dev/null
      else
        # Debian's dockerd (20.10) ignores `docker import --platform` and labels the image with
        # its own architecture; a FROM scratch build labels it right (ADD unpacks the tarball,
        # nothing runs under emulation).
        mkdir "$rootfs.ctx"
        tar -C "$rootfs" -cf "$rootfs.ctx/rootfs.tar" .
        printf 'FROM scratch\nADD rootfs.tar /\nCMD ["bash"]\n' >"$rootfs.ctx/Dockerfile"
        docker buildx build --platform "$platform" -t "$base" --load "$rootfs.ctx" >&2
        rm -rf "$rootfs.ctx"
      fi
    fi
  fi
fi

# The context holds only what the image copies, plus a wheelhouse so pip needs no index
# inside the build (the daemon's network may not reach one).
ctx=$(mktemp -d /tmp/rtgate-builder-ctx.XXXXXX)
trap 'rm -rf "$ctx" ${rootfs:+"$rootfs" "$rootfs.ctx"}' EXIT
cp -r "$root/pyproject.toml" "$root/README.md" "$root/rtgate" "$root/kernel" "$root/docker" "$ctx/"
find "$ctx" -name __pycache__ -prune -exec rm -rf {} +
py=${PYTHON:-python3}
deps=$("$py" -c 'import tomllib; print(" ".join(tomllib.load(open("'"$root"'/pyproject.toml","rb"))["project"]["dependencies"]))')
pyplat=$([[ $arch == arm64 ]] && echo manylinux2014_aarch64 || echo manylinux2014_x86_64)
"$py" -m pip download -q --only-binary=:all: --platform "$pyplat" --python-version 3.11 \
  -d "$ctx/docker/wheels" $deps "setuptools>=68" wheel
docker buildx build --platform "$platform" --build-arg BASE_IMAGE="$base" \
  --build-arg PIP_OFFLINE=--no-index -f "$ctx/docker/kernel-builder.Dockerfile" \
  -t "$image" --load "$ctx" >&2
echo "$image"
