"""`rtgate parse` as a command: the exit codes and the one-line errors are a CLI contract."""

from __future__ import annotations

from pathlib import Path

import pytest
from clirun import RunCli

from rtgate.result import load_result

DATA = Path(__file__).parents[1] / "data"
MALFORMED = sorted(p for p in (DATA / "malformed").iterdir() if p.name != "README.md")


def test_the_corpus_is_big_enough() -> None:
    assert len(MALFORMED) >= 20


@pytest.mark.parametrize("raw", MALFORMED, ids=lambda p: p.name)
def test_malformed_input_exits_2_with_one_line_naming_the_file(rtgate_cli: RunCli,
                                                               raw: Path, tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    before = raw.read_bytes()
    proc = rtgate_cli("parse", raw, "-o", out)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"rtgate: {raw}: ")
    assert not out.exists() and list(tmp_path.iterdir()) == []
    assert raw.read_bytes() == before  # the raw data is never touched


def test_errors_inside_a_file_name_the_line(rtgate_cli: RunCli) -> None:
    proc = rtgate_cli("parse", DATA / "malformed" / "verbose-bad-thread.txt", "-o", "/dev/null")
    assert ": line 41: thread 7 " in proc.stderr


def test_parse_writes_a_valid_result(rtgate_cli: RunCli, tmp_path: Path) -> None:
    out = tmp_path / "r" / "result.json"
    ct = DATA / "cyclictest"
    proc = rtgate_cli("parse", ct / "overflow.json", ct / "overflow.stdout", "-o", out,
                      "--board", "local", "--scenario", "cpu", "--flavor", "stock", "--virtual",
                      "--run-id", "r1")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    r = load_result(out)
    assert (r.run_id, r.board.name, r.board.virtual, r.scenario, r.kernel.flavor) == (
        "r1", "local", True, "cpu", "stock")
    assert r.totals.samples == 3999 and r.totals.p99 is not None
    assert str(r.totals.p99) == "≥12"


def test_contradictory_files_exit_2_and_write_nothing(rtgate_cli: RunCli, tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    ct = DATA / "cyclictest"
    proc = rtgate_cli("parse", ct / "quiet-json.json", ct / "quiet.txt", "-o", out)
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1
    assert "not one run" in proc.stderr and not out.exists()


def test_missing_file_exits_2(rtgate_cli: RunCli, tmp_path: Path) -> None:
    proc = rtgate_cli("parse", tmp_path / "nope.json", "-o", tmp_path / "r.json")
    assert proc.returncode == 2 and "nope.json: cannot read" in proc.stderr
