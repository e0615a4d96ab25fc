"""Benchmark: how long `rtgate check` takes, start-up included, on one ordinary result.

`rtgate check` runs in every CI job that gates, and its own work (one result, one budget) takes
milliseconds: what it pays is the interpreter's start and its imports. A fresh process per run
(``python -m rtgate check``) is timed from outside, repeated, after one warm-up run; printed:
the median, min and max wall seconds, and which heavy packages the check imported (read from
``-X importtime``): with an ordinary budget, neither scipy nor statsmodels.

    python benchmarks/check_startup.py [--runs N]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULT = ROOT / "tests" / "data" / "results" / "local-cpu.result.json"  # a real cyclictest run
THRESHOLDS = ROOT / "thresholds.yml"  # its budget (local/*/*) has no pwcet_us
HEAVY = ("scipy", "statsmodels", "pandas", "numpy", "pydantic", "jinja2", "rich")


def command(junit: Path, *python_options: str) -> list[str]:
    return [sys.executable, *python_options, "-m", "rtgate", "check", str(RESULT),
            "--thresholds", str(THRESHOLDS), "--junit", str(junit)]


def once(argv: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"check_startup: {argv} exited {done.returncode}: {done.stderr.strip()}")
    return elapsed


def heavy_imports(junit: Path) -> list[str]:
    """The heavy top-level packages one check imports (``-X importtime`` lists every module)."""
    done = subprocess.run(command(junit, "-X", "importtime"), stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, check=True)
    modules = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()
               if line.startswith("import time:")}
    return [name for name in HEAVY if name in modules]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="timed runs (default 15)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        junit = Path(tmp) / "junit.xml"
        once(command(junit))  # warm-up: the page cache and .pyc files
        seconds = [once(command(junit)) for _ in range(args.runs)]
        loaded = heavy_imports(junit)
    print(f"rtgate check, {args.runs} runs: median {statistics.median(seconds):.3f} s, "
          f"min {min(seconds):.3f} s, max {max(seconds):.3f} s")
    print(f"heavy packages imported: {', '.join(loaded) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
