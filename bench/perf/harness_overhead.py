"""Benchmark (b): does the harness disturb what it measures?

Runs the same cyclictest command line twice for the same duration: bare (straight from the
shell's point of view) and inside `rtgate bench --scenario idle` (progress bar, thermal sampler,
load polling). Both results go through the same parser, and the ratios harness / bare of the
average and p99 latency are printed: about 1.0 means the harness costs nothing measurable.

    python bench/perf/harness_overhead.py [--seconds N]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from rtgate.bench.loads import free_port
from rtgate.bench.plan import Params, make_plan, timeout_for
from rtgate.bench.scenario import load_scenario
from rtgate.cyclictest.parse import parse
from rtgate.cyclictest.version import detect
from rtgate.result import Result, load_result

ROOT = Path(__file__).resolve().parent.parent.parent


def bare(seconds: int, work: Path) -> tuple[Result, list[str]]:
    work.mkdir(parents=True)
    scenario, source = load_scenario("idle")
    params = Params(cpus=os.cpu_count() or 1, port=free_port(), tmpdir=str(work),
                    scale=scenario.scale, timeout_s=timeout_for(scenario, seconds))
    plan = make_plan(scenario, source, detect(), duration_s=seconds, params=params,
                     outdir=str(work))
    cmd = plan.cyclictest
    subprocess.run(cmd.argv, check=True, stdout=subprocess.DEVNULL)
    files = [Path(p) for p in (cmd.json_path, cmd.histfile) if p is not None]
    return parse(files, board="local", scenario="idle", run_id="bare"), cmd.argv


def harness(seconds: int, work: Path) -> Result:
    subprocess.run([sys.executable, "-m", "rtgate", "bench", "--scenario", "idle",
                    "--duration", str(seconds), "--out", str(work)],
                   check=True, cwd=ROOT, stderr=subprocess.DEVNULL)
    return load_result(work / "result.json")


def _ratio(harnessed: float | None, plain: float | None) -> str:
    if harnessed is None or plain is None or plain == 0:
        return "n/a"
    return f"{harnessed / plain:.2f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=10, help="duration of each run (default 10)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="rtgate-overhead-") as tmp:
        plain, argv = bare(args.seconds, Path(tmp) / "bare")
        harnessed = harness(args.seconds, Path(tmp) / "harness")
    if harnessed.tool.cmdline is None or harnessed.tool.cmdline.split()[1:-3] != argv[1:-3]:
        print("harness_overhead: the two runs used different cyclictest options", file=sys.stderr)
        return 1
    print(f"cyclictest {' '.join(argv[1:-3])}, {args.seconds} s each, idle")
    print(f"{'':10}{'bare':>10}{'harness':>10}{'ratio':>8}")
    for label, p, h in [
        ("samples", plain.totals.samples, harnessed.totals.samples),
        ("avg_us", plain.totals.avg_us, harnessed.totals.avg_us),
        ("p99_us", plain.totals.p99 and plain.totals.p99.value_us,
         harnessed.totals.p99 and harnessed.totals.p99.value_us),
        ("max_us", plain.totals.max_us, harnessed.totals.max_us),
    ]:
        print(f"{label:10}{p or 0:>10.2f}{h or 0:>10.2f}{_ratio(h, p):>8}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
