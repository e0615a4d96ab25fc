"""Benchmark: the results site for a generated history of 100 and 1000 runs.

The runs are copies of the real captures in tests/data/report/ (six board × flavor × scenario
keys) under new run ids and start times, merged into a history store. For each size it times
`rtgate report --history` (the real CLI, real gnuplot) three ways: a cold site, re-publishing
with nothing new (the nightly case: plots are reused), and re-publishing with one new run; and
prints how each grows from 100 to 1000 runs (10x runs; linear growth is a ratio of ~10).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rtgate.report.history import History  # noqa: E402
from rtgate.report.runs import RunFiles, collect  # noqa: E402
from rtgate.result import load_result  # noqa: E402

DATA = ROOT / "tests" / "data" / "report"
SIZES = (100, 1000)


def generate(count: int, work: Path) -> list[RunFiles]:
    """count runs cycling through the captured fixtures, one hour apart."""
    fixtures = sorted((DATA / "local").glob("*/result.json")) + \
        sorted((DATA / "qemu").glob("*/result.json"))
    start = datetime(2026, 1, 1)
    dirs = []
    for i in range(count):
        src = fixtures[i % len(fixtures)]
        result = load_result(src)
        d = work / f"gen-{i:05d}"
        shutil.copytree(src.parent / "raw", d / "raw")
        when = (start + timedelta(hours=i)).isoformat() + "+00:00"
        result.model_copy(update={"run_id": f"{result.board.name}-{i:05d}", "start": when}
                          ).write(d / "result.json")
        dirs.append(d)
    return collect(dirs)


def report(history: Path, site: Path, *inputs: Path) -> float:
    began = time.perf_counter()
    subprocess.run([sys.executable, "-m", "rtgate", "report", *map(str, inputs), "--history",
                    str(history), "--thresholds", str(DATA / "thresholds.yml"), "--out",
                    str(site)], check=True, cwd=ROOT, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return time.perf_counter() - began


def measure(count: int, work: Path) -> dict[str, float]:
    runs = generate(count + 1, work / "in")
    history, site = work / "history", work / "site"
    began = time.perf_counter()
    History(history).merge(runs[:count])
    merged = time.perf_counter() - began
    cold = report(history, site)
    warm = report(history, site)
    one_more = report(history, site, runs[count].result_path.parent)
    size = sum(f.stat().st_size for f in site.rglob("*") if f.is_file())
    return {"merge": merged, "cold site": cold, "re-publish, nothing new": warm,
            "re-publish, one new run": one_more, "site MiB": size / 2**20}


def main() -> None:
    results = {}
    for count in SIZES:
        with tempfile.TemporaryDirectory(prefix="rtgate-bench-") as tmp:
            results[count] = measure(count, Path(tmp))
    small, large = (results[n] for n in SIZES)
    print(f"{'':28}" + "".join(f"{n:>10} runs" for n in SIZES) + f"{'ratio':>12}")
    for name in small:
        unit = "" if name == "site MiB" else " s"
        print(f"{name:28}" + "".join(f"{results[n][name]:>12.2f}{unit:2}" for n in SIZES)
              + f"{large[name] / small[name]:>10.1f}x")
    print(f"per run, cold site: {small['cold site'] / SIZES[0] * 1000:.1f} ms at {SIZES[0]}, "
          f"{large['cold site'] / SIZES[1] * 1000:.1f} ms at {SIZES[1]}")


if __name__ == "__main__":
    main()
