"""Benchmark (b): does the harness disturb what it measures?

Three arms with the same cyclictest command line (scenario idle) and duration, interleaved in
rounds so that drifting background load falls on all of them alike:

* bare: cyclictest without -v, its stdout discarded (what a user would run);
* reduced: the same with -v, its stream piped into the block-maxima reducer (awk), as every
  board runs it;
* harness: ``rtgate bench --scenario idle`` (reducer, progress bar, thermal sampler, load
  polling).

All results go through the same parser. Printed: per arm the avg and p99 latency averaged over
the rounds, and the ratios reduced / bare and harness / bare with a 95 % interval (Student t
over the per-round ratios: the round is the replicate, not the sample). A ratio whose interval
holds 1.0 and lies within 1 ± 0.02 means the cost is not measurable at 2 %.

    python benchmarks/harness_overhead.py [--seconds N] [--rounds R]
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from scipy import stats

from rtgate.cyclictest.command import CyclictestCommand
from rtgate.cyclictest.parse import parse
from rtgate.cyclictest.version import detect
from rtgate.harness.loads import free_port
from rtgate.harness.plan import Params, make_plan, timeout_for
from rtgate.harness.scenario import load_scenario
from rtgate.result import Result, load_result

ROOT = Path(__file__).resolve().parents[1]
GOAL = 0.02


def _command(seconds: int, work: Path) -> CyclictestCommand:
    work.mkdir(parents=True)
    scenario, source = load_scenario("idle")
    params = Params(cpus=os.cpu_count() or 1, port=free_port(), tmpdir=str(work),
                    scale=scenario.scale, timeout_s=timeout_for(scenario, seconds))
    return make_plan(scenario, source, detect(), duration_s=seconds, params=params,
                     outdir=str(work)).cyclictest


def _files(cmd: CyclictestCommand) -> list[Path]:
    return [Path(p) for p in (cmd.json_path, cmd.histfile) if p is not None]


def bare(seconds: int, work: Path) -> Result:
    cmd = _command(seconds, work)
    subprocess.run([a for a in cmd.argv if a != "-v"], check=True, stdout=subprocess.DEVNULL)
    return parse(_files(cmd), board="local", scenario="idle", run_id="bare")


def reduced(seconds: int, work: Path) -> Result:
    cmd = _command(seconds, work)
    subprocess.run(["sh", "-c", f"{shlex.join(cmd.argv)} | {shlex.join(cmd.reducer())}"],
                   check=True, stdout=subprocess.DEVNULL)
    assert cmd.blocks is not None
    return parse([*_files(cmd), Path(cmd.blocks)], board="local", scenario="idle",
                 run_id="reduced")


def harness(seconds: int, work: Path) -> Result:
    subprocess.run([sys.executable, "-m", "rtgate", "bench", "--scenario", "idle",
                    "--duration", str(seconds), "--out", str(work)],
                   check=True, cwd=ROOT, stderr=subprocess.DEVNULL)
    return load_result(work / "result.json")


def _metrics(r: Result) -> dict[str, float]:
    p99 = r.totals.p99.value_us if r.totals.p99 is not None else float("nan")
    return {"avg_us": r.totals.avg_us or float("nan"), "p99_us": p99}


def _interval(ratios: list[float]) -> tuple[float, float, float]:
    """Mean of the per-round ratios and its 95 % Student t interval."""
    mean = statistics.fmean(ratios)
    if len(ratios) < 2:
        return mean, float("nan"), float("nan")
    half = stats.t.ppf(0.975, len(ratios) - 1) * statistics.stdev(ratios) / len(ratios) ** 0.5
    return mean, mean - half, mean + half


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=10, help="duration of each run (default 10)")
    ap.add_argument("--rounds", type=int, default=5, help="rounds of the three arms (default 5)")
    args = ap.parse_args()
    arms = {"bare": bare, "reduced": reduced, "harness": harness}
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in arms}
    with tempfile.TemporaryDirectory(prefix="rtgate-overhead-") as tmp:
        for i in range(args.rounds):
            # Rotate the order: no arm always runs first after a pause, or last.
            order = list(arms)[i % 3:] + list(arms)[: i % 3]
            for name in order:
                result = arms[name](args.seconds, Path(tmp) / f"{name}-{i}")
                if result.status != "complete":
                    print(f"harness_overhead: {name} run {i} is {result.status}: "
                          f"{'; '.join(result.reasons)}", file=sys.stderr)
                    return 1
                runs[name].append(_metrics(result))
    print(f"cyclictest, scenario idle, {args.seconds} s per run, {args.rounds} rounds "
          f"of bare / reduced (-v | awk) / harness (rtgate bench), interleaved")
    print(f"{'':8}{'bare':>9}{'reduced':>9}{'harness':>9}"
          f"{'reduced/bare [95 % CI]':>28}{'harness/bare [95 % CI]':>28}")
    for metric in ("avg_us", "p99_us"):
        means = {n: statistics.fmean(r[metric] for r in runs[n]) for n in arms}
        cells = []
        for arm in ("reduced", "harness"):
            m, lo, hi = _interval([a[metric] / b[metric]
                                   for a, b in zip(runs[arm], runs["bare"], strict=True)])
            cells.append(f"{m:.3f} [{lo:.3f}, {hi:.3f}]")
        print(f"{metric:8}{means['bare']:>9.2f}{means['reduced']:>9.2f}{means['harness']:>9.2f}"
              f"{cells[0]:>28}{cells[1]:>28}")
    print(f"goal: ratios within 1 ± {GOAL:g} (an interval that is wider says the noise "
          "of this machine, not the harness, decides)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
