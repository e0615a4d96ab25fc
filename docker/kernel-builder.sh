#!/usr/bin/env bash
# Build the kernel builder image with `docker buildx` on the local dockerd.
#   docker/kernel-builder.sh [IMAGE]        (default rtgate/kernel-builder:local)
# PLATFORM=linux/arm64 builds the arm64 variant (QEMU user emulation via binfmt_misc).
# BASE_IMAGE=... uses that base; by default docker/debian-base.sh's (Docker Hub is not needed).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
image=${1:-rtgate/kernel-builder:local}
platform=${PLATFORM:-linux/$(dpkg --print-architecture)}
arch=${platform#linux/}

"$root/docker/dockerd.sh"
docker buildx version >/dev/null 2>&1 || {
  echo "kernel-builder.sh: docker buildx missing (scripts/deps.sh docker installs it)" >&2; exit 3; }

if [[ $arch != "$(dpkg --print-architecture)" ]]; then
  # Foreign-arch RUN steps go through qemu-user-static; binfmt_misc may not be mounted yet.
  [[ -e /proc/sys/fs/binfmt_misc/register ]] || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
  update-binfmts --enable "qemu-${arch/arm64/aarch64}" >/dev/null 2>&1 || true
fi

base=${BASE_IMAGE:-$("$root/docker/debian-base.sh" "$arch")}

# The context holds only what the image copies, plus a wheelhouse so pip needs no index
# inside the build (the daemon's network may not reach one).
ctx=$(mktemp -d /tmp/rtgate-builder-ctx.XXXXXX)
trap 'rm -rf "$ctx"' EXIT
cp -r "$root/pyproject.toml" "$root/README.md" "$root/rtgate" "$root/reports" "$root/kernel" \
  "$root/docker" "$ctx/"
find "$ctx" -name __pycache__ -prune -exec rm -rf {} +
py=${PYTHON:-$root/.venv/bin/python}
deps=$("$py" -c 'import tomllib; print(" ".join(tomllib.load(open("'"$root"'/pyproject.toml","rb"))["project"]["dependencies"]))')
pyplat=$([[ $arch == arm64 ]] && echo manylinux2014_aarch64 || echo manylinux2014_x86_64)
"$py" -m pip download -q --only-binary=:all: --platform "$pyplat" --python-version 3.11 \
  -d "$ctx/docker/wheels" $deps "setuptools>=68" wheel
docker buildx build --platform "$platform" --build-arg BASE_IMAGE="$base" \
  --build-arg PIP_OFFLINE=--no-index -f "$ctx/docker/kernel-builder.Dockerfile" \
  -t "$image" --load "$ctx" >&2
echo "$image"
