"""Bounded board replies on rpi5's SSH session (issue 31, item 5).

A kernel under test answers whatever it likes. The review's reproduction: a 3 GiB reply held
whole by `SshSession.run` (and `get_tree` untarring from memory) is a MemoryError under a 1 GiB
address-space limit. Here the board is a fake `ssh` first on PATH that runs the command it is
given on this machine (`sh -c LAST-ARGUMENT`), as the real one runs it on the Pi: each reply is
streamed to disk under its cap, and one past it is an InfraError (exit 3) naming the command.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from rtgate.board.rpi5 import ssh
from rtgate.board.spec import SshOptions
from rtgate.errors import InfraError

pytestmark = pytest.mark.integration

FAKE_SSH = """#!/bin/sh
# The last argument is the remote command line: run it here, as the board's shell would.
for a; do last=$a; done
exec sh -c "$last"
"""


@pytest.fixture
def board(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ssh.SshSession:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ssh").write_text(FAKE_SSH)
    (bin_dir / "ssh").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    return ssh.SshSession(SshOptions(host="pi.invalid", sudo=""), tmp_path / "session.log")


def test_an_ordinary_reply_and_stdin_pass(board: ssh.SshSession) -> None:
    proc = board.run("cat; echo done >&2", stdin=b"hello\n")
    assert proc.stdout == b"hello\n" and proc.stderr == b"done\n" and proc.returncode == 0
    assert board.output("uname -s") == "Linux"


def test_a_flood_on_stdout_is_refused_not_held(board: ssh.SshSession) -> None:
    with pytest.raises(InfraError, match=r"answered more than 1048576 bytes on stdout"):
        board.run("head -c 50M /dev/zero", cap=1 << 20)


def test_a_flood_on_stderr_is_refused(board: ssh.SshSession) -> None:
    with pytest.raises(InfraError, match=r"more than 1048576 bytes on stderr"):
        board.run("head -c 50M /dev/zero >&2")


def test_a_3_gib_reply_under_a_1_gib_limit_is_an_infra_error(tmp_path: Path) -> None:
    """The review's reproduction, in a process of its own with RLIMIT_AS = 1 GiB."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ssh").write_text(FAKE_SSH)
    (bin_dir / "ssh").chmod(0o755)
    code = f"""
import resource, sys
from pathlib import Path
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
from rtgate.board.rpi5.ssh import SshSession
from rtgate.board.spec import SshOptions
from rtgate.errors import InfraError
s = SshSession(SshOptions(host="pi.invalid", sudo=""), Path({str(tmp_path / 'log')!r}))
try:
    s.run("head -c 3G /dev/zero")
except InfraError as exc:
    print("infra:", exc)
    sys.exit(3)
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, env={**os.environ,
                                            "PATH": f"{bin_dir}:{os.environ['PATH']}",
                                            "OPENBLAS_NUM_THREADS": "1"})
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "answered more than 67108864 bytes on stdout" in proc.stdout
    assert "MemoryError" not in proc.stderr


def _tar_on_board(tmp_path: Path, files: dict[str, bytes]) -> Path:
    tree = tmp_path / "remote"
    for name, data in files.items():
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_bytes(data)
    return tree


def test_get_tree_unpacks_an_ordinary_tree(board: ssh.SshSession, tmp_path: Path) -> None:
    remote = _tar_on_board(tmp_path, {"rt/result.json": b"{}", "rt/hist.txt": b"1 2\n"})
    local = tmp_path / "local"
    board.get_tree(str(remote), local)
    assert (local / "rt" / "result.json").read_bytes() == b"{}"


def test_get_tree_refuses_too_many_members(board: ssh.SshSession, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ssh, "TREE_MEMBERS", 20)
    remote = _tar_on_board(tmp_path, {f"f{i}": b"" for i in range(30)})
    local = tmp_path / "local"
    with pytest.raises(InfraError, match="would unpack to more than .* or 20 files"):
        board.get_tree(str(remote), local)
    assert not any(local.iterdir())


def test_get_tree_refuses_a_stream_past_its_cap(board: ssh.SshSession, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ssh, "TREE_CAP", 1 << 20)
    remote = _tar_on_board(tmp_path, {"big": os.urandom(2 << 20)})
    with pytest.raises(InfraError, match="answered more than 1048576 bytes on stdout"):
        board.get_tree(str(remote), tmp_path / "local")


def test_get_tree_refuses_a_header_that_claims_too_much(board: ssh.SshSession, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A stream within the wire cap whose members claim more (a sparse member) is refused
    before anything is written."""
    monkeypatch.setattr(ssh, "TREE_CAP", 1 << 20)
    bomb = tmp_path / "bomb.tar"
    with tarfile.open(bomb, "w", format=tarfile.GNU_FORMAT) as tar:
        info = tarfile.TarInfo("huge")
        info.size = 4 << 20
        tar.addfile(info, io.BytesIO(b"\0" * (4 << 20)))
    # The board answers the bomb's first 600 kB: its header claims 4 MiB, past the cap.
    monkeypatch.setattr(board, "root", lambda command: f"head -c 600000 {bomb}")
    local = tmp_path / "local"
    with pytest.raises(InfraError, match="would unpack to more than 1 MiB"):
        board.get_tree("/results", local)
    assert not any(local.iterdir())


def test_a_background_bench_that_floods_its_log_is_stopped_with_the_log_kept(
        board: ssh.SshSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`rtgate bench` runs in the background with its output streamed into a log: a board that
    floods it is stopped at the cap, not left to fill the controller's disk until the run's
    time budget ends."""
    from rich.console import Console

    from rtgate.board.rpi5 import remote
    from rtgate.board.rpi5.session import Pi
    from rtgate.harness.scenario import load_scenario

    monkeypatch.setattr(remote, "REPLY_CAP", 1 << 20)
    pi = Pi("pi", board.opts, board, Console(stderr=True, quiet=True))
    idle, _ = load_scenario("idle")
    log = tmp_path / "bench.log"
    with pytest.raises(InfraError, match=r"wrote more than 1048576 bytes to bench.log") as exc:
        remote.drive(pi, "head -c 8M /dev/zero; exec sleep 60", "rtgate bench", idle, idle, 30,
                     None, tmp_path, log)
    assert exc.value.path == str(log) and log.stat().st_size >= 1 << 20
