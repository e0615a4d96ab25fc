#!/usr/bin/env bash
# A throwaway LAVA lab (Debian 12's lava-server + lava-dispatcher 2023.01) for rtgate's lava
# driver: one container, REST API v0.2 on a published loopback port, admin token, one aarch64
# `qemu` device. The image is built once on docker/debian-base.sh's and cached.
#   docker/lava.sh image                    build (or reuse) the image, print its name
#   docker/lava.sh start NAME PORT TOKEN    start a lab, wait until a job can run, print NAME
#   docker/lava.sh stop NAME                remove it
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# The tag follows what the image is made from: a changed Dockerfile or entrypoint rebuilds.
sum=$(cat "$root/docker/lava.Dockerfile" "$root/docker/lava-entrypoint.sh" | sha256sum | cut -c1-12)
image=rtgate/lava:2023.01-$sum

build() {
  "$root/docker/dockerd.sh"
  if ! docker image inspect "$image" >/dev/null 2>&1; then
    base=${BASE_IMAGE:-$("$root/docker/debian-base.sh")}
    ctx=$(mktemp -d /tmp/rtgate-lava-ctx.XXXXXX)
    trap 'rm -rf "$ctx"' EXIT
    cp "$root/docker/lava.Dockerfile" "$root/docker/lava-entrypoint.sh" "$ctx/"
    docker build --build-arg BASE_IMAGE="$base" -f "$ctx/lava.Dockerfile" -t "$image" \
      "$ctx" >&2
  fi
  echo "$image"
}

case ${1:-} in
  image) build ;;
  start)
    name=$2 port=$3 token=$4
    build >/dev/null
    docker run -d --name "$name" -p "127.0.0.1:$port:80" -e LAVA_TOKEN="$token" \
      --add-host=host.docker.internal:host-gateway "$image" >/dev/null
    for _ in $(seq 420); do
      docker logs "$name" 2>/dev/null | grep -q '^LAVA-UP' && { echo "$name"; exit 0; }
      docker inspect -f '{{.State.Running}}' "$name" 2>/dev/null | grep -q true || break
      sleep 1
    done
    echo "lava.sh: the LAVA container $name did not come up:" >&2
    docker logs --tail 40 "$name" >&2 || true
    exit 3 ;;
  stop) docker rm -f "$2" >/dev/null ;;
  *) echo "usage: $0 image | start NAME PORT TOKEN | stop NAME" >&2; exit 2 ;;
esac
