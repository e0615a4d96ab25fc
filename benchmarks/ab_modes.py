"""The A/B rule against boot-to-boot latency modes, by simulation (issue 36, item 2).

Each simulated round is what a board gives the rule: 4 threads × 40 one-second blocks whose
maxima are GEV (ξ = 0.3, location 50 µs, scale 5 µs) times the round's factor, summarised by the
primary metric, the 90th percentile of the block maxima (``ab.block_p90``'s order statistic).
The round factor is either log-normal (CV 2/5/10/20 %: normal logs) or two boot modes: 30 % of
boots ×1.11, ×1.23 or ×1.51 (round CV about 5/10/20 %). The plan is the rpi5 gate's: 8 rounds a
side, two keys at alpha 1 % (0.5 % a key), margin 10 %. Each candidate rule replays the same
paths (``rtgate.stats.oc.decide_paths``: the rule's own looks, vectorised):

- rule 2: Pocock-type spending, worse/better from 3 rounds a side, no floor (until 2026-11-28);
- min5: the same, but no worse or better before 5 rounds a side;
- OBF: O'Brien-Fleming-type spending from 3 rounds a side;
- each "+ floor": the standard error never below the bank's pooled log-sd × √(2/n), the bank
  being 24 rounds of the same board (simulated per trial, as `rtgate calibrate` records one).

Per cell: the A/A false-alarm rate per key (worse or better) with its Clopper–Pearson 95 %
interval over 10 000 trials, P(same | unchanged), and the power at +20 % (2000 trials). The
acceptance: the interval's upper end at most 1.2 × nominal (0.6 %) in every cell.

    python benchmarks/ab_modes.py [--trials 10000] [--power-trials 2000] [--out FILE]

Vectorised numpy, about a minute per candidate set on 2 shared cores; `make bench-ab-modes`.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rtgate.stats import ab, oc  # noqa: E402

PLANNED, KEY_ALPHA, MARGIN = 8, 0.005, 0.10
THREADS, BLOCKS, XI, LOC, SCALE = 4, 40, 0.3, 50.0, 5.0
BANK = 24
RANK = math.ceil(ab.BLOCK_QUANTILE * THREADS * BLOCKS) - 1  # inverted_cdf's order statistic
CELLS = {"normal CV 2%": ("lognormal", 0.02), "normal CV 5%": ("lognormal", 0.05),
         "normal CV 10%": ("lognormal", 0.10), "normal CV 20%": ("lognormal", 0.20),
         "modes 30% x1.11": ("modes", 1.11), "modes 30% x1.23": ("modes", 1.23),
         "modes 30% x1.51": ("modes", 1.51)}
CANDIDATES = {
    "rule 2": ab.Design(KEY_ALPHA, spending=ab.POCOCK),
    "min5": ab.Design(KEY_ALPHA, spending=ab.POCOCK, first_decisive=5),
    "OBF": ab.Design(KEY_ALPHA, spending=ab.OBRIEN_FLEMING),
    "OBF + min5": ab.Design(KEY_ALPHA, spending=ab.OBRIEN_FLEMING, first_decisive=5),
}
FLOORED = ("rule 2", "min5", "OBF", "OBF + min5")
CHUNK = 1000
SEED = 20261128


def round_logs(rng: np.random.Generator, shape: tuple[int, ...], kind: str, value: float
               ) -> np.ndarray:
    """log of each round's block-max p90 (µs), rounds of the given shape."""
    u = rng.random((*shape, THREADS * BLOCKS))
    maxima = LOC + SCALE * ((-np.log(u)) ** -XI - 1) / XI
    p90 = np.partition(maxima, RANK, axis=-1)[..., RANK]
    if kind == "lognormal":
        factor = rng.lognormal(0.0, oc.log_sd_of_cv(value), shape)
    else:
        factor = np.where(rng.random(shape) < 0.3, value, 1.0)
    return np.log(np.round(p90 * factor))  # whole µs, as the histograms count


def cell(kind: str, value: float, effect: float, trials: int, seed: int) -> dict[str, dict]:
    rng = np.random.default_rng(seed)
    counts = {name: np.zeros(4, dtype=int) for name in [*CANDIDATES, *(f"{c} + floor"
                                                                        for c in FLOORED)]}
    for start in range(0, trials, CHUNK):
        n = min(CHUNK, trials - start)
        a = round_logs(rng, (n, PLANNED), kind, value)
        b = round_logs(rng, (n, PLANNED), kind, value) + math.log1p(effect)
        bank = round_logs(rng, (n, BANK), kind, value).std(axis=1, ddof=1)
        for name, design in CANDIDATES.items():
            outcome, _ = oc.decide_paths(a, b, design, math.log1p(MARGIN))
            counts[name] += np.bincount(outcome, minlength=4)
            if name in FLOORED:
                outcome, _ = oc.decide_paths(a, b, design, math.log1p(MARGIN), floor_sd=bank)
                counts[f"{name} + floor"] += np.bincount(outcome, minlength=4)
    return {name: {"trials": trials, "same": int(c[oc.SAME]), "worse": int(c[oc.WORSE]),
                   "better": int(c[oc.BETTER]), "unknown": int(c[oc.UNKNOWN])}
            for name, c in counts.items()}


def clopper_pearson(x: int, n: int) -> tuple[float, float]:
    low = 0.0 if x == 0 else float(stats.beta.ppf(0.025, x, n - x + 1))
    high = 1.0 if x == n else float(stats.beta.ppf(0.975, x + 1, n - x))
    return low, high


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=10_000)
    ap.add_argument("--power-trials", type=int, default=2000)
    ap.add_argument("--out", type=Path, default=Path("out/bench/ab_modes.json"))
    args = ap.parse_args()
    table: dict[str, dict] = {}
    for i, (label, (kind, value)) in enumerate(CELLS.items()):
        aa = cell(kind, value, 0.0, args.trials, SEED + i)
        power = cell(kind, value, 0.20, args.power_trials, SEED + 100 + i)
        table[label] = {"aa": aa, "power_20": power}
        print(f"== {label}", flush=True)
        for name, c in aa.items():
            alarms = c["worse"] + c["better"]
            low, high = clopper_pearson(alarms, c["trials"])
            ok = "ok" if high <= 1.2 * KEY_ALPHA else "FAILS"
            p = power[name]
            print(f"  {name:<20} false alarms {100 * alarms / c['trials']:.2f} % "
                  f"[{100 * low:.2f}, {100 * high:.2f}] {ok:<5}  same|unchanged "
                  f"{100 * c['same'] / c['trials']:.1f} %  power +20 % "
                  f"{100 * p['worse'] / p['trials']:.1f} %", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"plan": {"planned": PLANNED, "key_alpha": KEY_ALPHA,
                                             "margin": MARGIN, "bank": BANK},
                                    "cells": table}, indent=1) + "\n")
    failing = [name for name in table["normal CV 2%"]["aa"]
               if any(clopper_pearson(t["aa"][name]["worse"] + t["aa"][name]["better"],
                                      t["aa"][name]["trials"])[1] > 1.2 * KEY_ALPHA
                      for t in table.values())]
    print(f"candidates failing the acceptance (CP upper > {120 * KEY_ALPHA:.2f} % somewhere): "
          f"{', '.join(failing) or 'none'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
