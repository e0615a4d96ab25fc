"""`rtgate ab`: the sequential A/B procedure's false-alarm rate with its stopping rule (seeded
simulation), and a `local` run refused before it measures. The gate's loop on the `local` board
is tests/integration/test_ab_local.py."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
from clirun import RunCli
from scipy import stats

from rtgate.outcome import Comparison
from rtgate.stats import ab, stalls

KEY = ("synthetic", "rt", "idle")


def test_spending_adds_up_to_alpha_at_the_cap_and_no_look_outside_the_plan() -> None:
    seq = ab.Sequential(alpha=0.01, planned=8)
    shares = [seq.alpha_at(n) for n in range(0, 10)]
    assert shares[:3] == [0, 0, 0] and shares[9] == 0  # fewer than 3 rounds, or past the cap
    assert sum(shares) == pytest.approx(0.01)
    # The tail test's share at the first look (the stall test's exact test cannot reach
    # its share before 7 rounds a side at this alpha).
    assert shares[3] == pytest.approx(ab.spent(0.01 * (1 - stalls.STALL_SHARE), 3 / 8))
    # O'Brien-Fleming (rule 3): little early, most of alpha at the late looks.
    assert all(x < y for x, y in zip(shares[3:8], shares[4:9], strict=True))
    pocock = [ab.increment(0.01, n, 8, ab.POCOCK) for n in range(3, 9)]
    assert all(x > y for x, y in zip(pocock, pocock[1:], strict=False))  # rule 2's: early
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
        comparison = [ab.KeyRounds(KEY, a, b, ab.Margin(0.005))]
        if not seq.stopped([KEY]):
            seq.look(n, comparison)
        if naive is None:
            (d,) = ab.decide(comparison, alpha)
            naive = d if d.outcome is not Comparison.UNKNOWN else None
    false = (Comparison.WORSE, Comparison.BETTER)
    return seq.latest(KEY) is not None and seq.latest(KEY).outcome in false, \
        naive is not None and naive.outcome in false


def test_the_sequential_false_alarm_rate_holds_with_the_stopping_rule() -> None:
    """A/A sequences (the same kernel on both sides): 'worse' or 'better' at any look is a false
    alarm. With alpha spent over the looks these raise at most alpha of them; testing at the
    full alpha at every look, under the same stopping rule, alarms in more (so this test catches
    a loop that forgot to spend). benchmarks/monte_carlo.py runs more sequences and bounds both
    rates with their confidence intervals."""
    alpha, planned, trials = 0.1, 6, 40
    rng = np.random.default_rng(2026)
    results = [a_a_trial(rng, planned, alpha) for _ in range(trials)]
    sequential = sum(s for s, _ in results)
    naive = sum(n for _, n in results)
    # Seeded, so exact counts; the interval says they are consistent with alpha and its double.
    assert stats.binomtest(sequential, trials).proportion_ci(0.95).low <= alpha, sequential
    assert naive > 1.5 * sequential, (naive, sequential)


def rtgate_ab(rtgate_cli: RunCli, out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return rtgate_cli("ab", "--board", "local", "--scenarios", "idle", "--round-duration", "2s",
                      "--min-effect-pct", "50", "--out", str(out), *args)


def test_a_local_run_refuses_kernels_before_measuring(rtgate_cli: RunCli, tmp_path: Path) -> None:
    proc = rtgate_ab(rtgate_cli, tmp_path, "--max-time", "20s", "--base", str(tmp_path))
    assert proc.returncode == 2, proc.stderr
    assert "measures its running kernel" in proc.stderr and not (tmp_path / "A").exists()
