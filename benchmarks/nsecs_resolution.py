"""Does measuring in ns matter? (issue 40, item 4)

The same latencies judged as cyclictest prints them in µs (each cut toward zero) and with -N
in ns (block maxima to the ns, percentiles off the log-linear ns bins of
``rtgate.stats.histogram``): per-round metrics, their round-to-round CV, and the A/B rule's
P(same | unchanged) and power at +20 % on the rpi5 gate's plan (8 rounds a side, two keys at
alpha 1 %: the tail test's 3/4 of 0.5 % a key, margin 10 %, the standard error floored at a
24-round bank's log-sd, ``rtgate.stats.oc.decide_paths``). Both metrics of the rule: the
round's p99.9 and the 90th percentile of its block maxima.

1. Simulated single-digit-µs tails: 4 threads × 60 s at 1 kHz a round (240 000 samples, 240
   one-second blocks); latency 1.5 µs + Gamma(2, 0.6 µs) (p99.9 ≈ 7.0 µs, p99.99 ≈ 8.5 µs:
   the Pi 5 PREEMPT_RT runs under stress-ng quoted in issue 40), times a per-round log-normal
   factor of CV 1, 3 or 5 % (boot-to-boot spread before any resolution); each path (a board)
   has its offset drawn from 1.0-2.0 µs, as where a tail sits on the µs grid decides how
   often its µs value steps. Each round's order statistics are drawn exactly (Beta), so a
   round costs two numbers; a 70 µs tail (×10) is the control, where 1 µs is 1.4 %. The CV
   printed is the mean over paths of their 24 bank rounds' CV.
2. Recorded rounds on this host (``--rounds``, default 12, of ``--seconds`` each): cyclictest
   -N -v -q -m -p80 -i1000 -t2, read by ``rtgate parse`` (the ns metrics; checked against the
   raw samples), the µs metrics from the same samples cut to µs; the rule replayed on paths
   drawn from the rounds with replacement, B's samples ×1.2 for the power. A dev VM's numbers
   say nothing of a Pi: labelled so.
3. Overhead of -N: rounds interleaved of bare cyclictest (no -v), -v piped into the
   block-maxima reducer (what every board runs) and -N -v into it; per arm the CPU seconds of
   cyclictest and awk (the children's rusage) and the average latency cyclictest reports.

    python benchmarks/nsecs_resolution.py [--trials 4000] [--rounds 12] [--seconds 10]
                                          [--overhead-rounds 6] [--skip-host]

`make bench-nsecs`: about 5 minutes (the simulation under a minute; the host's rounds are
timed by --seconds).
"""

from __future__ import annotations

import argparse
import math
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rtgate.cyclictest.command import CyclictestCommand  # noqa: E402
from rtgate.cyclictest.parse import parse  # noqa: E402
from rtgate.result import NSEC_US  # noqa: E402
from rtgate.stats import ab, oc, stalls  # noqa: E402
from rtgate.stats.histogram import log_linear  # noqa: E402

PLANNED, BANK, MARGIN, EFFECT = 8, 24, 0.10, 0.20
DESIGN = ab.Design(0.005 * (1 - stalls.STALL_SHARE))
SAMPLES, BLOCKS, BLOCK = 240_000, 240, 1000
SHIFT_US, SHAPE, SCALE_US = 1.5, 2.0, 0.6
Q999 = math.ceil(0.999 * SAMPLES)  # the nearest-rank order statistic of the histogram metric
QBLOCK = math.ceil(ab.BLOCK_QUANTILE * BLOCKS)  # inverted_cdf's order statistic
CVS = (0.01, 0.03, 0.05)
SEED = 20261128
_SAMPLE = re.compile(r"^ *(\d+): *(\d+): *(\d+)$")


def in_us(x_us: np.ndarray) -> np.ndarray:
    """cyclictest's µs: the ns cut toward zero."""
    return np.floor(x_us)


def in_ns_bins(x_us: np.ndarray) -> np.ndarray:
    """A percentile read off -N's log-linear bins: the lower edge of the sample's bin."""
    return log_linear(np.floor(x_us * 1000).astype(np.int64)) / 1000


def in_ns(x_us: np.ndarray) -> np.ndarray:
    """A block maximum with -N: the ns value."""
    return np.floor(x_us * 1000) / 1000


def simulated_rounds(rng: np.random.Generator, shape: tuple[int, ...], cv: float,
                     scale: float, shift: np.ndarray) -> dict[str, np.ndarray]:
    """Each round's p99.9 and block-max p90 as continuous latencies (µs); ``shift``: each
    path's (board's) offset, one per row."""
    factor = rng.lognormal(0.0, oc.log_sd_of_cv(cv), shape) * scale
    u999 = rng.beta(Q999, SAMPLES - Q999 + 1, shape)
    ublock = rng.beta(QBLOCK, BLOCKS - QBLOCK + 1, shape) ** (1 / BLOCK)
    latency = stats.gamma(SHAPE, scale=SCALE_US)
    return {"p99.9": (shift + latency.ppf(u999)) * factor,
            ab.BLOCK_METRIC: (shift + latency.ppf(ublock)) * factor}


QUANTIZE: dict[str, dict[str, Callable[[np.ndarray], np.ndarray]]] = {
    "µs": {"p99.9": in_us, ab.BLOCK_METRIC: in_us},
    "ns": {"p99.9": in_ns_bins, ab.BLOCK_METRIC: in_ns},
}


def rule(a: np.ndarray, b: np.ndarray, bank: np.ndarray) -> tuple[float, float, float]:
    """P(same), P(worse) and P(better) over paths of per-round values (paths × rounds)."""
    la, lb, lbank = (np.log(np.maximum(x, NSEC_US)) for x in (a, b, bank))
    outcome, _ = oc.decide_paths(la, lb, DESIGN, math.log1p(MARGIN),
                                 floor_sd=lbank.std(axis=1, ddof=1))
    share = np.bincount(outcome, minlength=4) / len(outcome)
    return float(share[oc.SAME]), float(share[oc.WORSE]), float(share[oc.BETTER])


def cv(x: np.ndarray) -> float:
    return float(x.std(ddof=1) / x.mean())


def mean_cv(rounds: np.ndarray) -> float:
    """The mean over paths (boards) of the CV of their rounds."""
    return float(np.mean(rounds.std(axis=1, ddof=1) / rounds.mean(axis=1)))


def simulate(trials: int) -> None:
    print("== 1. simulated tails: 240 000 samples a round, CV of the per-round factor given; "
          f"the rule at {PLANNED} rounds a side, margin {MARGIN:.0%}, {trials} paths a cell")
    print(f"{'tail':<11}{'round CV':>9}  {'metric':<14}{'unit':<5}{'CV':>7}"
          f"{'P(same|unch.)':>15}{'false alarm':>13}{'power +20%':>12}")
    for label, scale in (("p99.9≈7µs", 1.0), ("p99.9≈70µs", 10.0)):
        for i, round_cv in enumerate(CVS if scale == 1.0 else (0.03,)):
            rng = np.random.default_rng(SEED + i + int(scale))
            # Where a board's tail sits on the µs grid decides how often a µs value steps: each
            # path's offset is drawn over one µs (of the unscaled latency).
            shift = rng.uniform(SHIFT_US - 0.5, SHIFT_US + 0.5, (trials, 1))
            aa = simulated_rounds(rng, (trials, PLANNED), round_cv, scale, shift)
            bb = simulated_rounds(rng, (trials, PLANNED), round_cv, scale, shift)
            bank = simulated_rounds(rng, (trials, BANK), round_cv, scale, shift)
            worse = simulated_rounds(rng, (trials, PLANNED), round_cv, scale * (1 + EFFECT),
                                     shift)
            for metric in ("p99.9", ab.BLOCK_METRIC):
                for unit, q in QUANTIZE.items():
                    f = q[metric]
                    same, w, b = rule(f(aa[metric]), f(bb[metric]), f(bank[metric]))
                    _, power, _ = rule(f(aa[metric]), f(worse[metric]), f(bank[metric]))
                    print(f"{label:<11}{round_cv:>8.0%}  {metric:<14}{unit:<5}"
                          f"{100 * mean_cv(f(bank[metric])):>6.1f}%"
                          f"{100 * same:>14.1f}%{100 * (w + b):>12.2f}%{100 * power:>11.1f}%",
                          flush=True)


def samples_of(log: Path) -> dict[int, np.ndarray]:
    """The ns samples of a -N -v log, per thread in the order printed."""
    per: dict[int, list[int]] = {}
    for line in log.read_text().splitlines():
        if m := _SAMPLE.match(line):
            per.setdefault(int(m[1]), []).append(int(m[3]))
    return {t: np.array(v, dtype=np.int64) for t, v in per.items()}


def metrics(samples: dict[int, np.ndarray], factor: float) -> dict[str, dict[str, float]]:
    """The round's p99.9 and block-max p90, in µs and in ns, of its samples × factor."""
    scaled = {t: np.floor(v * factor).astype(np.int64) for t, v in samples.items()}
    pooled = np.sort(np.concatenate(list(scaled.values())))
    rank = math.ceil(0.999 * len(pooled))
    maxima = np.array([v[i:i + BLOCK].max() for v in scaled.values()
                       for i in range(0, len(v), BLOCK)])
    kth = math.ceil(ab.BLOCK_QUANTILE * len(maxima))
    top = float(np.sort(maxima)[kth - 1])
    return {"µs": {"p99.9": float(pooled[rank - 1] // 1000), ab.BLOCK_METRIC: top // 1000},
            "ns": {"p99.9": float(log_linear(pooled[rank - 1:rank])[0]) / 1000,
                   ab.BLOCK_METRIC: top / 1000}}


def record(rounds: int, seconds: int, work: Path) -> list[tuple[dict, dict]]:
    """Rounds of cyclictest -N -v on this host: each round's metrics as is and ×1.2."""
    out = []
    for i in range(rounds):
        log = work / f"round-{i}.txt"
        with log.open("w") as fh:
            subprocess.run(["cyclictest", "-N", "-v", "-q", "-m", "-p80", "-i1000", "-t2",
                            f"-D{seconds}"], stdout=fh, stderr=subprocess.DEVNULL, check=True)
        result = parse([log], block_cycles=BLOCK)
        samples = samples_of(log)
        as_is = metrics(samples, 1.0)
        # rtgate's own p99.9 of the same log: the reader, the bins and the Round agree.
        got = ab.Round.of(result).metric("p99.9")
        assert got == as_is["ns"]["p99.9"], (got, as_is["ns"]["p99.9"])
        out.append((as_is, metrics(samples, 1 + EFFECT)))
        print(f"  round {i + 1}/{rounds}: {result.totals.samples} samples, p99.9 "
              f"{as_is['ns']['p99.9']:.3f} µs (µs: {as_is['µs']['p99.9']:g}), block-max p90 "
              f"{as_is['ns'][ab.BLOCK_METRIC]:.3f} µs", flush=True)
        log.unlink()
    return out


def replay(recorded: list[tuple[dict, dict]], trials: int) -> None:
    rng = np.random.default_rng(SEED)
    n = len(recorded)
    print(f"{'metric':<14}{'unit':<5}{'CV':>7}{'P(same|unch.)':>15}{'false alarm':>13}"
          f"{'power +20%':>12}")
    for metric in ("p99.9", ab.BLOCK_METRIC):
        for unit in ("µs", "ns"):
            base = np.array([r[0][unit][metric] for r in recorded])
            up = np.array([r[1][unit][metric] for r in recorded])
            pick = [rng.integers(0, n, (trials, k)) for k in (PLANNED, PLANNED, BANK, PLANNED)]
            same, w, b = rule(base[pick[0]], base[pick[1]], base[pick[2]])
            _, power, _ = rule(base[pick[0]], up[pick[3]], base[pick[2]])
            print(f"{metric:<14}{unit:<5}{100 * cv(base):>6.1f}%{100 * same:>14.1f}%"
                  f"{100 * (w + b):>12.2f}%{100 * power:>11.1f}%", flush=True)


def _arm(argv: list[str], reduce: bool, work: Path) -> tuple[float, float]:
    """CPU seconds of cyclictest (and the reducer) and the average latency it reports (µs)."""
    json_path = work / "arm.json"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    cmd = [*argv, f"--json={json_path}"]
    if reduce:
        blocks = work / "arm.blocks"
        ct = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        reducer = CyclictestCommand(argv, None, None, blocks=str(blocks), block_cycles=BLOCK,
                                    nsecs="-N" in argv).reducer()
        subprocess.run(reducer, stdin=ct.stdout, stdout=subprocess.DEVNULL, check=True)
        assert ct.stdout is not None
        ct.stdout.close()
        ct.wait()
    else:
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    result = parse([json_path])
    assert result.totals.avg_us is not None
    return cpu, result.totals.avg_us


def overhead(rounds: int, seconds: int, work: Path) -> None:
    base = ["cyclictest", "-q", "-m", "-p80", "-i1000", "-t2", f"-D{seconds}"]
    arms = {"bare": (base, False), "-v | reducer": ([*base, "-v"], True),
            "-N -v | reducer": ([*base, "-N", "-v"], True)}  # the reducer's ns=1 with -N
    got: dict[str, list[tuple[float, float]]] = {a: [] for a in arms}
    for _ in range(rounds):
        for name, (argv, reduce) in arms.items():
            got[name].append(_arm(argv, reduce, work))
    bare_cpu = np.array([c for c, _ in got["bare"]])
    bare_avg = np.array([a for _, a in got["bare"]])
    print(f"{'arm':<17}{'CPU s a round':>14}{'× bare':>13}{'avg latency µs':>16}{'× bare':>13}"
          "  (95 % t interval of the per-round ratio)")
    for name, runs in got.items():
        cpu = np.array([c for c, _ in runs])
        avg = np.array([a for _, a in runs])
        print(f"{name:<17}{cpu.mean():>14.3f}{_ratio(cpu / bare_cpu):>13}"
              f"{avg.mean():>16.2f}{_ratio(avg / bare_avg):>13}", flush=True)


def _ratio(r: np.ndarray) -> str:
    half = stats.t.ppf(0.975, len(r) - 1) * r.std(ddof=1) / math.sqrt(len(r))
    return f"{r.mean():.2f}±{half:.2f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=4000)
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--overhead-rounds", type=int, default=6)
    ap.add_argument("--skip-host", action="store_true", help="the simulation only")
    args = ap.parse_args()
    simulate(args.trials)
    if args.skip_host:
        return 0
    if shutil.which("cyclictest") is None or os.geteuid() != 0:
        print("== 2./3. skipped: cyclictest as root is needed for the host's rounds")
        return 0
    with tempfile.TemporaryDirectory(prefix="rtgate-nsecs-") as tmp:
        work = Path(tmp)
        print(f"== 2. recorded rounds on this host (a dev VM, not a Pi: numbers about this "
              f"machine only): {args.rounds} rounds of {args.seconds} s, 2 threads at 1 kHz")
        replay(record(args.rounds, args.seconds, work), args.trials)
        print(f"== 3. the cost of -N: {args.overhead_rounds} rounds of each arm, "
              f"{args.seconds} s, interleaved")
        overhead(args.overhead_rounds, args.seconds, work)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
