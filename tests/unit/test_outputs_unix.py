"""Outputs written the way a Unix tool writes them (issue 31, item 7).

A regular file is created with the mode the umask gives (0666 less it: 0644 under 022),
atomically (written beside it, renamed over it); an existing one keeps its mode. A character
device or a FIFO the user names is written to, never replaced: on 42c7145, run as root,
`rtgate check … --junit /dev/null` renamed a 0600 regular file over the machine's /dev/null.
The device here is the test's own node (os.mknod, major 1 minor 3: what /dev/null is), in its
temporary directory; never the host's.
"""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from clirun import RunCli
from devnodes import NODEV, opens_devices

from rtgate.errors import InputError
from rtgate.jsonfile import write_atomic

ROOT = Path(__file__).resolve().parents[2]
LOCAL = ROOT / "tests" / "data" / "results" / "local-cpu.result.json"
BUDGETS = """\
schema: rtgate/thresholds/v2
budgets:
  - board: local
    flavor: "*"
    scenario: cpu
    max_us: 100000
    min_samples: 1
    reason: test budget
"""


@pytest.fixture
def umask() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def null_device(tmp_path: Path) -> Path:
    if not opens_devices(tmp_path):
        pytest.skip(NODEV)
    node = tmp_path / "null"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("creating a device node needs CAP_MKNOD (the suite runs as root)")
    node.chmod(0o666)
    return node


def test_check_writes_into_a_character_device_and_leaves_it_one(rtgate_cli: RunCli,
                                                                 tmp_path: Path) -> None:
    node = null_device(tmp_path)
    budgets = tmp_path / "t.yml"
    budgets.write_text(BUDGETS)
    proc = rtgate_cli("check", LOCAL, "--thresholds", budgets, "--junit", node)
    assert proc.returncode == 0, proc.stderr
    st = os.stat(node)
    assert stat.S_ISCHR(st.st_mode) and st.st_rdev == os.makedev(1, 3)
    assert stat.S_IMODE(st.st_mode) == 0o666
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null", "t.yml"]  # no temporary left


def test_a_fifo_is_written_to_not_replaced(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    write_atomic(fifo, "through the pipe\n")
    reader.join(timeout=30)
    assert got == [b"through the pipe\n"] and stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_a_new_output_gets_the_umasks_mode_and_an_old_one_keeps_its_own(
        tmp_path: Path, umask: None) -> None:
    new = write_atomic(tmp_path / "out" / "junit.xml", "<x/>\n")
    assert stat.S_IMODE(os.stat(new).st_mode) == 0o644
    os.umask(0o077)
    assert stat.S_IMODE(os.stat(write_atomic(tmp_path / "private", "x")).st_mode) == 0o600
    kept = tmp_path / "kept"
    kept.write_text("old")
    kept.chmod(0o640)
    write_atomic(kept, "new")
    assert kept.read_text() == "new" and stat.S_IMODE(os.stat(kept).st_mode) == 0o640


def test_result_json_of_a_run_is_0644_under_umask_022(rtgate_cli: RunCli, tmp_path: Path,
                                                      umask: None) -> None:
    budgets = tmp_path / "t.yml"
    budgets.write_text(BUDGETS)
    junit = tmp_path / "junit.xml"
    assert rtgate_cli("check", LOCAL, "--thresholds", budgets, "--junit", junit).returncode == 0
    assert stat.S_IMODE(os.stat(junit).st_mode) == 0o644


def test_a_directory_or_socket_named_as_an_output_is_refused(tmp_path: Path,
                                                             rtgate_cli: RunCli) -> None:
    (tmp_path / "dir").mkdir()
    with pytest.raises(InputError, match="not a regular file"):
        write_atomic(tmp_path / "dir", "x")
    budgets = tmp_path / "t.yml"
    budgets.write_text(BUDGETS)
    proc = rtgate_cli("check", LOCAL, "--thresholds", budgets, "--junit", tmp_path / "dir")
    assert proc.returncode == 2 and "dir: not a regular file" in proc.stderr
    assert (tmp_path / "dir").is_dir()
