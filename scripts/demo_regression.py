#!/usr/bin/env python3
"""`make demo-regression`: the A/B gate refusing a kernel known to be slower (issue 36, item 8).

A is main's kernel for the virtual Pi (`kernel/patches/series`, stock); B is the same plus the
planted latency (`tests/data/bisect/0005-rtgate-planted-latency-on.patch`: a kthread that busy-
waits 1 s with interrupts off every ~3 s, on by default). Both are built with `rtgate kernel
build` (cache hits after the first time; ccache makes B's first build minutes, not the 20 of a
cold kernel), then `rtgate ab` measures interleaved rounds on `qemu-arm64` under the gate's own
budgets and plan (the board's calibration record) until it decides. What a maintainer wants to
see before trusting the gate is printed at the end: the verdict, the effect with its interval
and the stall count of each side.

    python scripts/demo_regression.py [--out out/demo-regression] [--plan-only]

--plan-only plans both kernel builds and the A/B run (`rtgate kernel plan`, `rtgate ab
--plan-only`) without building or booting anything: what the suite runs. Exit 0 when the gate
refused the planted kernel (rtgate ab's exit 1, outcome worse) or the plan is valid; else
rtgate's own exit code (4: undecided at the cap, 3: the infrastructure failed).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rtgate.kernel.patches import read_series, write_series  # noqa: E402

BOARD, FLAVOR, SCENARIO = "qemu-arm64", "stock", "idle"
PLANTED = ROOT / "tests" / "data" / "bisect" / "0005-rtgate-planted-latency-on.patch"
SERIES = ROOT / "kernel" / "patches" / "series"
ROUND = "5s"
CAP = "30m"
REFUSED = 1


def rtgate(*args: str) -> int:
    print("$ rtgate " + " ".join(args), flush=True)
    return subprocess.run([sys.executable, "-m", "rtgate", *args], cwd=ROOT).returncode


def summary(ab_json: Path) -> list[str]:
    doc = json.loads(ab_json.read_text())
    lines = [f"verdict: {doc['outcome']} (exit {doc['exit']})"
             + (f": {doc['why']}" if doc["why"] else "")]
    for d in doc["decisions"]:
        key = f"{d['board']}/{d['flavor']}/{d['scenario']}"
        head = next((e for e in d["effects"] if e["metric"] == d["primary_metric"]), None)
        if head:
            lines.append(f"{key}: {d['outcome']} after {d['rounds']['A']}/{d['rounds']['B']} "
                         f"rounds; effect {head['metric']} ×{head['ratio']:.3g} "
                         f"[{head['low']:.3g}, {head['high']:.3g}] ({head['base_geomean_us']:.4g}"
                         f" → {head['candidate_geomean_us']:.4g} µs)")
        else:
            lines.append(f"{key}: {d['outcome']}; no effect ({'; '.join(d['reasons'])})")
        if st := d.get("stalls"):
            lines.append(f"{key}: stall blocks > {st['threshold_us']:g} µs ({st['threshold_from']})"
                         f": A {sum(st['a'])} in {len(st['a'])} rounds, B {sum(st['b'])} in "
                         f"{len(st['b'])}; permutation p {st['p']:.3g}")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "out" / "demo-regression")
    ap.add_argument("--plan-only", action="store_true")
    args = ap.parse_args()
    out = args.out.resolve()
    base = [(p.name, SERIES.parent / p.name) for p in read_series(SERIES)]
    planted = write_series(out / "planted-patches", [*base, (PLANTED.name, PLANTED)])
    sides = {"A": ("main's kernel", SERIES, out / "kernels-a"),
             "B": ("main's kernel plus the planted latency", planted, out / "kernels-b")}
    for side, (what, series, kernels) in sides.items():
        print(f"{side}: {what} ({series})", flush=True)
        build = ["--board", BOARD, "--flavor", FLAVOR, "--patches", str(series)]
        rc = (rtgate("kernel", "plan", *build) if args.plan_only else
              rtgate("kernel", "build", *build, "--out", str(kernels / FLAVOR)))
        if rc != 0:
            return rc
    ab_out = out / "ab"
    rc = rtgate("ab", "--board", BOARD, "--base", str(sides["A"][2]), "--cand",
                str(sides["B"][2]), "--flavors", FLAVOR, "--scenarios", SCENARIO,
                "--round-duration", ROUND, "--max-time", CAP, "--out", str(ab_out),
                *(["--plan-only"] if args.plan_only else []))
    if args.plan_only:
        return rc
    if not (ab_out / "ab.json").is_file():
        print(f"rtgate ab wrote no ab.json (exit {rc})", file=sys.stderr)
        return rc or 3
    print("\n".join(["", *summary(ab_out / "ab.json"), f"report: {ab_out / 'ab.md'}"]))
    if rc == REFUSED:
        print("the gate refused the planted latency: what it is for")
        return 0
    print(f"the gate did not refuse the planted latency (exit {rc})", file=sys.stderr)
    return rc or 1


if __name__ == "__main__":
    raise SystemExit(main())
