"""docker/rtgate-builder, the one way rtgate starts the kernel builder (and on a lab controller
the one command the runner user may run as root): arguments that would widen the container are
refused with exit 2 before docker is asked anything. Running it is test_build_isolation's."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from rtgate.kernel.runtime import BUILDER_WRAPPER

pytestmark = pytest.mark.integration


def _wrapper(*args: str) -> subprocess.CompletedProcess[str]:
    # SUDO_UID: as the wrapper runs under sudo, for a caller that is not root.
    return subprocess.run([str(BUILDER_WRAPPER), *args], capture_output=True, text=True,
                          timeout=30, env={**os.environ, "SUDO_UID": "4321", "SUDO_GID": "4321"})


@pytest.mark.parametrize("args, why", [
    (["--ro", "relative/dir"], "relative/dir: not an absolute path"),
    (["--ro", "/proc/1"], "/proc/1: not mountable in the builder"),
    (["--ro", "/var/run/docker.sock"], "/var/run/docker.sock: not canonical (a link or ..)"),
    (["--ro", "/run/docker.sock"], "/run/docker.sock: not mountable in the builder"),
    (["--ro", "/etc/shadow"], "/etc/shadow: not mountable in the builder"),
    (["--ro", "/"], "/: not mountable in the builder"),
    (["--ro", "/nonexistent-rtgate"], "/nonexistent-rtgate: does not exist"),
    (["--privileged"], "unknown option --privileged"),
    (["--env", "a b"], "--env a b: not KEY=VALUE"),
    (["--workdir", "x"], "--workdir x: not absolute"),
    ([], "no command to run"),
])
def test_arguments_that_widen_the_container_are_refused(args: list[str], why: str) -> None:
    proc = _wrapper(*args, "--", "true") if args else _wrapper("--")
    assert proc.returncode == 2
    assert proc.stderr == f"rtgate-builder: {why}\n"


def test_a_link_or_a_foreign_directory_is_never_mounted(tmp_path: Path) -> None:
    (tmp_path / "link").symlink_to("/etc")
    proc = _wrapper("--ro", str(tmp_path / "link"), "--", "true")
    assert proc.returncode == 2 and "not canonical (a link or ..)" in proc.stderr
    proc = _wrapper("--rw", str(tmp_path), "--", "true")
    assert proc.returncode == 2 and f"{tmp_path}: not owned by uid 4321" in proc.stderr
    (tmp_path / "file").write_text("")
    proc = _wrapper("--rw", str(tmp_path / "file"), "--", "true")
    assert proc.returncode == 2 and "a writable mount must be a directory" in proc.stderr


@pytest.fixture
def shared() -> Iterator[Path]:
    """A directory tree the caller (uid 4321) can enter, outside pytest's root-only tmp."""
    root = Path(tempfile.mkdtemp(prefix="rtgate-builder-", dir="/tmp"))
    root.chmod(0o755)
    try:
        yield root
    finally:
        shutil.rmtree(root)


def _prove_mounts_pass(*mounts: str) -> subprocess.CompletedProcess[str]:
    # A refused --env after the mounts: exit 2 on it shows the mounts passed, docker never ran.
    return _wrapper(*mounts, "--env", "not a pair", "--", "true")


def test_a_mount_is_checked_as_the_caller(shared: Path) -> None:
    """dockerd binds as root: a world-readable file or a directory below one the caller cannot
    enter is refused, as is a directory it owns but cannot write."""
    private = shared / "private"
    (private / "dir").mkdir(parents=True)
    (private / "secret").write_text("s")
    (private / "secret").chmod(0o644)
    (private / "dir").chmod(0o755)
    private.chmod(0o700)  # root's, like /root
    proc = _wrapper("--ro", str(private / "secret"), "--", "true")
    assert (proc.returncode, proc.stderr) == (
        2, f"rtgate-builder: {private / 'secret'}: not readable by uid 4321\n")
    proc = _wrapper("--ro", str(private / "dir"), "--", "true")
    assert proc.returncode == 2 and "dir: not readable by uid 4321" in proc.stderr
    closed = shared / "closed"
    closed.mkdir(mode=0o700)
    os.chown(closed, 4321, 4321)
    closed.chmod(0o500)
    proc = _wrapper("--rw", str(closed), "--", "true")
    assert (proc.returncode, proc.stderr) == (
        2, f"rtgate-builder: {closed}: not writable by uid 4321\n")
    unlisted = shared / "unlisted"
    unlisted.mkdir(mode=0o711)
    proc = _wrapper("--ro", str(unlisted), "--", "true")
    assert proc.returncode == 2 and "unlisted: not readable by uid 4321" in proc.stderr


def test_mounts_the_caller_can_use_pass(shared: Path) -> None:
    work = shared / "work"
    work.mkdir()
    os.chown(work, 4321, 4321)
    (shared / "ccache").mkdir(mode=0o755)
    (shared / "ccache.conf").write_text("max_size = 1G\n")
    proc = _prove_mounts_pass("--rw", str(work), "--ro", str(shared / "ccache"),
                              "--ro", str(shared / "ccache.conf"))
    assert proc.stderr == "rtgate-builder: --env not a pair: not KEY=VALUE\n"


def test_the_wrapper_is_shellcheck_clean() -> None:
    proc = subprocess.run(["shellcheck", str(BUILDER_WRAPPER)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout
