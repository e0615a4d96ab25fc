"""Benchmark: can a harmless bisect step be *same* within its cap under the A/B rule?

A bisect's search needs a harmless prefix to end *same* (or *better*); *unknown* at the step's
cap ends the bisect without a culprit. This replays the gate's own decision code
(``rtgate.stats.ab.decide_key`` at every look, with ``ab.boundaries`` of the plan) on simulated
harmless steps: both sides' per-round primary metric log-normal with one median and the log
standard deviation given (about the round-to-round CV for CVs up to ~0.6). Printed per cell: the
share of steps *same* by the cap with its Clopper-Pearson 95 % interval, any false *worse* or
*better*, and the median rounds a side at which *same* came.

    python benchmarks/bisect_same_within_cap.py [--trials 1000] [--margin-pct 100]
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import numpy as np
from scipy import stats

from rtgate.outcome import Comparison
from rtgate.stats import ab

KEY = ("qemu-arm64", "stock", "idle")


@dataclass(frozen=True)
class Cell:
    planned: int
    log_sd: float
    same: int
    worse_or_better: int
    trials: int
    median_rounds: float | None


def rounds_of(values_us: np.ndarray) -> list[ab.Round]:
    """Rounds holding only their block maxima: one block each, so its p90 is the value."""
    return [ab.Round(f"r{i}", 1, np.array([]), np.array([], dtype=np.int64), 0, None,
                     {0: np.array([v])}) for i, v in enumerate(values_us)]


def cell(planned: int, log_sd: float, margin: ab.Margin, alpha: float, trials: int,
         rng: np.random.Generator) -> Cell:
    bounds = ab.boundaries(alpha, planned)
    same, other, when = 0, 0, []
    for _ in range(trials):
        a, b = (rounds_of(30_000 * np.exp(rng.normal(0, log_sd, planned))) for _ in "ab")
        for k, n in enumerate(range(ab.MIN_ROUNDS, planned + 1)):
            d = ab.decide_key(ab.KeyRounds(KEY, a[:n], b[:n], margin, primary=ab.BLOCK_METRIC),
                              alpha, bounds[k])
            if d.outcome is Comparison.UNKNOWN:
                continue
            if d.outcome is Comparison.SAME:
                same += 1
                when.append(n)
            else:
                other += 1
            break
    return Cell(planned, log_sd, same, other, trials, float(np.median(when)) if when else None)


def clopper_pearson(k: int, n: int) -> tuple[float, float]:
    low = float(stats.beta.ppf(0.025, k, n - k + 1)) if k else 0.0
    high = float(stats.beta.ppf(0.975, k + 1, n - k)) if k < n else 1.0
    return low, high


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--margin-pct", type=float, default=100.0)
    parser.add_argument("--alpha", type=float, default=0.01)
    parser.add_argument("--planned", type=int, nargs="+", default=[6, 10, 20, 30])
    parser.add_argument("--log-sd", type=float, nargs="+", default=[0.3, 0.45, 0.55, 0.75])
    args = parser.parse_args()
    rng = np.random.default_rng(20261125)
    margin = ab.Margin(args.margin_pct / 100)
    print(f"margin {margin}, alpha {args.alpha}, {args.trials} harmless steps a cell")
    print("planned  log-sd  same by the cap [95 % CI]     worse/better  median rounds a side")
    for planned in args.planned:
        for log_sd in args.log_sd:
            c = cell(planned, log_sd, margin, args.alpha, args.trials, rng)
            low, high = clopper_pearson(c.same, c.trials)
            print(f"{c.planned:7d}  {c.log_sd:6.2f}  {c.same / c.trials:6.3f} "
                  f"[{low:.3f}, {high:.3f}]   {c.worse_or_better:12d}  {c.median_rounds}")


if __name__ == "__main__":
    main()
