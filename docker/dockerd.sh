#!/usr/bin/env bash
# Make sure a Docker daemon answers: start Debian's dockerd (docker.io) when none does.
# Idempotent; exit 3 (infrastructure failure) when no daemon comes up.
set -euo pipefail
docker info >/dev/null 2>&1 && exit 0
command -v dockerd >/dev/null || {
  echo "dockerd.sh: dockerd is not installed (scripts/deps.sh docker)" >&2; exit 3; }
[[ $(id -u) == 0 ]] || { echo "dockerd.sh: no daemon answers and starting one needs root" >&2; exit 3; }
log=${DOCKERD_LOG:-/tmp/rtgate-dockerd.log}
# setsid: the daemon outlives this script and whichever test or make target started it.
setsid dockerd >"$log" 2>&1 < /dev/null &
for _ in $(seq 60); do
  docker info >/dev/null 2>&1 && exit 0
  sleep 1
done
echo "dockerd.sh: dockerd did not answer within 60 s; see $log" >&2
exit 3
