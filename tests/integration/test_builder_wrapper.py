"""docker/rtgate-builder, the one way rtgate starts the kernel builder (and on a lab controller
the one command the runner user may run as root): arguments that would widen the container are
refused with exit 2 before docker is asked anything. Running it is test_build_isolation's."""

from __future__ import annotations

import os
import subprocess
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


def test_the_wrapper_is_shellcheck_clean() -> None:
    proc = subprocess.run(["shellcheck", str(BUILDER_WRAPPER)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout
