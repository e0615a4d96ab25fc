"""Do a calibration record's plan and claims hold on the board? (issue 36, item 3; simulation).

A record is made from ONE bank of 24 A/A rounds (the rpi5's first record banks 24 a flavor); its
plan (``rounds_needed``) and claims (the false-alarm rate, the power at +20 %) are then what
the gate runs and quotes. Here many banks are drawn from a known board, each is planned both
ways, and each plan is judged against the truth on that board:

- **bounds** (since 2026-11-28, ``rtgate.stats.oc.search``): the smallest plan whose bounds meet
  a false-alarm rate ≤ 1 % and power ≥ 90 % at +20 %, the bounds simulated at the one-sided
  95 % upper bound of the bank's log-sd;
- **point** (how plans were made until then): the same search at the bank's point estimate
  (as if the bank had no sampling error).

The board: rounds as ``benchmarks/ab_modes.py`` makes them (4 threads × 40 GEV(ξ 0.3) block
maxima, the block-max p90, times a log-normal round factor of CV 5 or 10 %, or 30 % of boots
×1.11 or ×1.23), the rpi5 plan's alpha (two keys at 1 %: 0.5 % a key, 3/4 of it the tail
test's), margin 10 %. The truth at a bank's plan: the rule replayed (``decide_paths``: its
looks, boundaries and floor, the floor that bank's log-sd) on 20 000 fresh A/A and +20 % runs
of the board (the truth's own simulation error: about ±0.06 points at a 0.3 % false-alarm
rate). Per cell and method: how often a plan is claimed; among the claims, how often the
true power is at least 90 % and at least the claimed bound, and the true false-alarm rate at
most the claimed bound and at most the 1 % target, and the largest true false-alarm rate among
the claims — Clopper-Pearson 95 % over the banks.

    python benchmarks/plan_bounds.py [--banks 200] [--out FILE]

About 20 minutes on 2 shared cores; `make bench-plan-bounds`.
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

from ab_modes import round_logs  # noqa: E402

from rtgate.stats import ab, oc, stalls  # noqa: E402

KEY_ALPHA, MARGIN, EFFECT, BANK, TARGET_ALPHA = 0.005, 0.10, 0.20, 24, 0.01
TAIL, STALL = KEY_ALPHA * (1 - stalls.STALL_SHARE), KEY_ALPHA * stalls.STALL_SHARE
TRUTH_TRIALS = 20_000
CHUNK = 2000
POINT_ROUNDS = 10**7  # a bank this large has no sampling error worth a bound
CELLS = {"normal CV 5%": ("lognormal", 0.05), "normal CV 10%": ("lognormal", 0.10),
         "modes 30% x1.11": ("modes", 1.11), "modes 30% x1.23": ("modes", 1.23)}
SEED = 20261128


def clopper_pearson(x: int, n: int) -> tuple[float, float]:
    if n == 0:
        return 0.0, 1.0
    ci = stats.binomtest(x, n).proportion_ci(0.95, method="exact")
    return float(ci.low), float(ci.high)


def share(x: int, n: int) -> str:
    if n == 0:
        return "— (no claim)"
    low, high = clopper_pearson(x, n)
    return f"{x}/{n} = {100 * x / n:.1f} % [{100 * low:.1f}, {100 * high:.1f}]"


def judged(paths: dict[str, np.ndarray], floor: float, planned: int) -> tuple[float, float]:
    """The true false-alarm rate (the stall test's share added, which its permutation test
    holds) and power at +20 % of the plan on this board, the floor this bank's log-sd."""
    design = ab.Design(TAIL, floor_sd=floor)
    margin = math.log1p(MARGIN)
    aa, _ = oc.decide_paths(paths["a"][:, :planned], paths["a2"][:, :planned], design, margin)
    hit, _ = oc.decide_paths(paths["a"][:, :planned], paths["b"][:, :planned], design, margin)
    alarms = np.count_nonzero((aa == oc.WORSE) | (aa == oc.BETTER)) / len(aa)
    return alarms + STALL, np.count_nonzero(hit == oc.WORSE) / len(hit)


def cell(kind: str, value: float, banks: int, seed: int) -> dict[str, dict[str, int]]:
    rng = np.random.default_rng(seed)
    shape = (CHUNK, oc.MAX_PLANNED)
    paths = {name: np.concatenate([round_logs(rng, shape, kind, value)
                                   for _ in range(TRUTH_TRIALS // CHUNK)]) + shift
             for name, shift in (("a", 0.0), ("a2", 0.0), ("b", math.log1p(EFFECT)))}
    tally: dict[str, dict[str, float]] = {
        m: dict.fromkeys(("banks", "claimed", "power_90", "power_bound", "alpha_bound",
                          "alpha_target", "alpha_max", "rounds"), 0) for m in ("bounds", "point")}
    for _ in range(banks):
        s = float(round_logs(rng, (BANK,), kind, value).std(ddof=1))
        for method, rounds in (("bounds", BANK), ("point", POINT_ROUNDS)):
            t = tally[method]
            t["banks"] += 1
            found = oc.search(s, rounds, TAIL, MARGIN, effect=EFFECT, stall_alpha=STALL)
            if found.needed is None:
                continue
            alpha, power = judged(paths, s, found.needed)
            t["claimed"] += 1
            t["rounds"] += found.needed
            t["power_90"] += int(power >= 0.9)
            t["power_bound"] += int(power >= found.at.power_low)
            t["alpha_bound"] += int(alpha <= found.at.false_alarm_high)
            t["alpha_target"] += int(alpha <= TARGET_ALPHA)
            t["alpha_max"] = max(t["alpha_max"], alpha)
    return tally


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--banks", type=int, default=200)
    ap.add_argument("--out", type=Path, default=Path("out/bench/plan_bounds.json"))
    args = ap.parse_args()
    print(f"plan_bounds: {args.banks} banks of {BANK} rounds a cell, alpha {KEY_ALPHA:g} a key "
          f"(tail {TAIL:g}), margin {100 * MARGIN:g} %, targets alpha <= 1 %, power >= 90 % at "
          f"+{100 * EFFECT:g} %; truth on {TRUTH_TRIALS} runs a plan", flush=True)
    table = {}
    for i, (label, (kind, value)) in enumerate(CELLS.items()):
        table[label] = tally = cell(kind, value, args.banks, SEED + i)
        print(f"== {label}", flush=True)
        for method, t in tally.items():
            n = int(t["claimed"])
            mean = f"{t['rounds'] / n:.1f}" if n else "—"
            print(f"  {method:<6} plan claimed {share(n, int(t['banks']))}, mean {mean} rounds a "
                  f"side; true power >= 90 %: {share(int(t['power_90']), n)}; >= its bound: "
                  f"{share(int(t['power_bound']), n)}; true alpha <= its bound: "
                  f"{share(int(t['alpha_bound']), n)}, <= 1 %: "
                  f"{share(int(t['alpha_target']), n)}, largest {100 * t['alpha_max']:.3f} %",
                  flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"key_alpha": KEY_ALPHA, "margin": MARGIN, "bank": BANK,
                                    "banks": args.banks, "cells": table}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
