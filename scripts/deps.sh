#!/usr/bin/env bash
# Install what is missing for the named groups on Debian 12 (run as root).
#   scripts/deps.sh core [kernel] [qemu] [report] [ci]
# Idempotent and quiet when everything is there: a machine used before may hold some of it,
# a fresh one holds none.
set -euo pipefail

declare -A APT=(
  [core]="rt-tests stress-ng iperf3 gnuplot-nox procps iproute2 python3-venv"
  [kernel]="gcc-aarch64-linux-gnu bc bison flex libssl-dev libelf-dev kmod cpio ccache make xz-utils linux-source-6.12 patch quilt"
  [qemu]="qemu-system-arm dropbear-bin openssh-client openssh-server busybox-static"
  [report]="chromium"
  [docker]="docker.io debootstrap qemu-user-static binfmt-support"
  [ci]="golang-go"
)

groups=("${@:-core}")
want=()
for g in "${groups[@]}"; do
  [[ -n "${APT[$g]+x}" ]] || { echo "deps.sh: unknown group '$g'" >&2; exit 2; }
  want+=(${APT[$g]})
done

missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "deps.sh: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The Python package with its test extras; pip is a no-op when nothing changed.
py=${PYTHON:-python3}
if ! "$py" -c 'import rtgate, junitparser, pytest' 2>/dev/null \
   || [[ pyproject.toml -nt .deps-pip.stamp ]]; then
  "$py" -m pip install -q -e '.[test]'
  touch .deps-pip.stamp
fi
