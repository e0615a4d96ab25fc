"""`rtgate sweep` on the virtual board with the PREEMPT_DYNAMIC stock kernel, end to end through
the real CLI: two models from one build, each booted with preempt=, each model read back in the
guest after boot and at the end of the run, one table row each (about a minute with the kernel
cached)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from clirun import RunProcess

from rtgate.kernel.build import BuildResult
from rtgate.result import load_result

pytestmark = [pytest.mark.integration, pytest.mark.kernel, pytest.mark.timeout(1800)]


def test_dynamic_sweep_boots_each_model_and_verifies_it(
        rtgate_process: RunProcess, kernel_build: Callable[[str, str], BuildResult],
        tmp_path: Path) -> None:
    kernel_build("qemu-arm64", "stock")  # the sweep's own build is then a cache hit
    out = tmp_path / "sweep"
    proc = rtgate_process("sweep", "--board", "qemu-arm64", "--models", "none, full",
                          "--scenarios", "idle", "--duration", "3s", "--out", str(out),
                          timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

    for model in ("none", "full"):
        result = load_result(out / f"dynamic-{model}" / "idle" / "result.json")
        assert result.status == "complete" and result.totals.samples > 0
        assert result.kernel.preempt_rt is False
        assert result.tuning is not None and "preempt=" + model in result.tuning.boot_args
        checks = {(c.setting, c.phase): c for c in result.tuning.checks}
        for phase in ("boot", "end"):
            check = checks["preempt", phase]
            # debugfs marks the active model: "none voluntary (full)".
            assert check.status == "ok" and f"({model})" in check.actual, check
    table = (out / "sweep.md").read_text()
    rows = [line for line in table.splitlines() if line.startswith("| `dynamic-")]
    assert [r.split(" | ")[0:2] for r in rows] == [["| `dynamic-none`", "`idle`"],
                                                  ["| `dynamic-full`", "`idle`"]]
    assert all(r.endswith("| `complete` |") for r in rows)
    assert "one non-RT build instead of 2 static (none, preempt)" in table
    assert (out / "plots" / "sweep-idle.svg").stat().st_size > 0
    html = (out / "sweep.html").read_text()
    assert "dynamic-none" in html and "dynamic-full" in html
