"""Benchmark: the suite's Monte Carlo checks at full size. The suite runs small fixed-seed
versions of each (tests/unit: test_ab.py, test_stats_ab.py, test_stats_tail.py) that still fail
on the bug they guard; here the same simulations run with enough trials to bound the rates:

- the sequential A/B procedure's false-alarm rate over A/A sequences, with its stopping rule,
  against testing at the full alpha at every look (120 sequences, alpha 10 %, 6 rounds);
- the family-wise false-alarm rate of one A/B decision over four keys, with and without Holm's
  correction (200 A/A checks, alpha 5 %);
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
import test_stats_ab  # noqa: E402
import test_stats_tail  # noqa: E402


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
    print(f"  alpha spent over the looks: {rate(spent, trials)}  (holds: <= {alpha})")
    print(f"  full alpha at every look:   {rate(naive, trials)}  (above {alpha}: the contrast)")
    return spent / trials <= alpha and low(spent, trials) <= alpha < low(naive, trials)


def family_wise(trials: int) -> bool:
    alpha, keys = 0.05, 4
    alarms, uncorrected = test_stats_ab.family_alarms(trials, alpha, keys)
    print(f"  Holm over {keys} keys: {rate(alarms, trials)}  (holds: interval reaches {alpha})")
    print(f"  uncorrected:      {rate(uncorrected, trials)}  (above {alpha}: the contrast)")
    return low(alarms, trials) <= alpha < low(uncorrected, trials)


def coverage(name: str, covered: Callable[[int], bool], trials: int, needed: float) -> bool:
    hits = sum(covered(trial) for trial in range(trials))
    print(f"  {name}: {rate(hits, trials)}  (holds: at least {needed:.0%} of the trials)")
    return hits >= needed * trials


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ab-trials", type=int, default=120, help="A/A sequences (default 120)")
    ap.add_argument("--family-trials", type=int, default=200, help="A/A checks (default 200)")
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
