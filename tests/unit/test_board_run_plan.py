"""`rtgate board run` resolves the board, the kernel build and the scenario before it touches
the board (rtgate.board.run.validate): every problem named, exit 2; `--dry-run` prints the plan."""

from __future__ import annotations

from pathlib import Path

from clirun import RunCli

PLANS = Path(__file__).parents[1] / "data" / "plans"


def test_the_plan_is_printed_without_a_device(rtgate_cli: RunCli, tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = rtgate_cli("board", "run", "--board", "qemu-arm64", "--scenario", "all-in",
                      "--duration", "10s", "--out", out, "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (PLANS / "board-run-qemu-arm64.yml").read_text()
    assert not out.exists()


def test_every_problem_is_named_before_the_board_is_touched(rtgate_cli: RunCli,
                                                          tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = rtgate_cli("board", "run", "--board", "qemu-arm64", "--kernel", tmp_path / "none",
                      "--scenario", "nosuch", "--duration", "10s", "--out", out)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert any("not a kernel build (no metadata.json)" in line for line in lines), lines
    assert any("no such scenario 'nosuch'" in line for line in lines), lines
    assert lines[-1] == ("rtgate: 2 problems found before the board was touched (above): "
                         "nothing was run")
    assert not out.exists()
