"""Benchmark: do the pWCET intervals hold? Coverage on synthetic GEV block maxima with a known
answer, by shape and number of blocks.

Each trial draws N i.i.d. GEV block maxima (1 s blocks, location 50 µs, scale 5 µs, shape xi),
cuts them to whole µs as cyclictest prints them, and asks rtgate.stats.tail.pwcet for the
latency exceeded with probability 1e-9 per hour (the gate's pwcet_us budget) with its 90 %
interval. The truth is the GEV's own quantile. Printed per cell: how many trials gave a number,
how many of those intervals held the truth (coverage, with its Clopper-Pearson 95 % interval),
how often the truth lay below the lower or above the upper bound (each side may err 5 %), and how
many trials were refused (no valid estimate, with the reasons). Exit 1 when any cell's coverage
is below nominal minus 3 points.

400 trials per cell give the coverage's own 95 % interval about ±3 points at 90 %.

Two-regime cells (since 2026-11-28, issue 36): Gumbel maxima (location 50 µs, scale 5 µs) with
10 % of blocks from a second regime (same scale) at ``--regimes`` µs (75: the audit's case, a
true 208 µs), the truth the mixture's own quantile. There the goal is refusal: a number given is
a confident wrong answer as often as not; the rows say how often each happens. Their coverage
is not held to the goal (the exit code counts the GEV cells only).

    python benchmarks/pwcet_coverage.py [--trials N] [--shapes ...] [--blocks ...] [--jobs N]
                                        [--regimes US ...]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import numpy as np
from rich.progress import Progress
from scipy import optimize, stats

from rtgate.stats import tail

LOC_US, SCALE_US, PER_HOUR, BLOCK_S = 50.0, 5.0, 1e-9, 1.0
TOLERANCE = 0.03  # coverage may fall this far below nominal (the "minus 3 points")


@dataclass(frozen=True)
class Trial:
    given: bool
    below: bool = False  # the truth lies below the lower bound
    above: bool = False  # the truth lies above the upper bound
    why_not: str = ""


SECOND_SHARE = 0.1  # of blocks from the second regime in a two-regime cell


def truth(shape: float, second_us: float | None = None) -> float:
    p = tail.per_block(PER_HOUR, BLOCK_S, tail.HOUR_S)
    if second_us is None:
        return float(stats.genextreme.isf(p, -shape, LOC_US, SCALE_US))  # scipy's c is -xi
    def excess(x: float) -> float:
        return float((1 - SECOND_SHARE) * stats.gumbel_r.sf(x, LOC_US, SCALE_US)
                     + SECOND_SHARE * stats.gumbel_r.sf(x, second_us, SCALE_US)) - p
    return float(optimize.brentq(excess, LOC_US, 100 * second_us))


def maxima(shape: float, second_us: float | None, blocks: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if second_us is None:
        x = stats.genextreme.rvs(-shape, loc=LOC_US, scale=SCALE_US, size=blocks,
                                 random_state=rng)
    else:
        x = rng.gumbel(LOC_US, SCALE_US, blocks)
        second = rng.random(blocks) < SECOND_SHARE
        x[second] = rng.gumbel(second_us, SCALE_US, int(second.sum()))
    return np.floor(x)


def trial(shape: float, blocks: int, seed: int, second_us: float | None = None) -> Trial:
    x = maxima(shape, second_us, blocks, seed)
    est = tail.pwcet(x, BLOCK_S, PER_HOUR)
    if est.lower_us is None or est.upper_us is None:
        # The kind of refusal, without its numbers.
        return Trial(False, why_not=est.why_not.split(":")[0])
    z = truth(shape, second_us)
    # Estimates are of the true latency, which lies in [printed, printed + 1).
    return Trial(True, below=z < est.lower_us - 1, above=z > est.upper_us)


Cell = tuple[float, int, int, int, float | None]


def run_cell(args: Cell) -> list[Trial]:
    shape, blocks, trials, offset, second_us = args
    base = int(1000 * (shape + 1)) * 100_000 + blocks * 1000 + offset
    if second_us is not None:
        base += 7_000_000_000 + int(second_us) * 1_000_000
    return [trial(shape, blocks, base + k, second_us) for k in range(trials)]


def clopper_pearson(k: int, n: int) -> tuple[float, float]:
    if n == 0:
        return 0.0, 1.0
    lo = stats.beta.ppf(0.025, k, n - k + 1) if k else 0.0
    hi = stats.beta.ppf(0.975, k + 1, n - k) if k < n else 1.0
    return float(lo), float(hi)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=400, help="per cell (default 400)")
    ap.add_argument("--shapes", type=float, nargs="*", default=[-0.2, -0.1, 0.0, 0.2, 0.4])
    # 120: the fewest the GEV's fit checks are calibrated for (fewer are refused outright).
    ap.add_argument("--blocks", type=int, nargs="+", default=[120, 130, 500])
    ap.add_argument("--regimes", type=float, nargs="*", default=[75.0, 100.0],
                    help="two-regime cells: the second regime's location in µs (default 75 "
                         "100; none: GEV cells only)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--seed-offset", type=int, default=0,
                    help="added to every trial's seed: fresh series for a rule chosen on the "
                         "default seeds' results (default 0)")
    args = ap.parse_args()
    cells: list[Cell] = [(s, b, args.trials, args.seed_offset, None)
                         for s in args.shapes for b in args.blocks]
    cells += [(0.0, b, args.trials, args.seed_offset, r) for r in args.regimes
              for b in args.blocks]
    start = time.monotonic()
    nominal = tail.CONFIDENCE
    print(f"pWCET at {PER_HOUR:g}/h, {nominal:.0%} profile-likelihood intervals (upper end "
          f"{tail.UPPER_STRICTNESS:g}× stricter), GEV maxima (loc {LOC_US:g} µs, scale "
          f"{SCALE_US:g} µs, 1 s blocks, whole µs), {args.trials} trials per cell, seed offset "
          f"{args.seed_offset}")
    print("| xi | blocks | truth µs | given | coverage | 95 % CI | truth below | truth above | "
          "refused (why) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |", flush=True)
    failed: list[str] = []
    # Each cell's row as soon as it is done: a long run on a loaded host shows what it has.
    with ProcessPoolExecutor(args.jobs) as pool, Progress(transient=True) as bar:
        task = bar.add_task("pWCET coverage", total=len(cells))
        for (shape, blocks, trials, _, second), cell in zip(cells, pool.map(run_cell, cells),
                                                         strict=True):
            row(shape, blocks, trials, cell, failed, second)
            bar.advance(task)
    print(f"{time.monotonic() - start:.0f} s")
    for f in failed:
        print(f"coverage below {nominal - TOLERANCE:.0%}: {f}", file=sys.stderr)
    return 1 if failed else 0


def row(shape: float, blocks: int, trials: int, cell: list[Trial], failed: list[str],
        second_us: float | None = None) -> None:
    nominal = tail.CONFIDENCE
    given = [t for t in cell if t.given]
    covered = sum(not t.below and not t.above for t in given)
    why = Counter(t.why_not for t in cell if not t.given)
    refused = ", ".join(f"{n} {w}" for w, n in why.most_common()) or "0"
    if given:
        lo, hi = clopper_pearson(covered, len(given))
        rate = covered / len(given)
        if rate < nominal - TOLERANCE and second_us is None:
            failed.append(f"xi {shape:g}, {blocks} blocks: {rate:.1%}")
        numbers = (f"{rate:.1%} | {lo:.1%}–{hi:.1%} | "
                   f"{sum(t.below for t in given) / len(given):.1%} | "
                   f"{sum(t.above for t in given) / len(given):.1%}")
    else:
        numbers = "— | — | — | —"
    label = (f"{shape:g}" if second_us is None else
             f"0 + {100 * SECOND_SHARE:g} % at {second_us:g} µs")
    print(f"| {label} | {blocks} | {truth(shape, second_us):.4g} | {len(given)}/{trials} | "
          f"{numbers} | {refused} |", flush=True)


if __name__ == "__main__":
    sys.exit(main())
