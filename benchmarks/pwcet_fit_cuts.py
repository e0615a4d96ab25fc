"""Calibration: the cuts of the pWCET's two upper-tail fit checks (rtgate.stats.tail), per number
of blocks, from null simulation; writes rtgate/stats/pwcet-fit-cuts.json (issue 36).

True GEV block maxima (benchmarks/pwcet_coverage.py's: location 50 µs, scale 5 µs, shape xi, cut
to whole µs, then spread over their µs as the gate does) of each block count and shape in the
grid get the gate's ML fit, the upper-tail Anderson-Darling AU² against it and the shape drift
(xi_GEV - xi_top)·√k against a GPD on the top quarter. Per block count, each check's cut is the
largest over the shapes below ``tail.MAX_SHAPE`` of its null (1 - share) order statistic: at
most ``share`` of each cell's series lie above it. At xi = MAX_SHAPE the ML fit of a few series
runs away (xi far above it, AU² and drift in the hundreds at 1000 blocks): series the gate's
shape check refuses before these checks. Those cells are kept in the file, not cut on; how the
cuts do there is measured by benchmarks/pwcet_fit_check.py. The two checks share ``tail.ALPHA_ASSUMPTION`` (half each), so a
true GEV series of a tabulated size and shape is refused by either at most about that often.
Every cell's quantiles at both levels are kept in the file, beside the cuts, so a reader (and
tests/unit/test_stats_tail.py) can re-derive the cuts. These are exploration series: the cuts'
false refusals and power are measured on other seeds by benchmarks/pwcet_fit_check.py.

    python benchmarks/pwcet_fit_cuts.py [--series 1000] [--jobs 2] [--out PATH]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
from rich.progress import Progress

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pwcet_coverage import maxima  # noqa: E402

from rtgate.stats import tail  # noqa: E402

BLOCKS = (120, 150, 200, 300, 500, 1000)
SHAPES = (-0.2, 0.0, 0.2, 0.35, 0.5)
SEED = 40_000_000
LEVELS = (0.005, 0.01)  # shares of the null above the cut kept in the file


def statistics(cell: tuple[int, float, int]) -> tuple[list[float], list[float]]:
    """AU² (0 on a degenerate fit, which the gate does not test) and the drift of each series."""
    blocks, shape, series = cell
    au2, drift = [], []
    for i in range(series):
        seed = [SEED, blocks, round(1000 * (shape + 1)), i]
        x = tail.continuous(maxima(shape, None, blocks, seed))  # type: ignore[arg-type]
        with np.errstate(all="ignore"):
            best = tail._gev_fit(x)
            au2.append(0.0 if math.isnan(ad := tail.upper_ad(x, best.x)) else ad)
            drift.append(tail.shape_drift(x, float(best.x[2])))
    return au2, drift


def above(values: list[float], share: float) -> float:
    """The order statistic with at most ``share`` of the values strictly above it."""
    ordered = sorted(values)
    return ordered[math.ceil((1 - share) * len(ordered)) - 1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--series", type=int, default=1000, help="per cell (default 1000)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", type=Path, default=Path(tail.FIT_CUTS_FILE))
    args = ap.parse_args()
    share = tail.ALPHA_ASSUMPTION / 2
    cells = [(b, s, args.series) for b in BLOCKS for s in SHAPES]
    start = time.monotonic()
    rows = []
    with ProcessPoolExecutor(args.jobs) as pool, Progress() as progress:
        task = progress.add_task("null series", total=len(cells))
        for (blocks, shape, _), (au2, drift) in zip(cells, pool.map(statistics, cells),
                                                   strict=True):
            rows.append({"blocks": blocks, "xi": shape,
                         "upper_ad": {f"{q:g}": round(above(au2, q), 4) for q in LEVELS},
                         "shape_drift": {f"{q:g}": round(above(drift, q), 4) for q in LEVELS}})
            progress.advance(task)
    cuts = [{"blocks": b} | {key: max(r[stat][f"{share:g}"] for r in rows
                                      if r["blocks"] == b and r["xi"] < tail.MAX_SHAPE)
                             for key, stat in (("max_upper_ad", "upper_ad"),
                                               ("max_shape_drift", "shape_drift"))}
            for b in BLOCKS]
    doc = {"made": dt.date.today().isoformat(),
           "how": (f"python benchmarks/pwcet_fit_cuts.py --series {args.series} (make "
                   "bench-pwcet-cuts): true GEV maxima (location 50 µs, scale 5 µs, whole µs) "
                   f"per block count and shape xi, seed {SEED}; each cut the largest over the "
                   f"shapes below {tail.MAX_SHAPE:g} of the null's order statistic with at most "
                   f"{share:g} above it (at xi {tail.MAX_SHAPE:g} the ML fit of some series runs "
                   "away, xi far above it: the shape check refuses those before these checks; "
                   "kept as data)"),
           "series_per_cell": args.series, "share_per_check": share, "cuts": cuts,
           "cells": rows}
    args.out.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print("| blocks | AU² cut | drift cut |\n| --- | --- | --- |")
    for c in cuts:
        print(f"| {c['blocks']} | {c['max_upper_ad']:.3f} | {c['max_shape_drift']:.2f} |")
    print(f"{len(cells)} cells, {args.series} series each; {time.monotonic() - start:.0f} s; "
          f"written {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
