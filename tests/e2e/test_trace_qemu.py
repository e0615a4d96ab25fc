"""The proof on the virtual board: a kernel with the planted latency fails the check, and the
failure names the planted function from a trace taken at the breach, with rtla built here.

One extra kernel build (stock + kernel/patches/testing, cached like every build; ccache makes it
short after the stock build). The same build runs with the plant on (command-line words) and off.
"""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from rtgate import paths
from rtgate.kernel.build import build
from rtgate.result import load_result

pytestmark = [pytest.mark.integration, pytest.mark.kernel, pytest.mark.timeout(3600)]

DATA = Path(__file__).parents[1] / "data" / "trace"
TESTING_SERIES = paths.KERNEL / "patches" / "testing" / "series"
PLANTED = "rtgate_planted_latency"
PLANT_ON = ["--kernel-arg", "rtgate_planted.length_us=1000000",
            "--kernel-arg", "rtgate_planted.period_ms=2000"]


@pytest.fixture(scope="module")
def planted_kernels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """DIR/stock/: the stock kernel with the testing series, for --kernels."""
    out = tmp_path_factory.mktemp("planted")
    build("qemu-arm64", "stock", series=TESTING_SERIES, out=out / "stock", progress=False)
    return out


def _pipeline(kernels: Path, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rtgate", "pipeline", "--board", "qemu-arm64",
         "--flavors", "stock", "--scenarios", "idle", "--duration", "20s",
         "--kernels", str(kernels), "--thresholds", str(DATA / "thresholds.yml"),
         "--trace-on-breach", "--trace-cap", "60s", "--out", str(out), *extra],
        capture_output=True, text=True, timeout=1800)


def _failures(junit: Path) -> list[str]:
    return [(f.get("message") or "") + "\n" + (f.text or "")
            for f in ET.parse(junit).getroot().iter("failure")]


def test_planted_latency_fails_and_the_failure_names_the_planted_function(
        planted_kernels: Path, tmp_path: Path) -> None:
    proc = _pipeline(planted_kernels, tmp_path / "on", *PLANT_ON)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    result = load_result(tmp_path / "on" / "stock" / "idle" / "result.json")
    assert result.totals.max_us is not None and result.totals.max_us > 500000
    trace = result.trace
    assert trace is not None and trace.breached, trace
    assert trace.tool == "rtla timerlat" and (trace.version or "").startswith("6.12.")
    assert any(PLANTED in b.stack for b in trace.breaches), trace.breaches
    for raw in trace.raw:
        assert (tmp_path / "on" / "stock" / "idle" / raw).is_file()
    failures = _failures(tmp_path / "on" / "junit.xml")
    assert failures and all(PLANTED in f for f in failures), failures
    assert PLANTED in (tmp_path / "on" / "summary.md").read_text()

    site = tmp_path / "site"
    report = subprocess.run([sys.executable, "-m", "rtgate", "report", str(tmp_path / "on"),
                             "--thresholds", str(DATA / "thresholds.yml"), "--out", str(site)],
                            capture_output=True, text=True, timeout=600)
    assert report.returncode in (0, 1), report.stderr
    pages = [p for p in site.rglob("*.html") if PLANTED in p.read_text()]
    assert any("/runs/" in str(p) for p in pages), sorted(map(str, site.rglob("*.html")))
    published = [p.name for p in site.rglob("trace-*.txt")]
    assert "trace-tracer.stdout.txt" in published, published


def test_same_kernel_without_the_plant_does_not_breach(planted_kernels: Path,
                                                       tmp_path: Path) -> None:
    proc = _pipeline(planted_kernels, tmp_path / "off")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = load_result(tmp_path / "off" / "stock" / "idle" / "result.json")
    assert result.trace is None  # no breach, so no trace run
    assert result.totals.max_us is not None and result.totals.max_us < 500000
