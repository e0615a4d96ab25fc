"""Run the real cyclictest for a second per format and parse what it wrote."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from rtgate.cyclictest.parse import parse

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("cyclictest") is None, reason="cyclictest not installed"),
    pytest.mark.skipif(os.geteuid() != 0, reason="cyclictest needs root for SCHED_FIFO"),
]

BASE = ["cyclictest", "-m", "-p99", "-i1000", "-t2"]


def run(tmp: Path, *extra: str) -> tuple[Path, Path]:
    js, out = tmp / "run.json", tmp / "run.out"
    with out.open("wb") as fh:
        subprocess.run([*BASE, "-D1", *extra, f"--json={js}"], stdout=fh,
                       stderr=subprocess.DEVNULL, check=True, timeout=30)
    return js, out


def test_histogram_run_json_and_stdout_agree(tmp_path: Path) -> None:
    js, out = run(tmp_path, "-q", "-h", "30")
    r = parse([js, out], board="local")
    cycles = [t["cycles"] for t in json.loads(js.read_text())["thread"].values()]
    assert [t.samples for t in r.threads] == cycles
    for t in r.threads:
        assert t.histogram is not None and t.histogram.limit_us == 30
        assert sum(c for _, c in t.histogram.buckets) + t.histogram.overflows == t.samples
    assert r.status == "complete" and r.totals.p50 is not None
    assert r.totals.max_us == max(t.max_us or 0 for t in r.threads)


def test_verbose_run_parses_with_its_json(tmp_path: Path) -> None:
    js, out = run(tmp_path, "-v")
    r = parse([js, out])
    assert [s.format for s in r.sources] == ["json", "verbose"]
    for t in r.threads:
        assert t.histogram is not None
        assert sum(c for _, c in t.histogram.buckets) <= t.samples


def test_live_screen_stopped_by_sigint(tmp_path: Path) -> None:
    out = tmp_path / "live.out"
    with out.open("wb") as fh:
        proc = subprocess.Popen(BASE, stdout=fh, stderr=subprocess.DEVNULL)
        time.sleep(1.5)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=10) == 0
    r = parse([out])
    assert r.sources[0].format == "summary" and len(r.threads) == 2
    assert all(t.samples > 0 and t.tid for t in r.threads)
    assert r.totals.p99 is None
