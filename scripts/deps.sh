#!/usr/bin/env bash
# Install what is missing for the named groups on Debian 12 (run as root).
#   scripts/deps.sh core [kernel] [qemu] [report] [docker] [ci] [lab]
#   scripts/deps.sh --apt GROUP...      print the groups' Debian packages only
# Idempotent and quiet when everything is there: a machine used before may hold some of it,
# a fresh one holds none.
set -euo pipefail

declare -A APT=(
  [core]="rt-tests stress-ng iperf3 gnuplot-nox procps iproute2 python3-venv"
  [kernel]="gcc libc6-dev gcc-aarch64-linux-gnu libc6-dev-arm64-cross bc bison flex libssl-dev libelf-dev kmod cpio ccache make xz-utils linux-source-6.12 patch quilt"
  # gcc, libc6-dev (kernel, qemu): the host programs kbuild and rtla's build make first (fixdep);
  # Debian's linux-source only recommends them. pkg-config + libtracefs/libtraceevent -dev (host
  # and arm64): rtla from the kernel source (rtgate/trace).
  [qemu]="qemu-system-arm openssh-client openssh-server sudo libcap2-bin cpio binutils gcc libc6-dev make pkg-config libtracefs-dev libtraceevent-dev libtracefs-dev:arm64 libtraceevent-dev:arm64"
  [report]="chromium"
  # nginx-light: the LAVA tests' image store (its WebDAV module takes the uploads). sudo: a
  # runner user outside the docker group starts the builder through it (docs/security.md).
  [docker]="docker.io debootstrap qemu-user-static binfmt-support nginx-light sudo"
  # systemd: systemctl --root and systemd-analyze verify check the runner unit offline
  # (tests/integration/test_lab_guide.py). systemd-container and debootstrap: the lab's Ansible
  # tests boot Debian 12 containers with systemd-nspawn -b (tests/e2e/test_lab_ansible.py).
  [ci]="shellcheck jq systemd systemd-container debootstrap"
  # A lab controller's own tools: the board's serial console (picocom, console_command) and the
  # runner loop's GitHub calls (curl, openssl). No daemon: the time server and firewall the
  # controller runs (chrony, nftables) are its setup's, docs/lab.md.
  [lab]="picocom curl openssl"
)

# --apt GROUP...: print the groups' Debian packages, one a line, and do nothing else (the lab's
# Ansible installs them on a controller: lab/roles/controller).
if [[ ${1:-} == --apt ]]; then
  shift
  for g in "$@"; do
    [[ -n "${APT[$g]+x}" ]] || { echo "deps.sh: unknown group '$g'" >&2; exit 2; }
    printf '%s\n' ${APT[$g]}
  done
  exit 0
fi

groups=("${@:-core}")
want=()
for g in "${groups[@]}"; do
  [[ -n "${APT[$g]+x}" ]] || { echo "deps.sh: unknown group '$g'" >&2; exit 2; }
  want+=(${APT[$g]})
done

# qemu: the virtual board's initramfs is unpacked from Debian arm64 packages (apt-get download),
# so apt must know the arm64 architecture and its package lists.
if [[ " ${groups[*]} " == *" qemu "* ]] && ! dpkg --print-foreign-architectures | grep -qx arm64; then
  echo "deps.sh: enabling the arm64 package architecture"
  dpkg --add-architecture arm64
  apt-get update -qq
fi

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
# nginx-light is only the LAVA tests' image store, which the test starts itself: on a machine with
# systemd its package would also leave Debian's default site listening on port 80.
if [[ " ${missing[*]} " == *" nginx-light "* && -d /run/systemd/system ]]; then
  systemctl disable --now nginx
fi

# Go >= 1.25 builds act, actionlint and buildx. Debian 12's golang-go is 1.19: too old to build
# them, yet able to fetch a newer toolchain as a module through the Go module proxy (the way
# newer Go versions switch toolchains). Module zips drop the executable bits: restore them.
GO_TOOLCHAIN=v0.0.1-go1.25.5.linux-amd64
ensure_go() {
  local g dir
  for g in "$(command -v go || true)" /usr/local/go/bin/go /usr/local/lib/rtgate-go/bin/go; do
    [[ -n "$g" && -x "$g" ]] && "$g" version 2>/dev/null | grep -qE 'go1\.(2[5-9]|[3-9][0-9])' \
      && { echo "$g"; return; }
  done
  dpkg-query -W -f='${Status}' golang-go 2>/dev/null | grep -q "install ok installed" \
    || { apt-get update -qq; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq golang-go >/dev/null; }
  echo "deps.sh: fetching Go toolchain $GO_TOOLCHAIN as a module" >&2
  dir=$(GOPATH=/usr/local/lib/rtgate-gopath GOFLAGS=-modcacherw GOTOOLCHAIN=local \
        /usr/bin/go mod download -json "golang.org/toolchain@$GO_TOOLCHAIN" \
        | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [[ -d "$dir" ]] || { echo "deps.sh: could not fetch Go $GO_TOOLCHAIN" >&2; exit 2; }
  chmod +x "$dir"/bin/* "$dir"/pkg/tool/*/*
  ln -sfn "$dir" /usr/local/lib/rtgate-go
  echo /usr/local/lib/rtgate-go/bin/go
}

# ci: act and actionlint, built from the Go module proxy at pinned versions into /usr/local/bin.
# actionlint's PyPI wrapper downloads its binary from GitHub at install time, hence Go here.
if [[ " ${groups[*]} " == *" ci "* ]]; then
  go=$(ensure_go)
  for tool in github.com/nektos/act@v0.2.89 github.com/rhysd/actionlint/cmd/actionlint@v1.7.12; do
    name=${tool%@*}; name=${name##*/}; version=${tool##*@v}
    if ! "$name" --version 2>/dev/null | grep -qF "$version"; then
      echo "deps.sh: go install $tool"
      GOBIN=/usr/local/bin "$go" install "$tool"
    fi
  done
fi

# docker: the buildx CLI plugin (docker/kernel-builder.sh builds the kernel builder with it).
# Debian 12's docker.io has none; built from the Go module proxy at a pinned version.
if [[ " ${groups[*]} " == *" docker "* ]]; then
  plugin=${DOCKER_CONFIG:-$HOME/.docker}/cli-plugins/docker-buildx
  go=$(ensure_go)
  # A go-installed buildx reports v0.0.0+unknown; its module version is in the build info.
  if ! "$go" version -m "$plugin" 2>/dev/null | grep -qE 'mod[[:space:]]+github.com/docker/buildx[[:space:]]+v0.19.3'; then
    echo "deps.sh: go install github.com/docker/buildx/cmd/buildx@v0.19.3"
    mkdir -p "${plugin%/*}"
    bin=$(mktemp -d)
    GOBIN=$bin "$go" install github.com/docker/buildx/cmd/buildx@v0.19.3
    mv "$bin/buildx" "$plugin"
    rmdir "$bin"
  fi
fi

# RTGATE_VENV=none: the system packages and tools only (the lab's controller role, whose rtgate
# venv is its own, /opt/rtgate/venv).
[[ ${RTGATE_VENV:-} == none ]] && exit 0

# The Python package with its test extras, in the project's virtual environment (.venv): Debian's
# python3 has no pip and refuses system-wide installs (PEP 668). Made from Debian's own Python
# when there is one, so a development machine runs what a fresh Debian 12 runs.
venv=${RTGATE_VENV:-.venv}
if [[ ! -x $venv/bin/python ]]; then
  base=/usr/bin/python3
  [[ -x $base ]] || base=$(command -v python3)
  echo "deps.sh: creating the virtual environment $venv ($("$base" --version))"
  "$base" -m venv "$venv"
fi
if ! "$venv/bin/python" -I -c 'import rtgate, junitparser, pytest' 2>/dev/null \
   || [[ pyproject.toml -nt $venv/.deps-pip.stamp ]]; then
  "$venv/bin/python" -I -m pip install -q --disable-pip-version-check -e '.[test,lab]'
  touch "$venv/.deps-pip.stamp"
fi
