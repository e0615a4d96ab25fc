"""`make demo-regression`, as the README names it (issue 36, item 8): planned end to end without a
board minute (both kernel builds' plans, the A/B run's plan from the board's calibration record),
so the documented target cannot rot. The full run (a kernel build, 5-15 minutes of rounds) is
recorded in docs/journal.md; the refusal itself is what tests/e2e/test_bisect_qemu.py's
culprit steps assert on the same planted patch."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def test_the_readme_names_it_after_the_first_two_commands() -> None:
    blocks = re.findall(r"```sh\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    first = [line.split("#")[0].strip() for line in blocks[0].splitlines()]
    assert first == ["make demo", "make test"], first  # the developers' guide's two commands
    assert blocks[1].splitlines()[0].startswith("make demo-regression  # "), blocks[1]


def test_make_demo_regression_plans_both_kernels_and_the_ab_run(tmp_path: Path) -> None:
    proc = subprocess.run(["make", "--no-print-directory", "demo-regression",
                           "DEMO_REGRESSION_ARGS=--plan-only", f"OUT={tmp_path / 'demo'}",
                           f"PYTHON={sys.executable}"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert out.count("$ rtgate kernel plan --board qemu-arm64 --flavor stock") == 2, out[-4000:]
    assert '"name": "0005-rtgate-planted-latency-on.patch"' in out
    series = (tmp_path / "demo-regression" / "planted-patches" / "series").read_text()
    assert series.splitlines()[-1] == "0005-rtgate-planted-latency-on.patch"
    assert "(the calibration record of qemu-arm64)" in out and "qemu-arm64/stock/idle" in out
    assert not (tmp_path / "demo-regression" / "ab" / "A").exists()  # no round was measured
