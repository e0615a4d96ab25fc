"""`rtgate ab`: the sequential A/B procedure's false-alarm rate with its stopping rule (seeded
simulation), and the gate's loop run end to end on the `local` board through the real CLI."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
from clirun import RunCli
from rich.console import Console

from rtgate.ab.loop import ABRun, Side
from rtgate.ab.settings import RoundSettings
from rtgate.board.spec import load_board
from rtgate.gate.thresholds import load_thresholds
from rtgate.outcome import Comparison
from rtgate.result import load_result
from rtgate.stats import ab

ROOT = Path(__file__).resolve().parent.parent

KEY = ("synthetic", "rt", "idle")


def test_spending_adds_up_to_alpha_at_the_cap_and_no_look_outside_the_plan() -> None:
    seq = ab.Sequential(alpha=0.01, planned=8)
    shares = [seq.alpha_at(n) for n in range(0, 10)]
    assert shares[:3] == [0, 0, 0] and shares[9] == 0  # fewer than 3 rounds, or past the cap
    assert sum(shares) == pytest.approx(0.01)
    assert shares[3] == pytest.approx(ab.spent(0.01, 3 / 8))
    assert all(x > y for x, y in zip(shares[3:8], shares[4:9], strict=True))  # Pocock: early
    assert ab.spent(0.01, 0) == 0 and ab.spent(0.01, 2.0) == pytest.approx(0.01)


def a_round(rng: np.random.Generator) -> ab.Round:
    """A round of one kernel: a boot-to-boot offset (sd 4 µs, what makes rounds the
    replicates) plus a gamma body, on the 1 µs grid. 2000 samples: only p99 has an exact
    interval, so one test a look, and six rounds a side keep the permutations exact and fast."""
    us = np.floor(20 + rng.normal(0, 4) + rng.gamma(2.0, 3.0, 2000)).astype(int)
    values, counts = np.unique(us, return_counts=True)
    return ab.Round("r", len(us), values.astype(float), counts, 0, 20_000)


def a_a_trial(rng: np.random.Generator, planned: int, alpha: float) -> tuple[bool, bool]:
    """One A/A sequence up to the cap, looked at after every pair of rounds and stopped at its
    first decision: (the sequential procedure said worse, testing at the full alpha at every
    look under the same stopping rule said worse)."""
    a: list[ab.Round] = []
    b: list[ab.Round] = []
    seq = ab.Sequential(alpha, planned)
    naive: ab.Decision | None = None
    for n in range(1, planned + 1):
        a.append(a_round(rng))
        b.append(a_round(rng))
        if n < ab.MIN_ROUNDS:
            continue
        comparison = [ab.KeyRounds(KEY, a, b, min_effect_us=0.5)]
        if not seq.stopped([KEY]):
            seq.look(n, comparison)
        if naive is None:
            (d,) = ab.decide(comparison, alpha)
            naive = d if d.outcome is not Comparison.UNKNOWN else None
    worse = Comparison.WORSE
    return seq.latest(KEY) is not None and seq.latest(KEY).outcome is worse, \
        naive is not None and naive.outcome is worse


def test_the_sequential_false_alarm_rate_holds_with_the_stopping_rule() -> None:
    """A/A sequences (the same kernel on both sides): 'worse' at any look is a false alarm. With
    alpha spent over the looks these ten raise none; testing at the full alpha at every look,
    under the same stopping rule, alarms in more than alpha of them (so this test catches a
    loop that forgot to spend). bench/perf/monte_carlo.py runs 120 sequences and bounds both
    rates with their confidence intervals."""
    alpha, planned, trials = 0.1, 6, 10
    rng = np.random.default_rng(2026)
    results = [a_a_trial(rng, planned, alpha) for _ in range(trials)]
    sequential = sum(s for s, _ in results)
    naive = sum(n for _, n in results)
    assert sequential / trials <= alpha, sequential
    assert naive / trials > alpha, naive


# ---- the gate's loop, end to end on this machine -------------------------------------------

PLANTED = Path(__file__).parent / "data" / "ab" / "scenario"  # idle + a SCHED_FIFO 99 load
EXIT = {"same": 0, "better": 0, "worse": 1, "undecided": 4}


def rtgate_ab(rtgate_cli: RunCli, out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return rtgate_cli("ab", "--board", "local", "--scenarios", "idle", "--round-duration", "2s",
                      "--min-effect-us", "50", "--out", str(out), *args)


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
                             min_effect_us=50, alpha=alpha)
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


def test_a_local_run_refuses_kernels_before_measuring(rtgate_cli: RunCli, tmp_path: Path) -> None:
    proc = rtgate_ab(rtgate_cli, tmp_path, "--max-time", "20s", "--base", str(tmp_path))
    assert proc.returncode == 2, proc.stderr
    assert "measures its running kernel" in proc.stderr and not (tmp_path / "A").exists()
