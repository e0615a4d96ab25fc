"""Benchmark: the A/B gate's false-alarm rate and detection rate, calibrated by running it.

Each trial is one whole `rtgate ab` run through the real CLI, exactly as the gate runs it
(interleaved rounds, sequential looks with alpha spending, budgets per round, the time cap):

* A/A: the same kernel against itself. On `local` that is its running kernel; on a kernel board
  (qemu-arm64) --kernels DIR is both --base and --cand. *Worse* (or a candidate round over its
  budget: exit 1) is a false alarm, and so is *better* (exit 0, but as wrong as a false *worse*:
  the rule holds both at alpha/2); *same* and *undecided at the cap* (exit 4) are not.
* A/B: a known injected effect. On `local`, B runs the scenarios of --cand-scenario-dir
  (default tests/data/ab/scenario: `idle` plus a 20 % SCHED_FIFO 99 stress-ng load); on a kernel
  board, --cand-kernels (e.g. the planted-latency kernel; --build-kernels DIR builds both sides:
  the project's series, and the same plus the planted latency on by default: 1 s of interrupts
  off every 2 s, or --planted-length-us for a moderate effect). Exit 1 is a detection. With
  --thresholds benchmarks/ab-test-alone.thresholds.yml no planted stall can fail a budget, so a
  detection is the A/B test's alone.

A trial whose rounds the lab could not measure or that came out incomplete (exit 3) is not a
clean trial: it is counted and reported, never as a pass. A/A and A/B trials are interleaved
(in proportion to their counts) so drifting background load falls on both. Every trial is
appended to --log (JSON lines: settings, outcome, exit, time, rounds, the load average before
and after) and the log is resumed: a rerun with the same settings only adds the trials still
missing.

Printed: the false-alarm rate with its exact (Clopper-Pearson) 95 % interval, two-sided and the
one-sided upper bound (0 alarms in 59 clean trials put that bound below 5 %); the detection
rate with its interval; the median time to a decision (decided trials) and the rounds used;
the load average the trials ran under.

    python benchmarks/ab_calibration.py [--aa N] [--ab N] [--round-duration 2s] [--max-time 60s]
           [--board B --flavors F (--kernels DIR --cand-kernels DIR | --build-kernels DIR
            [--planted-length-us US])]
           [--planned-rounds N] [--thresholds FILE]
           [--log out/bench/ab_calibration.jsonl] [--summary-only]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from scipy import stats

from rtgate.board.spec import load_target_board
from rtgate.errors import InputError
from rtgate.kernel.patches import read_series, write_series

ROOT = Path(__file__).resolve().parents[1]
PLANTED = ROOT / "tests" / "data" / "bisect" / "0005-rtgate-planted-latency-on.patch"
PLANTED_LENGTH = "+static unsigned int length_us = {};"
PLANTED_LENGTH_US = 1000000
ALARM_EXIT = 1
INCOMPLETE_EXITS = {2, 3}


def settings(args: argparse.Namespace) -> dict[str, Any]:
    return {"board": args.board, "scenario": args.scenario, "flavors": args.flavors,
            "round_duration": args.round_duration, "max_time": args.max_time,
            "min_effect_pct": args.min_effect_pct, "alpha": args.alpha,
            "planned_rounds": args.planned_rounds,
            "thresholds": str(args.thresholds) if args.thresholds else None,
            "kernels": str(args.kernels) if args.kernels else None,
            "cand_kernels": str(args.cand_kernels) if args.cand_kernels else None,
            "cand_scenario_dir": str(args.cand_scenario_dir),
            "planted_length_us": args.planted_length_us}


def command(args: argparse.Namespace, kind: str, out: Path) -> list[str]:
    cmd = [sys.executable, "-m", "rtgate", "ab", "--board", args.board, "--scenarios",
           args.scenario, "--round-duration", args.round_duration, "--max-time", args.max_time,
           "--min-effect-pct", str(args.min_effect_pct), "--alpha", str(args.alpha),
           "--out", str(out)]
    if args.flavors:
        cmd += ["--flavors", args.flavors]
    if args.planned_rounds:
        cmd += ["--planned-rounds", str(args.planned_rounds)]
    if args.thresholds:
        cmd += ["--thresholds", str(args.thresholds)]
    if args.kernels:  # a kernel board: A/A boots one kernel twice, A/B the planted one as B
        cand = args.kernels if kind == "A/A" else args.cand_kernels
        cmd += ["--base", str(args.kernels), "--cand", str(cand)]
    elif kind == "A/B":
        cmd += ["--cand-scenario-dir", str(args.cand_scenario_dir)]
    return cmd


def build_kernels(args: argparse.Namespace, into: Path) -> None:
    """A: the board's kernels from the project's series (main's kernel); B: the same series plus
    the planted latency, on by default (tests/data/bisect, issue 12's patch). Cache hits when
    built before; otherwise ccache rebuilds."""
    spec = load_target_board(args.board, "--build-kernels has nothing to build for it")
    series = ROOT / "kernel" / "patches" / "series"
    base = [(p.name, series.parent / p.name) for p in read_series(series)]
    planted = PLANTED
    if args.planted_length_us is not None:
        # The patch's default stall, rewritten: a moderate effect needs no command-line plumbing
        # per side, and the kernel cache keys the rewritten patch apart from the stock one.
        text, default = PLANTED.read_text(), PLANTED_LENGTH.format(PLANTED_LENGTH_US)
        if default not in text:
            raise InputError(f"no {default!r} to rewrite", path=PLANTED)
        planted = into / "planted-source" / PLANTED.name
        planted.parent.mkdir(parents=True, exist_ok=True)
        planted.write_text(text.replace(default, PLANTED_LENGTH.format(args.planted_length_us)))
    for side, extra in (("base", []), ("planted", [(PLANTED.name, planted)])):
        side_series = write_series(into / side / "patches", [*base, *extra])
        for flavor in args.flavors.split(","):
            subprocess.run([sys.executable, "-m", "rtgate", "kernel", "build", "--board",
                            str(spec.kernel_target), "--flavor", flavor,
                            "--patches", str(side_series), "--quiet",
                            "--out", str(into / side / "kernels" / flavor)], cwd=ROOT, check=True)
    args.kernels, args.cand_kernels = into / "base" / "kernels", into / "planted" / "kernels"


def trial(args: argparse.Namespace, kind: str) -> dict[str, Any]:
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="ab-calibration-") as tmp:
        out = Path(tmp) / "ab"
        started = time.time()
        proc = subprocess.run(command(args, kind, out), cwd=ROOT, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
        wall = time.time() - started
        report = json.loads((out / "ab.json").read_text()) if (out / "ab.json").exists() else {}
    decisions = report.get("decisions", [])
    return {
        "kind": kind, "settings": settings(args), "exit": proc.returncode,
        "outcome": report.get("outcome"), "why": report.get("why", proc.stderr[-300:]),
        "elapsed_s": report.get("elapsed_s"), "wall_s": round(wall, 1),
        "pairs": report.get("pairs"), "planned_rounds": report.get("planned_rounds"),
        "alpha_spent": report.get("alpha_spent"),
        "effects": {"/".join((d["board"], d["flavor"], d["scenario"])): d["effects"]
                    for d in decisions},
        "loadavg_before": load_before, "loadavg_after": os.getloadavg(),
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "host": os.uname().nodename,
        "kernel": os.uname().release,
    }


def rate(k: int, n: int) -> str:
    if n == 0:
        return "no clean trials"
    two = stats.binomtest(k, n).proportion_ci(0.95, method="exact")
    upper = stats.binomtest(k, n, alternative="less").proportion_ci(0.95, method="exact").high
    return (f"{k}/{n} = {k / n:.1%}, 95 % interval [{two.low:.1%}, {two.high:.1%}], "
            f"one-sided 95 % upper bound {upper:.1%}")


def summary(records: list[dict[str, Any]], alpha: float) -> list[str]:
    lines = []
    for kind, hit in (("A/A", "false alarms (worse or better)"), ("A/B", "detections (worse)")):
        mine = [r for r in records if r["kind"] == kind]
        clean = [r for r in mine if r["exit"] not in INCOMPLETE_EXITS]
        hits = sum(r["exit"] == ALARM_EXIT or (kind == "A/A" and r["outcome"] == "better")
                   for r in clean)
        outcomes: dict[str, int] = {}
        for r in mine:
            outcomes[str(r["outcome"])] = outcomes.get(str(r["outcome"]), 0) + 1
        decided = [r for r in clean if r["exit"] in (0, ALARM_EXIT)]
        lines.append(f"{kind}: {len(mine)} trials, {len(clean)} clean "
                     f"({len(mine) - len(clean)} incomplete/lab failures); outcomes {outcomes}")
        lines.append(f"  {hit}: {rate(hits, len(clean))}"
                     + (f" (configured rate {alpha:g})" if kind == "A/A" else ""))
        if decided:
            times = [r["elapsed_s"] for r in decided]
            rounds = [r["pairs"] for r in decided]
            lines.append(f"  decided in {len(decided)}/{len(clean)}: median time to a decision "
                         f"{statistics.median(times):.0f} s (range {min(times):.0f}–"
                         f"{max(times):.0f} s), median rounds a side "
                         f"{statistics.median(rounds):g}")
        undecided = [r for r in clean if r["exit"] == 4]
        if undecided:
            lines.append(f"  undecided at the cap: {len(undecided)}, median "
                         f"{statistics.median(r['elapsed_s'] for r in undecided):.0f} s, "
                         f"{statistics.median(r['pairs'] for r in undecided):g} rounds a side")
    if records:
        loads = [x for r in records for x in (r["loadavg_before"][0], r["loadavg_after"][0])]
        lines.append(f"load average (1 min) around the trials: median "
                     f"{statistics.median(loads):.1f}, range {min(loads):.1f}–{max(loads):.1f}; "
                     f"{records[0]['date']} … {records[-1]['date']} on {records[0]['host']} "
                     f"({records[0]['kernel']}, {os.cpu_count()} CPUs)")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--board", default="local")
    ap.add_argument("--scenario", default="idle")
    ap.add_argument("--flavors", help="kernel boards: e.g. rt")
    ap.add_argument("--kernels", type=Path,
                    help="kernel boards: DIR/<flavor>/, A of every trial and B of A/A trials")
    ap.add_argument("--cand-kernels", type=Path, help="kernel boards: B of A/B trials")
    ap.add_argument("--build-kernels", type=Path, metavar="DIR",
                    help="kernel boards: build A (the project's series) and B (plus the planted "
                         "latency) into DIR, instead of --kernels/--cand-kernels")
    ap.add_argument("--planted-length-us", type=int, metavar="US",
                    help="with --build-kernels: B's stall with interrupts off, every 2 s (default "
                         "the patch's 1000000: a gross effect)")
    ap.add_argument("--cand-scenario-dir", type=Path,
                    default=ROOT / "tests" / "data" / "ab" / "scenario")
    ap.add_argument("--aa", type=int, default=60, help="A/A trials (default 60)")
    ap.add_argument("--ab", type=int, default=10, help="A/B trials (default 10)")
    ap.add_argument("--round-duration", default="2s")
    ap.add_argument("--max-time", default="60s")
    ap.add_argument("--planned-rounds", type=int,
                    help="rounds a side the alpha spending plans for, as the gate passes it "
                         "(default: rtgate ab's, from the cap at the first pair's pace)")
    ap.add_argument("--min-effect-pct", type=float, default=10.0)
    ap.add_argument("--thresholds", type=Path,
                    help="budgets instead of thresholds.yml (e.g. ones the planted effect stays "
                         "under, so that the A/B test alone has to detect it)")
    ap.add_argument("--alpha", type=float, default=0.01)
    ap.add_argument("--log", type=Path, default=ROOT / "out" / "bench" / "ab_calibration.jsonl")
    ap.add_argument("--summary-only", action="store_true",
                    help="print the log's figures, one block per settings it holds; run nothing")
    args = ap.parse_args()
    logged = [json.loads(line) for line in
              (args.log.read_text().splitlines() if args.log.exists() else [])]
    if args.summary_only:
        groups: dict[str, list[dict[str, Any]]] = {}
        for r in logged:
            groups.setdefault(json.dumps(r["settings"]), []).append(r)
        for said, records in groups.items():
            print(f"settings: {said}\n" + "\n".join(summary(records,
                                                             records[0]["settings"]["alpha"])))
        return 0
    if args.planted_length_us is not None and not (args.build_kernels and
                                                   args.planted_length_us > 0):
        ap.error("--planted-length-us needs --build-kernels and a length above 0")
    if args.build_kernels:
        if not args.flavors:
            ap.error("--build-kernels needs --flavors")
        try:
            build_kernels(args, args.build_kernels)
        except InputError as exc:
            ap.error(str(exc))
    if args.kernels and args.ab and not args.cand_kernels:
        ap.error("a kernel board's A/B trials need --cand-kernels (or --ab 0)")
    mine = settings(args)
    args.log.parent.mkdir(parents=True, exist_ok=True)
    # A setting added since a trial was logged reads as its default (None) there.
    records = [r for r in logged if all(r["settings"].get(k) == v for k, v in mine.items())]
    todo = {"A/A": args.aa - sum(r["kind"] == "A/A" for r in records),
            "A/B": args.ab - sum(r["kind"] == "A/B" for r in records)}
    print(f"settings: {json.dumps(mine)}\nlog: {args.log} ({len(records)} trials already)")
    while any(n > 0 for n in todo.values()):
        # The kind furthest behind its share goes next: A/A and A/B interleave throughout.
        kind = min((k for k in todo if todo[k] > 0),
                   key=lambda k: 1 - todo[k] / (args.aa if k == "A/A" else args.ab))
        record = trial(args, kind)
        todo[kind] -= 1
        records.append(record)
        with args.log.open("a") as fh:
            fh.write(json.dumps(record) + "\n")
        print(f"{kind} trial: {record['outcome']} (exit {record['exit']}) after "
              f"{record['elapsed_s']} s, {record['pairs']} rounds a side, load "
              f"{record['loadavg_before'][0]:.1f}", flush=True)
    print("\n".join(summary(records, args.alpha)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
