"""`rtgate ab` end to end on the `local` board: the gate's loop through the real CLI, measuring
this machine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clirun import RunCli
from rich.console import Console
from test_ab import rtgate_ab

from rtgate.ab.loop import ABRun, Side
from rtgate.ab.settings import RoundSettings
from rtgate.board.spec import load_board
from rtgate.gate.thresholds import load_thresholds
from rtgate.result import load_result

ROOT = Path(__file__).resolve().parents[2]


# ---- the gate's loop, end to end on this machine -------------------------------------------

PLANTED = Path(__file__).parents[1] / "data" / "ab" / "scenario"  # idle + a SCHED_FIFO 99 load
EXIT = {"same": 0, "better": 0, "worse": 1, "undecided": 4}


@pytest.mark.integration
def test_local_b_under_a_planted_load_is_worse_in_interleaved_rounds(rtgate_cli: RunCli,
                                                                     tmp_path: Path) -> None:
    proc = rtgate_ab(rtgate_cli, tmp_path, "--cand-scenario-dir", str(PLANTED), "--max-time", "70s",
                     "--alpha", "0.2", "--planned-rounds", "10")
    report = json.loads((tmp_path / "ab.json").read_text())
    # The planted load costs milliseconds: the test must not call it same; it is worse as soon
    # as the rounds a side allow the permutation tests a p-value small enough (6 here).
    assert report["outcome"] != "same", proc.stderr[-2000:]
    assert proc.returncode == EXIT[report["outcome"]] == report["exit"]
    assert report["outcome"] == "worse", report
    (d,) = report["decisions"]
    assert (d["board"], d["scenario"], d["outcome"], d["final"]) == ("local", "idle", "worse", True)
    p999 = next(e for e in d["effects"] if e["metric"] == "p99.9")
    assert p999["low_us"] > 50, p999  # a regression of milliseconds, beyond the margin
    # Alpha spent look by look, within the rate; the loop stopped at its first decision.
    assert sum(look["alpha"] for look in report["looks"]) == report["alpha_spent"] <= 0.2
    assert [look["decisions"]["/".join(("local", d["flavor"], "idle"))]
            for look in report["looks"]][-1] == "worse"
    assert all(v == "unknown" for look in report["looks"][:-1] for v in look["decisions"].values())
    # Rounds interleaved A B B A A B …, one directory each, each a complete result.
    rounds = report["pairs"]
    assert d["rounds"] == {"A": rounds, "B": rounds}
    start = {(side, n): load_result(tmp_path / side / f"round-{n}" / "running" / "idle"
                                    / "result.json").start
             for side in "AB" for n in range(1, rounds + 1)}
    for n in range(1, rounds + 1):
        first, second = ("A", "B") if n % 2 else ("B", "A")
        assert start[(first, n)] < start[(second, n)]
    md = (tmp_path / "ab.md").read_text()
    assert "**worse**" in md and "Not a comparison of two kernels" in md
    assert f"| {rounds}/{rounds} |" in md and "`max ≤ 100000 · avg ≤ 1000 µs" in md
    assert report["planned_rounds"] == 10
    # The publisher's replay from the rounds' results alone makes the same looks and decision.
    replayed = replay(tmp_path, planned=10, alpha=0.2)
    assert replayed.outcome == "worse" and replayed.pairs == rounds
    assert [{"/".join(d.key): d.outcome.value for d in look.decisions}
            for look in replayed.seq.looks] == [look["decisions"] for look in report["looks"]]
    (again,) = (replayed.seq.latest(k) for k in replayed.budgets)
    assert [e.estimate_us for e in again.effects] == [e["delta_us"] for e in d["effects"]]


def replay(out: Path, planned: int, alpha: float) -> ABRun:
    settings = RoundSettings(out=out, round_duration=2, max_time=70, planned_rounds=planned,
                             min_effect_pct=50, alpha=alpha)
    run = ABRun(load_board("local"), (Side("A", "base", None, None),
                                      Side("B", "candidate", None, None)),
                [("", "idle")], load_thresholds(ROOT / "thresholds.yml"), settings,
                Console(quiet=True))
    run.replay()
    return run


@pytest.mark.integration
def test_local_a_a_is_not_worse_and_undecided_is_its_own_outcome(rtgate_cli: RunCli,
                                                                 tmp_path: Path) -> None:
    proc = rtgate_ab(rtgate_cli, tmp_path, "--max-time", "20s")
    report = json.loads((tmp_path / "ab.json").read_text())
    assert report["outcome"] in ("same", "better", "undecided"), report
    assert proc.returncode == EXIT[report["outcome"]] == report["exit"]
    md = (tmp_path / "ab.md").read_text()
    assert "(an A/A check)" in md
    # Each round's board time is kept: the measurement plus what the board spends around it.
    walls = [r["wall_s"] for r in report["rounds"]]
    assert walls and all(w >= 2 for w in walls), report["rounds"]
    assert "board time a round: median" in md
    if report["outcome"] == "undecided":
        assert "time cap" in report["why"] and "infrastructure" not in md.lower()
        assert "undecided at the time cap" in md
