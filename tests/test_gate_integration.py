"""The real chain on this machine: `rtgate bench` runs cyclictest under stress-ng, `rtgate check`
judges it with the shipped smoke budgets."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from junitparser import JUnitXml

ROOT = Path(__file__).resolve().parent.parent


def rtgate(*args: str | Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rtgate", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.integration
def test_bench_cpu_then_check_with_shipped_budgets(tmp_path: Path) -> None:
    out = tmp_path / "run"
    bench = rtgate("bench", "--board", "local", "--scenario", "cpu", "--duration", "3s",
                   "--out", out)
    assert bench.returncode == 0, bench.stderr
    junit, summary = tmp_path / "junit.xml", tmp_path / "summary.md"
    check = rtgate("check", out / "result.json", "--thresholds", ROOT / "thresholds.yml",
                   "--junit", junit, "--markdown", summary)
    # The smoke budget allows 100 ms on a shared VM; anything else here is a broken harness.
    assert check.returncode == 0, check.stdout + check.stderr
    (suite,) = JUnitXml.fromfile(str(junit))
    names = sorted(case.name for case in suite)
    assert len(names) == 3 and all(n.startswith("local/") and "/cpu: " in n for n in names)
    assert all(not case.result for case in suite)
    props = {p.name: p.value for p in suite.properties()}
    assert props["board.virtual"] == "true" and props["status"] == "complete"
    assert "virtual board — not a real-time claim" in summary.read_text(encoding="utf-8")
