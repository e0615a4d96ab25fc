"""Benchmark: the pWCET's fit checks (rtgate.stats.tail, since 2026-11-28): how often they refuse
true GEV maxima (their false refusals) and how often they catch two-regime maxima.

The series are benchmarks/pwcet_coverage.py's (GEV maxima of shape xi, location 50 µs, scale
5 µs, cut to whole µs; two-regime: Gumbel maxima with 10 % of blocks from a second regime at 75
or 100 µs). Each gets the gate's ML fit, its upper-tail Anderson-Darling AU² (refused above
``tail.MAX_UPPER_AD``) and its shape's stability across thresholds (the GPD on the top quarter,
refused above ``tail.MAX_SHAPE_DRIFT``); each check's refusals and either's (what the gate
refuses) are counted; degenerate fits (xi at most -1, no AU²) apart. Fast: one fit per series,
no interval. Clopper-Pearson 95 % intervals.

    python benchmarks/pwcet_fit_check.py [--series 600] [--jobs 2]
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pwcet_coverage import clopper_pearson, maxima  # noqa: E402

from rtgate.stats import tail  # noqa: E402

SHAPES = (-0.2, -0.1, 0.0, 0.2, 0.4)
REGIMES = (75.0, 100.0)
BLOCKS = (50, 130, 300, 500)
SEED = 30_000_000

Cell = tuple[float, float | None, int, int]


def run_cell(cell: Cell) -> tuple[int, int, int, int]:
    """(refused by AU², by stability, by either, degenerate) over the cell's series."""
    shape, second, blocks, series = cell
    upper = stable = refused = degenerate = 0
    base = SEED + blocks * 10_000 + int(100 * (shape + 1)) * 100 + int(second or 0) * 1000
    for k in range(series):
        x = tail.continuous(maxima(shape, second, blocks, base + k * 7_919))
        with np.errstate(all="ignore"):
            best = tail._gev_fit(x)
            fit = tail._upper_fit(x, best.x)
            stability = tail._stability(x, float(best.x[2]))
        if "degenerate" in fit.detail:
            degenerate += 1
        upper += not fit.ok
        stable += not stability.ok
        refused += not (fit.ok and stability.ok)
    return upper, stable, refused, degenerate


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--series", type=int, default=600, help="per cell (default 600)")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    cells: list[Cell] = [(s, None, b, args.series) for s in SHAPES for b in BLOCKS]
    cells += [(0.0, r, b, args.series) for r in REGIMES for b in BLOCKS]
    start = time.monotonic()
    print(f"upper-tail Anderson-Darling refused above AU² {tail.MAX_UPPER_AD:g}; stability "
          f"across thresholds (top {tail.STABILITY_FRACTION:.0%}, at least "
          f"{tail.MIN_STABILITY_EXCESSES} excesses) refused above {tail.MAX_SHAPE_DRIFT:g}; "
          f"{args.series} series a cell, seed {SEED}")
    print("| maxima | blocks | AU² | stability | either (refused) | 95 % CI | "
          "degenerate fits (no AU²) |")
    print("| --- | --- | --- | --- | --- | --- | --- |", flush=True)
    with ProcessPoolExecutor(args.jobs) as pool:
        for (shape, second, blocks, n), (upper, stable, refused, degenerate) in zip(
                cells, pool.map(run_cell, cells), strict=True):
            low, high = clopper_pearson(refused, n)
            label = (f"GEV xi {shape:g}" if second is None else
                     f"two regimes: 10 % at {second:g} µs")
            print(f"| {label} | {blocks} | {upper} | {stable} | {refused}/{n} = "
                  f"{100 * refused / n:.1f} % | {100 * low:.1f}–{100 * high:.1f} % | "
                  f"{degenerate} |", flush=True)
    print(f"{time.monotonic() - start:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
