"""Benchmark: the pWCET's fit checks (rtgate.stats.tail, since 2026-11-28): how often they refuse
true GEV maxima (their false refusals) and how often they catch two-regime maxima.

The series are benchmarks/pwcet_coverage.py's (GEV maxima of shape xi, location 50 µs, scale
5 µs, cut to whole µs; two-regime: Gumbel maxima with 10 % of blocks from a second regime at 75
or 100 µs). Each gets the gate's ML fit, its upper-tail Anderson-Darling AU² and its shape's
stability across thresholds (the GPD on the top quarter), each against its cut for the number of
blocks (``tail.fit_cuts``, the table benchmarks/pwcet_fit_cuts.py made on other seeds); each
check's refusals and either's (what the gate refuses) are counted; degenerate fits (xi at most
-1, no AU²) apart. Below the table's first size the gate refuses every series (not calibrated):
not simulated. Fast: one fit per series, no interval. Clopper-Pearson 95 % intervals, per cell
and pooled over the GEV cells; exit 1 when the pooled false refusal exceeds
``tail.ALPHA_ASSUMPTION`` (what the module claims for the two checks together).

    python benchmarks/pwcet_fit_check.py [--series 600] [--jobs 2] [--seed 50000000]
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

SHAPES = (-0.2, -0.1, 0.0, 0.2, 0.4, 0.5)
REGIMES = (75.0, 100.0)
BLOCKS = (120, 130, 300, 500)
SEED = 50_000_000  # 30 000 000 was 2026-11-28's run; the cuts' table was made from 40 000 000

Cell = tuple[float, float | None, int, int, int]


def run_cell(cell: Cell) -> tuple[int, int, int, int]:
    """(refused by AU², by stability, by either, degenerate) over the cell's series."""
    shape, second, blocks, series, seed = cell
    cuts = tail.fit_cuts(blocks)
    assert cuts is not None, f"{blocks} blocks: below the calibrated sizes"
    upper = stable = refused = degenerate = 0
    base = seed + blocks * 10_000 + int(100 * (shape + 1)) * 100 + int(second or 0) * 1000
    for k in range(series):
        x = tail.continuous(maxima(shape, second, blocks, base + k * 7_919))
        with np.errstate(all="ignore"):
            best = tail._gev_fit(x)
            fit = tail._upper_fit(x, best.x, cuts.max_upper_ad)
            stability = tail._stability(x, float(best.x[2]), cuts.max_shape_drift)
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
    ap.add_argument("--seed", type=int, default=SEED)
    args = ap.parse_args()
    cells: list[Cell] = [(s, None, b, args.series, args.seed) for s in SHAPES for b in BLOCKS]
    cells += [(0.0, r, b, args.series, args.seed) for r in REGIMES for b in BLOCKS]
    start = time.monotonic()
    cuts = ", ".join(f"{c.blocks}: {c.max_upper_ad:.3g} / {c.max_shape_drift:.3g}"
                     for c in tail.fit_cuts_table())
    print(f"cuts per number of blocks (AU² / drift), {tail.FIT_CUTS_FILE.name}: {cuts}; "
          f"{args.series} series a cell, seed {args.seed}")
    print("| maxima | blocks | AU² | stability | either (refused) | 95 % CI | "
          "degenerate fits (no AU²) |")
    print("| --- | --- | --- | --- | --- | --- | --- |", flush=True)
    null = [0, 0]
    with ProcessPoolExecutor(args.jobs) as pool:
        for (shape, second, blocks, n, _), (upper, stable, refused, degenerate) in zip(
                cells, pool.map(run_cell, cells), strict=True):
            low, high = clopper_pearson(refused, n)
            label = (f"GEV xi {shape:g}" if second is None else
                     f"two regimes: 10 % at {second:g} µs")
            if second is None:
                null = [null[0] + refused, null[1] + n]
            print(f"| {label} | {blocks} | {upper} | {stable} | {refused}/{n} = "
                  f"{100 * refused / n:.1f} % | {100 * low:.1f}–{100 * high:.1f} % | "
                  f"{degenerate} |", flush=True)
    low, high = clopper_pearson(*null)
    print(f"true GEV, all cells: {null[0]}/{null[1]} = {100 * null[0] / null[1]:.2f} % refused "
          f"[{100 * low:.2f}, {100 * high:.2f}] (claim: at most "
          f"{100 * tail.ALPHA_ASSUMPTION:g} % for the two checks together)")
    print(f"{time.monotonic() - start:.0f} s")
    return 0 if null[0] / null[1] <= tail.ALPHA_ASSUMPTION else 1


if __name__ == "__main__":
    raise SystemExit(main())
