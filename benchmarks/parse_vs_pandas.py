"""Benchmark (a): `rtgate parse` of a 20-million-line verbose log vs `pandas.read_csv` of it.

The paper's method yields ~10^8 verbose lines, so parsing must be about as fast as the fastest
general CSV reader while using far less memory (it never holds the samples, only histograms).
Each side runs in its own child process so that its peak RSS is its own; both read the same
file, generated here in the exact layout of cyclictest 2.40 ``-v`` (``%8d:%8lu:%8ld``, threads
printed in interleaved blocks as its main loop drains each thread's buffer).

    python benchmarks/parse_vs_pandas.py [--lines N]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

THREADS = 4
BLOCK = 50  # lines per thread per drain of the main loop (~10 ms at -i200)
HEADER = ["Max CPUs = 4", "Online CPUs = 4", "# /dev/cpu_dma_latency set to 0us"] + [
    f"Thread {n} Interval: {200 + 500 * (n + 1)}" for n in range(THREADS)]

# Run in a fresh interpreter: resource.RUSAGE_CHILDREN then holds the one measured command.
_MEASURE = """
import resource, subprocess, sys, time
t = time.perf_counter()
rc = subprocess.run(sys.argv[1:]).returncode
wall = time.perf_counter() - t
use = resource.getrusage(resource.RUSAGE_CHILDREN)
print(rc, wall, use.ru_utime + use.ru_stime, use.ru_maxrss)
"""

_PANDAS = """
import sys
import pandas as pd
df = pd.read_csv(sys.argv[1], sep=":", header=None, names=["thread", "cycle", "latency"],
                 skiprows=int(sys.argv[2]), skipinitialspace=True, dtype="int64")
print(len(df), file=sys.stderr)
"""


def generate(path: Path, lines: int, seed: int = 1) -> None:
    """Write ``lines`` sample lines; latencies are mostly 5-30 µs with rare long stalls."""
    rng = np.random.default_rng(seed)
    per_thread = lines // THREADS
    with path.open("wb") as fh:
        fh.write(("\n".join(HEADER) + "\n").encode())
        step = 1_000_000 - 1_000_000 % (THREADS * BLOCK)
        for start in range(0, per_thread * THREADS, step):
            n = min(step, per_thread * THREADS - start)
            idx = np.arange(start, start + n)
            rounds, offset = np.divmod(idx, THREADS * BLOCK)
            thread, within = np.divmod(offset, BLOCK)
            cycle = rounds * BLOCK + within
            latency = np.rint(rng.lognormal(2.3, 0.35, n)).astype(np.int64)
            spikes = rng.random(n) < 1e-5
            latency[spikes] = rng.integers(100, 5000, int(spikes.sum()))
            fh.write(_fixed_width(thread, cycle, latency))


def _fixed_width(*columns: np.ndarray) -> bytes:
    """Format columns as ``%8d:%8d:%8d\\n`` rows, vectorized (digits, then leading spaces)."""
    n = len(columns[0])
    grid = np.full((n, 27), ord(" "), dtype=np.uint8)
    grid[:, 8] = grid[:, 17] = ord(":")
    grid[:, 26] = ord("\n")
    for c, values in enumerate(columns):
        v = values.copy()
        end = 9 * c + 7
        for k in range(8):
            digit = (v % 10).astype(np.uint8) + ord("0")
            show = (v > 0) | (k == 0)
            grid[show, end - k] = digit[show]
            v //= 10
    return grid.tobytes()


def measure(cmd: list[str]) -> tuple[float, float, int]:
    """Wall time, CPU time and peak RSS (KiB) of ``cmd``. CPU time is the steadier figure on a
    shared machine: waiting for a core counts in the wall time only."""
    out = subprocess.run([sys.executable, "-c", _MEASURE, *cmd], check=True,
                         capture_output=True, text=True).stdout.split()
    rc, wall, cpu, rss_kib = int(out[0]), float(out[1]), float(out[2]), int(out[3])
    if rc != 0:
        sys.exit(f"parse_vs_pandas: {cmd[:4]} exited {rc}")
    return wall, cpu, rss_kib


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=20_000_000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="rtgate-bench-") as tmp:
        log = Path(tmp) / "verbose.log"
        t = time.perf_counter()
        generate(log, args.lines)
        size_mb = log.stat().st_size / 1e6
        print(f"generated {args.lines:,} lines ({size_mb:.0f} MB) in "
              f"{time.perf_counter() - t:.1f} s")
        rtgate = measure([sys.executable, "-m", "rtgate", "parse", str(log),
                          "-o", str(Path(tmp) / "result.json")])
        pandas = measure([sys.executable, "-c", _PANDAS, str(log), str(len(HEADER))])
    for name, (wall, cpu, kib) in (("rtgate parse", rtgate), ("pandas.read_csv", pandas)):
        print(f"{name:16s} wall {wall:6.2f} s  cpu {cpu:6.2f} s  peak RSS {kib / 1024:6.0f} MiB")
    print(f"rtgate/pandas ratios: wall time {rtgate[0] / pandas[0]:.2f}, "
          f"cpu time {rtgate[1] / pandas[1]:.2f}, peak RSS {rtgate[2] / pandas[2]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
