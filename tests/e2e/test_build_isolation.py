"""Untrusted builds stay apart (issue 23): in the real builder container, one pull request's
build plants ccache configuration and files and leaves a process behind; the next pull
request's build is unaffected, and reads main's ccache without being able to write it. The
container itself: no capabilities, no-new-privileges, pid and memory limits, no network.

The trees are fakekernel's (a Makefile of the test's own, seconds instead of a kernel's
twenty minutes); the compiles are real `ccache aarch64-linux-gnu-gcc -c`: init/version.c, the
same in every tree, and a file made fresh each time, which is always a miss and so always runs
the compiler (a prefix_command runs only then).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakekernel import pr_tarball

from rtgate.kernel.build import build
from rtgate.kernel.cache import main_ccache
from rtgate.kernel.runtime import BUILDER_WRAPPER

pytestmark = pytest.mark.integration

SLEEPER = "31337.25"
"""A sleep no other process on the machine runs: `sleep 31337.25`."""
COMPILE = """\
Image:
\t@mkdir -p $(O)/arch/arm64/boot
\t@cd $(CURDIR) && $(CC) -c init/version.c -o $(O)/version.o
\t@cp $(O)/version.o $(O)/arch/arm64/boot/Image
\t@echo "const char *built_at = \"$$(date +%s%N)\";" > $(O)/fresh.c
\t@cd $(O) && $(CC) -c fresh.c -o fresh.o
\t@ccache --print-stats | grep -E '^(remote_storage_hit|direct_cache_hit|cache_miss)' \\
\t  | sed 's/^/STAT /'
"""
MAKEFILE = """\
MAKEFLAGS += --no-print-directory
tinyconfig:
\t@: > $(O)/.config
olddefconfig:
\t@echo "START ccache dir holds: [$$(ls -A $$CCACHE_DIR | tr '\\n' ' ')]"
kernelrelease:
\t@echo 6.12.0-pr
""" + COMPILE
# PR A: a ccache.conf whose prefix_command runs its own program on every compile, that program
# and a marker beside it in the ccache it writes, the same into main's ccache, a process left
# running; then the compile (which must not run the program), and a control showing the planted
# configuration does run it when ccache is made to read it.
PLANT = MAKEFILE.replace("olddefconfig:\n", """olddefconfig:
\t@printf '#!/bin/sh\\necho "PR-A code ran inside a compile: $$*"\\nexec "$$@"\\n' \\
\t  > $$CCACHE_DIR/pwn.sh && chmod +x $$CCACHE_DIR/pwn.sh
\t@echo "prefix_command = $$CCACHE_DIR/pwn.sh" > $$CCACHE_DIR/ccache.conf
\t@echo planted > $$CCACHE_DIR/planted
\t@for d in $${CCACHE_REMOTE_STORAGE#file:}; do d=$${d%%|*}; \\
\t  cp $$CCACHE_DIR/ccache.conf $$CCACHE_DIR/pwn.sh $$d/ 2>/dev/null \\
\t    && echo "PLANTED in main's ccache" || echo "main's ccache refused the plant"; done
\t@(setsid sleep """ + SLEEPER + """ </dev/null >/dev/null 2>&1 &)
""") + """\
\t@cd $(CURDIR) && CCACHE_CONFIGPATH=$$CCACHE_DIR/ccache.conf CCACHE_RECACHE=1 \\
\t  $(CC) -c init/version.c -o $(O)/control.o | sed 's/^/CONTROL /'
"""
PROBE = MAKEFILE.replace("tinyconfig:\n", """tinyconfig:
\t@echo "PROBE $$(grep -E '^(CapEff|NoNewPrivs)' /proc/self/status | tr -s '\\t\\n' '  ')"
\t@echo "PROBE uid=$$(id -u) net=$$(ls /sys/class/net | tr '\\n' ,)"
\t@echo "PROBE pids.max=$$(cat /sys/fs/cgroup/pids.max /sys/fs/cgroup/pids/pids.max 2>/dev/null)"
\t@echo "PROBE memory=$$(cat /sys/fs/cgroup/memory.max \\
\t  /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null)"
\t@touch /planted 2>/dev/null && echo "PROBE rootfs writable" || echo "PROBE rootfs read-only"
\t@for c in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $$c; echo; done | grep '^timeout' \\
\t  | sed 's/^/PROBE limit /'
""")


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RTGATE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("RTGATE_CACHE_TRUST", raising=False)
    monkeypatch.delenv("RTGATE_CACHE_MAIN", raising=False)
    return tmp_path / "cache"


def _sleepers() -> list[str]:
    found = []
    for proc in Path("/proc").iterdir():
        try:
            cmdline = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if cmdline[:2] == [b"sleep", SLEEPER.encode()]:
            found.append(proc.name)
    return found


def _build(tmp_path: Path, name: str, makefile: str, trust: str) -> str:
    source = pr_tarball(tmp_path / f"tree-{name}", makefile)
    result = build("qemu-arm64", "rt", source=source, runtime="docker", out=tmp_path / name,
                   progress=False, trust=trust)
    return result.log.read_text().replace("\t", " ")


@pytest.mark.parametrize("roots", ["one", "two"])
def test_one_pull_request_cannot_reach_the_next_ones_build(
        builder_image: str, cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        roots: str) -> None:
    """roots: one $RTGATE_CACHE for both domains, or a lab controller's two, main's and pull
    requests' ($RTGATE_CACHE_MAIN and $RTGATE_CACHE_PR, docs/lab.md)."""
    assert not _sleepers()
    main = _build(tmp_path, "main", MAKEFILE, "trusted")
    if roots == "two":
        monkeypatch.setenv("RTGATE_CACHE_MAIN", str(cache))
        cache = tmp_path / "cache-pr"
        monkeypatch.setenv("RTGATE_CACHE", str(cache))
    assert "STAT cache_miss 2" in main
    shared = main_ccache()
    assert any(shared.rglob("*")), "the trusted build shared nothing into main's ccache"
    before = sorted(str(p) for p in shared.rglob("*"))

    a = _build(tmp_path, "pr-a", PLANT, "untrusted")
    # The planted configuration works when read (the control) ...
    assert "CONTROL PR-A code ran inside a compile" in a
    # ... and no compile of the build's own read it (CCACHE_CONFIGPATH is the harness's).
    assert sum("PR-A code ran" in line for line in a.splitlines()) == 1
    assert "main's ccache refused the plant" in a and "PLANTED" not in a
    assert sorted(str(p) for p in shared.rglob("*")) == before
    # Its process ended with its container.
    assert not _sleepers()
    # Its ccache went with its work area.
    assert not (cache / "untrusted" / "work" / "qemu-arm64-rt" / "ccache").exists()

    b = _build(tmp_path, "pr-b", MAKEFILE, "untrusted")
    assert "START ccache dir holds: []" in b
    assert "PR-A code ran" not in b
    # Main's results serve the next pull request: its compile is a remote (read-only) hit.
    assert "STAT remote_storage_hit 1" in b and "STAT cache_miss 1" in b


def test_the_build_container_is_confined(builder_image: str, cache: Path,
                                         tmp_path: Path) -> None:
    log = _build(tmp_path, "probe", PROBE, "untrusted")
    probe = {line.split(" ", 2)[1].split("=")[0]: line for line in log.splitlines()
             if line.startswith("PROBE ")}
    assert "CapEff: 0000000000000000" in probe["CapEff:"]
    assert "NoNewPrivs: 1" in probe["CapEff:"]
    assert f"uid={os.getuid()} net=lo," in log
    assert "PROBE pids.max=4096" in log
    assert f"PROBE memory={8 << 30}" in log
    assert "PROBE rootfs read-only" in log
    # The time limit: make runs under the container's timeout, whose end ends the container.
    assert "PROBE limit timeout --kill-after=30 14400 make " in log


def _wrapper(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BUILDER_WRAPPER), *args], capture_output=True, text=True,
                          timeout=120, env={**os.environ, **(env or {})})


def test_under_sudo_the_container_runs_as_the_caller(builder_image: str) -> None:
    # sudo sets SUDO_UID/SUDO_GID: the container runs as that user, never as root, and a
    # writable mount must be the caller's own, reachable by it (pytest's tmp_path lies below
    # root's 0700 directory, which uid 4321 cannot enter: a directory right under /tmp).
    caller = {"SUDO_UID": "4321", "SUDO_GID": "4321"}
    proc = _wrapper("--", "id", "-u", env=caller)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "4321"
    work = Path(tempfile.mkdtemp(prefix="rtgate-sudo-", dir="/tmp"))
    try:
        refused = _wrapper("--rw", str(work), "--", "true", env=caller)
        assert refused.returncode == 2
        assert f"{work}: not owned by uid 4321" in refused.stderr
        os.chown(work, 4321, 4321)
        written = _wrapper("--rw", str(work), "--", "touch", f"{work}/by-4321", env=caller)
        assert written.returncode == 0, written.stderr
        assert (work / "by-4321").stat().st_uid == 4321
    finally:
        shutil.rmtree(work)


RUNNER = "rtgate-sudo-probe"


@pytest.fixture
def runner_user() -> Iterator[int]:
    """A runner user outside the docker group, allowed docker/rtgate-builder through sudo (as
    docs/security.md installs it, at the repository's root-owned copy): removed afterwards."""
    sudoers = Path("/etc/sudoers.d/rtgate-builder-probe")
    subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/bin/sh", RUNNER],
                   check=True, capture_output=True)
    try:
        sudoers.write_text(f"{RUNNER} ALL=(root) NOPASSWD: {BUILDER_WRAPPER}\n")
        sudoers.chmod(0o440)
        subprocess.run(["visudo", "-cf", str(sudoers)], check=True, capture_output=True)
        yield int(subprocess.run(["id", "-u", RUNNER], capture_output=True, text=True,
                                 check=True).stdout)
    finally:
        sudoers.unlink(missing_ok=True)
        subprocess.run(["userdel", RUNNER], capture_output=True)


def _as_runner(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["runuser", "-u", RUNNER, "--", *argv], capture_output=True,
                          text=True, timeout=120, cwd="/")


def test_a_runner_outside_the_docker_group_builds_through_the_wrapper_only(
        builder_image: str, runner_user: int) -> None:
    assert _as_runner("docker", "info").returncode != 0
    # sudo allows the wrapper and nothing else: not docker itself.
    assert _as_runner("sudo", "-n", "/usr/bin/docker", "info").returncode != 0
    probe = _as_runner("sudo", "-n", str(BUILDER_WRAPPER), "--", "sh", "-c",
                       "id -u; grep -E '^(CapEff|NoNewPrivs)' /proc/self/status")
    assert probe.returncode == 0, probe.stderr
    uid, capeff, nnp = probe.stdout.split("\n")[:3]
    assert int(uid) == runner_user
    assert capeff.split() == ["CapEff:", "0000000000000000"] and nnp.split() == ["NoNewPrivs:",
                                                                                 "1"]
    # Nothing of root's through a mount: a writable one must be the runner's own.
    refused = _as_runner("sudo", "-n", str(BUILDER_WRAPPER), "--rw", "/root", "--", "true")
    assert refused.returncode == 2 and "/root: not owned by uid" in refused.stderr
