"""Benchmark: does the tail estimate predict a longer run's maximum on the same setup?

Each trial runs real cyclictest on this machine twice with the same command line: a short run,
whose per-block maxima are fitted (GEV, rtgate.stats.tail), and a run ten times longer, whose
maximum the fit predicts. The prediction interval for that maximum is the lower confidence bound
of the quantile it exceeds with probability 95 % to the upper bound of the quantile it exceeds
with 5 %: a 90 % interval for the single draw, widened by the fit's own uncertainty. Printed: how
many trials' long-run maximum fell inside, below and above, and how many short runs gave no
valid estimate (a failed assumption check), each with its reason.

    python benchmarks/tail_coverage.py [--seconds N] [--trials N] [--block-cycles N]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import numpy.typing as npt

from rtgate.stats import tail

# cyclictest -v prints "thread: cycle: latency" per sample (formats/verbose.py reads the same).
_SAMPLE = re.compile(rb"^ *(\d+): *(\d+): *(\d+)$", re.MULTILINE)
INTERVAL_US = 1000
LONGER = 10


def measure(seconds: int, work: Path) -> npt.NDArray[np.int64]:
    """One thread's latencies, in cycle order, from a real `cyclictest -v` run."""
    out = work / "verbose.txt"
    with out.open("wb") as fh:
        subprocess.run(["cyclictest", "-m", "-p99", f"-i{INTERVAL_US}", "-t1", f"-D{seconds}",
                        "-v"], stdout=fh, stderr=subprocess.DEVNULL, check=True)
    rows = np.array(_SAMPLE.findall(out.read_bytes()), dtype=np.int64)
    out.unlink()  # the block maxima are all this keeps
    return rows[np.argsort(rows[:, 1], kind="stable"), 2]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=20, help="short run (default 20 s)")
    ap.add_argument("--trials", type=int, default=4, help="default 4")
    # 200 blocks in the default 20 s: the GEV's fit checks are calibrated from 120 blocks on
    # (tail.FIT_CUTS_FILE); 0.2 s blocks gave 100, always refused since 2026-11-28.
    ap.add_argument("--block-cycles", type=int, default=100, help="default 100 (0.1 s)")
    args = ap.parse_args()
    block_s = args.block_cycles * INTERVAL_US / 1e6
    horizon_s = LONGER * args.seconds
    inside = below = above = 0
    invalid: list[str] = []
    with tempfile.TemporaryDirectory(prefix="rtgate-tail-") as tmp:
        for trial in range(args.trials):
            short = tail.block_maxima(measure(args.seconds, Path(tmp)), args.block_cycles)
            actual = int(measure(horizon_s, Path(tmp)).max())
            low = tail.max_quantile(short, block_s, horizon_s, 0.95)
            high = tail.max_quantile(short, block_s, horizon_s, 0.05)
            if low.lower_us is None or high.upper_us is None:
                invalid.append(low.why_not or high.why_not)
                print(f"trial {trial}: no valid estimate: {invalid[-1]}; long-run max {actual}",
                      flush=True)
                continue
            # cyclictest prints whole µs cut toward zero: the true maximum is in [actual, +1).
            inside += low.lower_us <= actual + 1 and actual <= high.upper_us
            below += actual + 1 < low.lower_us
            above += actual > high.upper_us
            print(f"trial {trial}: {len(short)} blocks of {block_s * 1e3:g} ms, short max "
                  f"{short.max()} µs; {horizon_s} s max {actual} µs; 90 % prediction interval "
                  f"[{low.lower_us:.1f}, {high.upper_us:.1f}] µs", flush=True)
    valid = inside + below + above
    print(f"tail coverage: {args.seconds} s fits predicting the max of {horizon_s} s runs "
          f"(cyclictest -m -p99 -i{INTERVAL_US} -t1, blocks of {args.block_cycles} cycles): "
          f"{inside}/{valid} inside the 90 % prediction interval, {below} below, {above} above; "
          f"{len(invalid)}/{args.trials} short runs gave no valid estimate")
    return 0


if __name__ == "__main__":
    sys.exit(main())
