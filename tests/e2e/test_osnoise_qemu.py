"""rtla osnoise as the measuring tool on the virtual board, end to end through the real CLI
(issue 38): `rtgate pipeline` runs the `osnoise-net` scenario in the qemu-arm64 guest (rtla built
from the trusted kernel source, in its initramfs), and the shipped osnoise budget judges it on
its own metrics, never a latency budget."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from clirun import RunProcess

from rtgate.kernel.build import BuildResult
from rtgate.result import load_result
from rtgate.timerlat import osnoise

pytestmark = [pytest.mark.integration, pytest.mark.kernel, pytest.mark.timeout(1800)]

ROOT = Path(__file__).parents[2]


def test_pipeline_measures_os_noise_and_its_budget_judges(
        rtgate_process: RunProcess, kernel_build: Callable[[str, str], BuildResult],
        tmp_path: Path) -> None:
    kernels = tmp_path / "kernels"
    kernels.mkdir()
    (kernels / "rt").symlink_to(kernel_build("qemu-arm64", "rt").out)
    out = tmp_path / "out"
    proc = rtgate_process("pipeline", "--board", "qemu-arm64", "--flavors", "rt", "--scenarios",
                          "osnoise-net", "--duration", "10s", "--kernels", str(kernels),
                          "--out", str(out), timeout=600)
    run = out / "rt" / "osnoise-net"
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

    result = load_result(run / "result.json")
    assert result.status == "complete" and result.tool.name == "osnoise"
    assert (result.tool.version or "").startswith("6.12.")
    assert result.tool.cmdline == "rtla osnoise top -q -d 10s -p 1000000 -r 900000"
    cpus = result.environment["cpus_online"]
    noise = result.noise or []
    assert [n.cpu for n in noise] == list(range(cpus))
    assert all(n.runtime_us > 0 and 0 <= n.cpu_available_pct <= 100 for n in noise)
    assert result.threads == [] and result.totals.samples == 0
    # The result is what the raw output says, read again from the file the guest sent back.
    assert osnoise.parse(run / "raw" / "osnoise.stdout", lenient=False).noise == noise
    # Judged by the shipped osnoise budget, on its own metrics (virtual board: labelled so).
    junit = (out / "junit.xml").read_text()
    assert "max_single_noise_us &lt;= 10000000" in junit or "max_single_noise_us <= 10000000" \
        in junit
    assert "min_cpu_available_pct" in junit and "max_us" not in junit
    lines = (ROOT / "thresholds.yml").read_text().splitlines()
    line = next(n for n, text in enumerate(lines, 1) if "scenario: osnoise-net" in text) - 2
    assert f"thresholds.yml:{line}" in junit
