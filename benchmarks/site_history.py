"""Benchmark: the results site for a history of 1000 and 10 000 runs of real size.

The runs are made from one real qemu-arm64 gate run (tests/data/report/qemu-arm64-gate.tar.xz:
`rtgate pipeline --board qemu-arm64 --flavors rt --scenarios idle --duration 60s`, 2 CPUs, a
20 ms histogram, block maxima) in two sizes:

- a qemu-arm64 gate run: that run as it is (result.json, cyclictest.json, the dense
  cyclictest.hist, blocks.txt);
- an rpi5-sized run (4 threads, an hour at the scenarios' -i100): its two threads twice, every
  histogram count and sample count scaled to 36 M samples a thread, its block maxima repeated as
  often (36 000 blocks a thread), and the raw files written as cyclictest and the reducer write
  them for such a run. Its board is `rpi5-sized`, virtual: emulator numbers at a Pi's volume.

Two boards × two flavors × two scenarios make 8 keys, each published twice a day (a run every
1.5 hours across the site); kernels change every 60 runs of a key, every run has its own commit,
and each run's numbers drift from the captured ones by a seeded random factor.

A history that has run for years holds, after its retention (history.KEEP_RAW), every index line
and the newest runs' directories; the benchmark writes such a store directly (index lines with
digests made from the real runs, and the newest FULL_RUNS run directories of each key, which is
all the site reads) and then, through the real CLI, publishes one more real run into it. For
each size it prints: the cold site, republishing with nothing new and with one new run (each as
the site generation alone, timed in a fresh interpreter: index, full runs, pages, plots by the
real gnuplot; and the whole `rtgate report` command with its merge), the site's size, its growth
per run (between the two sizes) and the Pages limit that implies; then checks the site in
headless Chromium at 390 and 1280 px (no page scrolls sideways, the VERDICT column in view).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from browser import Browser, overflowing_pages  # noqa: E402

from rtgate import paths  # noqa: E402
from rtgate.report import site  # noqa: E402
from rtgate.report.digest import summarize  # noqa: E402
from rtgate.report.history import History  # noqa: E402
from rtgate.report.judge import Judge  # noqa: E402
from rtgate.report.provenance import Publication  # noqa: E402
from rtgate.report.runs import load_run  # noqa: E402
from rtgate.report.summary import RunSummary  # noqa: E402
from rtgate.result import Histogram, Percentile, load_result  # noqa: E402

CAPTURE = ROOT / "tests" / "data" / "report" / "qemu-arm64-gate.tar.xz"
THRESHOLDS = Path(__file__).with_suffix(".thresholds.yml")
SIZES = (1000, 10_000)
HOUR_SAMPLES = 36_000_000  # a thread's samples in an hour at -i100
KEYS = [(board, flavor, scenario) for board in ("qemu-arm64", "rpi5-sized")
        for flavor in ("stock", "rt") for scenario in ("idle", "board")]
PAGES_LIMIT = 2**30


def _hist_text(threads: list[Histogram]) -> str:
    """cyclictest -h's histogram: every 1 µs bin of the range, one column per thread."""
    limit = max(h.limit_us for h in threads)
    counts = [dict(h.buckets) for h in threads]
    lines = ["# Histogram"]
    lines += [f"{b:06d} " + "\t".join(f"{c.get(b, 0):06d}" for c in counts)
              for b in range(limit)]
    lines.append("# Histogram Overflows: " + " ".join(f"{h.overflows:05d}" for h in threads))
    return "\n".join(lines) + "\n"


def rpi5_sized(src: Path, dest: Path) -> None:
    """The captured run at a Pi's volume (see the module's docstring)."""
    result = load_result(src / "result.json")
    threads = []
    for i, t in enumerate([*result.threads, *result.threads][:4]):
        factor = max(1, round(HOUR_SAMPLES / max(t.samples, 1)))
        hist = t.histogram.model_copy(update={
            "buckets": [(b, c * factor) for b, c in t.histogram.buckets],
            "overflows": t.histogram.overflows * factor}) if t.histogram else None
        blocks = t.blocks.model_copy(update={
            "maxima_us": t.blocks.maxima_us * factor,
            "cycles": t.blocks.cycles * factor}) if t.blocks else None
        threads.append(t.model_copy(update={"thread": i, "cpu": i, "samples": t.samples * factor,
                                            "histogram": hist, "blocks": blocks}))
    totals = result.totals.model_copy(update={"samples": sum(t.samples for t in threads)})
    (dest / "raw").mkdir(parents=True)
    shutil.copyfile(src / "raw" / "cyclictest.json", dest / "raw" / "cyclictest.json")
    (dest / "raw" / "cyclictest.hist").write_text(
        _hist_text([t.histogram for t in threads if t.histogram]))
    block_cycles = threads[0].blocks.block_cycles if threads[0].blocks else 1000
    (dest / "raw" / "blocks.txt").write_text(
        f"rtgate-blocks 1 block_cycles {block_cycles}\n" + "".join(
            f"b {t.thread} {m}\n" for t in threads if t.blocks for m in t.blocks.maxima_us))
    board = result.board.model_copy(update={"name": "rpi5-sized", "virtual": True})
    result.model_copy(update={"threads": threads, "totals": totals, "board": board}).write(
        dest / "result.json")


def templates(work: Path) -> dict[str, Path]:
    with tarfile.open(CAPTURE) as tar:
        # Our own committed capture (Python 3.11.2 has no extraction filter).
        tar.extractall(work / "capture")  # noqa: S202
    gate = next((work / "capture").glob("*/result.json")).parent
    big = work / "capture" / "rpi5-sized"
    rpi5_sized(gate, big)
    return {"qemu-arm64": gate, "rpi5-sized": big}


def kernel_version(flavor: str, n: int) -> str:
    """A new kernel every 60 runs of a key (``uname -v``)."""
    return f"#{1 + n // 60} SMP {'PREEMPT_RT ' if flavor == 'rt' else ''}"


def variant(src: Path, dest: Path, key: tuple[str, str, str], n: int, when: datetime,
            rng: random.Random) -> Path:
    """The template run as run ``n`` of ``key``: its own id, start, kernel and drifting
    numbers."""
    board, flavor, scenario = key
    result = load_result(src / "result.json")
    drift = rng.uniform(0.7, 1.4)
    t = result.totals

    def scaled(p: Percentile | None) -> Percentile | None:
        return p.model_copy(update={"value_us": round(p.value_us * drift)}) if p else None

    totals = t.model_copy(update={
        "max_us": round((t.max_us or 0) * drift), "avg_us": round((t.avg_us or 0) * drift, 2),
        "p99": scaled(t.p99), "p99_99": scaled(t.p99_99)})
    release = f"6.12.{100 + n // 60}"
    kernel = result.kernel.model_copy(update={
        "release": release, "flavor": flavor, "preempt_rt": flavor == "rt",
        "version": kernel_version(flavor, n)})
    home = dest / f"{board}-{flavor}-{scenario}-{n:05d}"
    shutil.copytree(src / "raw", home / "raw")
    result.model_copy(update={
        "run_id": home.name, "start": when.isoformat(timespec="seconds"),
        "end": (when + timedelta(hours=1)).isoformat(timespec="seconds"), "scenario": scenario,
        "kernel": kernel, "totals": totals,
        "board": result.board.model_copy(update={"name": board})}).write(home / "result.json")
    return home


def store(count: int, work: Path, sources: dict[str, Path]) -> tuple[Path, Path]:
    """A history of ``count`` runs after its retention, and one more run to publish."""
    rng = random.Random(count)
    history = work / "history"
    judge = Judge.from_file(THRESHOLDS, paths.BOARDS)
    start = datetime(2025, 1, 1, tzinfo=UTC)
    per_key = [0] * len(KEYS)
    keep = count - site.FULL_RUNS * len(KEYS)
    lines: list[str] = []
    digests: dict[tuple[str, str, str], RunSummary] = {}
    for key in KEYS:
        home = variant(sources[key[0]], work / "scratch", key, 0, start, rng)
        digests[key] = summarize(load_run(home / "result.json"), judge)
        shutil.rmtree(home)
    for i in range(count + 1):
        k = i % len(KEYS)
        key, n = KEYS[k], per_key[k]
        per_key[k] += 1
        when = start + timedelta(minutes=90 * i)
        if i == count:
            (history / "index.jsonl").write_text("".join(lines))
            return history, variant(sources[key[0]], work / "inputs", key, n, when, rng)
        pub = Publication(seq=i + 1, published_at=(when + timedelta(hours=1)).isoformat(),
                          commit=f"{rng.getrandbits(160):040x}", workflow_run_id=str(10**6 + i))
        if i >= keep:
            home = variant(sources[key[0]], history / "runs", key, n, when, rng)
            run = dataclasses.replace(load_run(home / "result.json"), publication=pub)
            summary = summarize(run, judge)
        else:
            base = digests[key]
            drift = rng.uniform(0.7, 1.4)
            run_id = f"{key[0]}-{key[1]}-{key[2]}-{n:05d}"
            p9999 = base.p99_99
            assert base.digest is not None
            summary = base.model_copy(update={
                "run_id": run_id, "dir": run_id, "start": when.isoformat(timespec="seconds"),
                "kernel_release": f"6.12.{100 + n // 60}",
                "max_us": round((base.max_us or 0) * drift),
                "avg_us": round((base.avg_us or 0) * drift, 2),
                "p99_99": p9999.model_copy(update={"value_us": round(p9999.value_us * drift)})
                if p9999 else None,
                "publication": pub,
                "digest": base.digest.model_copy(update={
                    "kernel_version": kernel_version(key[1], n)})})
        lines.append(json.dumps(summary.model_dump(mode="json", exclude_none=True)) + "\n")
    raise AssertionError("unreachable")


SITE_ONLY = """
import sys, time
from pathlib import Path
began = time.perf_counter()
from rtgate.report import site
from rtgate.report.history import History
from rtgate.report.judge import Judge
history = History(sys.argv[1])
summaries = history.entries()
full = {s.run_id for s in site.newest_per_key(summaries)}
site.build(summaries, full, history.load_or_say, Path(sys.argv[2]),
           Judge.from_file(Path(sys.argv[3]), paths.BOARDS))
print(time.perf_counter() - began)
"""


def site_only(history: Path, out: Path) -> tuple[float, float]:
    """The site generation alone (no merge), in a fresh interpreter, imports included: its
    wall time, and the CPU time it and its gnuplots took (what a loaded machine cannot
    stretch)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run([sys.executable, "-c", SITE_ONLY, str(history), str(out),
                           str(THRESHOLDS)], check=True, cwd=ROOT, capture_output=True,
                          text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return float(proc.stdout.split()[-1]), cpu


def command(history: Path, out: Path, *inputs: Path) -> float:
    """The whole `rtgate report --history` command: merge, then the site."""
    began = time.perf_counter()
    subprocess.run([sys.executable, "-m", "rtgate", "report", *map(str, inputs), "--history",
                    str(history), "--thresholds", str(THRESHOLDS), "--out", str(out)],
                   check=True, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return time.perf_counter() - began


def size(root: Path) -> int:
    return sum(f.stat().st_size for f in root.rglob("*") if f.is_file())


def measure(count: int, work: Path, sources: dict[str, Path]) -> dict[str, float]:
    history, extra = store(count, work, sources)
    out = work / "site"
    figures: dict[str, float] = {}
    figures["cold site s"], figures["cold site CPU s"] = site_only(history, out)
    cold_size = size(out)
    figures["republish, nothing new s"], figures["(CPU s)"] = site_only(history, out)
    began = time.perf_counter()
    History(history).merge([load_run(extra / "result.json")],
                           judge=Judge.from_file(THRESHOLDS, paths.BOARDS))
    figures["merge of one new run s"] = time.perf_counter() - began
    figures["republish, one new run s"], figures["(CPU s) "] = site_only(history, out)
    figures["rtgate report, nothing new s"] = command(history, out)
    figures["site MB"] = cold_size / 1e6
    figures["full runs MB"] = size(out / "runs") / 1e6
    figures["history index MB"] = (history / "index.jsonl").stat().st_size / 1e6
    figures["result.json KB a run"] = max(
        p.stat().st_size for p in (history / "runs").glob("*/result.json")) / 1e3
    with Browser(1280, 900) as wide, Browser(390, 800) as narrow:
        figures["pages sideways at 1280/390 px"] = len(overflowing_pages(wide, out)) + len(
            overflowing_pages(narrow, out))
    return figures


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sizes", type=int, nargs="*", default=list(SIZES),
                    help=f"histories to build, in runs (default {' '.join(map(str, SIZES))})")
    sizes = tuple(ap.parse_args().sizes)
    load = os.getloadavg()
    results = {}
    with tempfile.TemporaryDirectory(prefix="rtgate-bench-") as tmp:
        sources = templates(Path(tmp))
        for count in sizes:
            work = Path(tmp) / str(count)
            results[count] = measure(count, work, sources)
            shutil.rmtree(work)
    small, large = (results[n] for n in sizes)
    print(f"load average at the start: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} on "
          f"{os.cpu_count()} cores")
    print(f"{'':32}" + "".join(f"{n:>12} runs" for n in sizes))
    for name in small:
        print(f"{name:32}" + "".join(f"{results[n][name]:>17.2f}" for n in sizes))
    growth = (large["site MB"] - small["site MB"]) * 1e6 / (sizes[1] - sizes[0])
    fixed = large["site MB"] * 1e6 - growth * sizes[1]
    print(f"site growth: {growth / 1e3:.1f} KB a run between {sizes[0]} and {sizes[1]} runs "
          f"(average {large['site MB'] * 1e3 / sizes[1]:.1f} KB a run at {sizes[1]}); "
          f"60 000 runs: {(fixed + growth * 60_000) / 1e6:.0f} MB; the 1 GiB Pages limit at "
          f"{(PAGES_LIMIT - fixed) / growth:,.0f} runs")


if __name__ == "__main__":
    main()
