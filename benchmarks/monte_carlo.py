"""Benchmark: the suite's Monte Carlo checks at full size. The suite runs small fixed-seed
versions of each (tests/unit: test_ab.py, test_stats_ab.py, test_stats_tail.py) that still fail
on the bug they guard; here the same simulations run with enough trials to bound the rates:

- the sequential A/B procedure's false-alarm rate over A/A sequences, with its stopping rule,
  against testing at the full alpha at every look (2000 sequences, alpha 10 %, 6 rounds);
- the family-wise false-alarm rate of one A/B run over four keys, each sequence at alpha / 4
  (the gate's Bonferroni split over keys) against each at the full alpha (200 A/A runs,
  alpha 10 %, 6 rounds);
- how often the tail estimate's 90 % interval covers the true pWCET (GEV, 8 seeded series) and
  the true quantile (POT, 8 seeded series).

Printed: each rate with its 95 % Clopper-Pearson interval, and whether it holds. Exit 1 if one
does not.

    python benchmarks/monte_carlo.py [--ab-trials N] [--family-trials N] [--tail-trials N]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from scipy import stats

# The simulations are the suite's own (one definition of each synthetic truth).
TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path[:0] = [str(TESTS), str(TESTS / "unit")]

import test_ab  # noqa: E402
import test_stats_tail  # noqa: E402

from rtgate.outcome import Comparison  # noqa: E402
from rtgate.stats import ab  # noqa: E402


def rate(hits: int, trials: int) -> str:
    ci = stats.binomtest(hits, trials).proportion_ci(0.95)
    return f"{hits}/{trials} = {hits / trials:.3f} [{ci.low:.3f}, {ci.high:.3f}]"


def low(hits: int, trials: int) -> float:
    return float(stats.binomtest(hits, trials).proportion_ci(0.95).low)


def sequential(trials: int) -> bool:
    alpha, planned = 0.1, 6
    rng = np.random.default_rng(2026)
    results = [test_ab.a_a_trial(rng, planned, alpha) for _ in range(trials)]
    spent, naive = sum(s for s, _ in results), sum(n for _, n in results)
    print(f"  alpha spent over the looks: {rate(spent, trials)}  (holds: interval reaches "
          f"{alpha})")
    print(f"  full alpha at every look:   {rate(naive, trials)}  (above {alpha}: the contrast)")
    return low(spent, trials) <= alpha < low(naive, trials)


def family_trial(rng: np.random.Generator, keys: int, planned: int, alpha: float,
                 split: bool) -> bool:
    """One A/A run of ``keys`` keys looked at after every pair of rounds, as `rtgate ab` looks:
    did any key end worse or better?"""
    names = [(f"k{k}", "rt", "idle") for k in range(keys)]
    sides: dict[tuple[str, str, str], tuple[list[ab.Round], list[ab.Round]]] = {
        k: ([], []) for k in names}
    seq = ab.Sequential(alpha, planned, keys=keys if split else 1)
    for n in range(1, planned + 1):
        for a, b in sides.values():
            a.append(test_ab.a_round(rng))
            b.append(test_ab.a_round(rng))
        if n >= ab.MIN_ROUNDS and not seq.stopped(names):
            seq.look(n, [ab.KeyRounds(k, a, b, ab.Margin(0.005)) for k, (a, b) in sides.items()])
    false = (Comparison.WORSE, Comparison.BETTER)
    return any(d.outcome in false for d in seq.final.values())


def family_wise(trials: int) -> bool:
    alpha, keys, planned = 0.1, 4, 6
    split = sum(family_trial(np.random.default_rng([2026, t]), keys, planned, alpha, True)
                for t in range(trials))
    full = sum(family_trial(np.random.default_rng([2026, t]), keys, planned, alpha, False)
               for t in range(trials))
    print(f"  alpha / {keys} a key:  {rate(split, trials)}  (holds: interval reaches {alpha})")
    print(f"  full alpha a key: {rate(full, trials)}  (above {alpha}: the contrast)")
    return low(split, trials) <= alpha < low(full, trials)


def coverage(name: str, covered: Callable[[int], bool | None], trials: int,
             needed: float) -> bool:
    """Coverage over the series given a number; a refusal (None: the fit checks) is counted
    apart, never as a hit or a miss."""
    results = [covered(trial) for trial in range(trials)]
    given = [r for r in results if r is not None]
    hits = sum(given)
    refused = f", {trials - len(given)} refused" if len(given) < trials else ""
    print(f"  {name}: {rate(hits, len(given))}{refused}  (holds: at least {needed:.0%} of the "
          "series given a number)")
    return bool(given) and hits >= needed * len(given)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ab-trials", type=int, default=2000,
                    help="A/A sequences (default 2000)")
    ap.add_argument("--family-trials", type=int, default=200,
                    help="A/A runs of four keys (default 200)")
    ap.add_argument("--tail-trials", type=int, default=8, help="seeded series (default 8)")
    args = ap.parse_args()
    # What the suite asserted at this size: 6 of 8 GEV intervals, 5 of 8 POT intervals (POT
    # extrapolates from 60 excesses and undercovers; the gate decides on GEV).
    checks: list[tuple[str, Callable[[], bool]]] = [
        ("sequential A/B false alarms", lambda: sequential(args.ab_trials)),
        ("family-wise A/B false alarms", lambda: family_wise(args.family_trials)),
        ("tail interval coverage", lambda: all([
            coverage("GEV pWCET", test_stats_tail.gev_covers, args.tail_trials, 6 / 8),
            coverage("POT quantile", test_stats_tail.pot_covers, args.tail_trials, 5 / 8)])),
    ]
    failed = []
    for name, check in checks:
        started = time.perf_counter()
        print(f"{name}:")
        if not check():
            failed.append(name)
        print(f"  ({time.perf_counter() - started:.0f} s)")
    if failed:
        print(f"does not hold: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
