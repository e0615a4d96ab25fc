"""The QEMU virtual Pi for real: the built arm64 kernel, the Debian arm64 initramfs, TCG.

One kernel build (the session's ``kernel_build`` fixture, cached across sessions) and one cached
initramfs serve every test. The measurement runs through the CLI contract, ``rtgate board run``;
broken boots (no console, the wrong kernel) must be exit 3 with the console log kept; a panic is
the kernel's failure, exit 1, with the console as its evidence.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from clirun import RunProcess

from rtgate import paths
from rtgate.kernel.build import BuildResult
from rtgate.result import load_result

pytestmark = [pytest.mark.integration, pytest.mark.kernel, pytest.mark.timeout(1800)]


@pytest.fixture(scope="module")
def rt_kernel(kernel_build: Callable[[str, str], BuildResult]) -> BuildResult:
    return kernel_build("qemu-arm64", "rt")


def _root(tmp_path: Path, **overrides: object) -> Path:
    """An RTGATE_ROOT whose qemu-arm64 board is the shipped one with ``overrides``."""
    root = tmp_path / "rtgate-root"
    (root / "bench" / "boards").mkdir(parents=True)
    (root / "bench" / "scenarios").symlink_to(paths.SCENARIOS)
    board = yaml.safe_load((paths.BOARDS / "qemu-arm64.yml").read_text())
    board["options"].update(overrides)
    (root / "bench" / "boards" / "qemu-arm64.yml").write_text(yaml.safe_dump(board))
    return root


def _board_run(rtgate_process: RunProcess,
               kernel: Path, out: Path, *, scenario: str = "net", duration: str = "3",
               root: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **({"RTGATE_ROOT": str(root)} if root else {})}
    return rtgate_process("board", "run", "--board", "qemu-arm64", "--kernel", str(kernel),
                          "--scenario", scenario, "--duration", duration, "--scale", "0.5",
                          "--out", str(out), env=env, timeout=900)


def test_rt_kernel_measured_in_the_guest_with_the_host_as_iperf3_peer(
        rtgate_process: RunProcess, tmp_path: Path, rt_kernel: BuildResult) -> None:
    out = tmp_path / "out"
    proc = _board_run(rtgate_process, rt_kernel.out, out)
    assert proc.returncode == 0, proc.stderr + (out / "console.log").read_text()[-3000:]

    result = load_result(out / "result.json")
    assert result.board.name == "qemu-arm64" and result.board.virtual is True
    assert result.kernel.release == rt_kernel.kernel_release
    assert result.kernel.preempt_rt is True and result.kernel.machine == "aarch64"
    assert result.status == "complete" and result.totals.samples > 0
    assert len(result.threads) == result.environment["cpus_online"] <= 2
    assert {ld.name for ld in result.loads} == {"iperf3-server", "iperf3-client"}
    assert all(not ld.early_exit for ld in result.loads)
    # The guest's iperf3 server bound every interface (not 127.0.0.1) and served the host.
    server = next(ld for ld in result.loads if ld.name == "iperf3-server")
    assert "0.0.0.0" in server.command
    assert "receiver" in (out / "raw" / "iperf3-client.stdout").read_text()
    assert json.loads((out / "raw" / "cyclictest.json").read_text())["sysinfo"]["machine"] \
        == "aarch64"
    console = (out / "console.log").read_text(errors="replace")
    assert f"RTGATE-READY release={rt_kernel.kernel_release}" in console
    # Block maxima, reduced in the guest by busybox awk, agree with the histogram.
    for t in result.threads:
        assert t.blocks is not None and t.samples > 0
        # One second's worth at the board's 1 ms interval (it replaces the scenario's -i100).
        assert t.interval_us == 1000 and t.blocks.block_cycles == 1000
        if t.blocks.cycles != t.samples:
            # A TCG guest on a loaded host can end a thread in a stall whose samples cyclictest
            # never printed: its blocks stop before it, and the result says so.
            assert any(f"thread {t.thread}: " in n and "the block maxima stop at cycle "
                       f"{t.blocks.cycles} of {t.samples}" in n for n in result.notes), \
                (t, result.notes)
            continue
        assert max(t.blocks.maxima_us) == t.max_us
    assert "blocks" in [s.format for s in result.sources]
    assert (out / "raw" / "blocks.txt").is_file()
    assert len((out / "raw" / "cyclictest.stdout").read_text().splitlines()) < 10


def test_wrong_console_never_prints_the_marker_infra_with_log(
        rtgate_process: RunProcess, tmp_path: Path, rt_kernel: BuildResult) -> None:
    out = tmp_path / "out"
    proc = _board_run(rtgate_process, rt_kernel.out, out, root=_root(tmp_path, console="ttyS0",
                                                     boot_timeout_s=20))
    assert proc.returncode == 3, proc.stderr
    # No console: init cannot open one and dies (the emulator exits), or the boot times out.
    assert "while waiting for RTGATE-READY" in proc.stderr
    assert "console.log" in proc.stderr and (out / "console.log").is_file()
    assert not (out / "result.json").exists()


def test_kernel_panic_is_the_kernels_failure_with_log(rtgate_process: RunProcess,
                                                      tmp_path: Path,
                                                      rt_kernel: BuildResult) -> None:
    """A kernel that panics fails (exit 1, rtgate.errors.KernelCrash), never "re-run once the
    board is healthy": the console holding the panic is the evidence."""
    out = tmp_path / "out"
    root = _root(tmp_path, append=["panic=-1", "loglevel=1", "rdinit=/no-such-init"])
    proc = _board_run(rtgate_process, rt_kernel.out, out, root=root)
    assert proc.returncode == 1, proc.stderr
    assert "kernel panic" in proc.stderr
    assert "Kernel panic" in (out / "console.log").read_text(errors="replace")


@pytest.mark.parametrize(("field", "value", "message"), [
    ("kernel_release", "6.12.0-not-what-boots", "booted release '{release}', expected the built "
                                                "'6.12.0-not-what-boots'"),
    # Stock and RT builds share the release: the version banner tells them apart.
    ("uts_version", "#1 SMP Sun Nov 22 00:00:00 UTC 2026", "expected the built '#1 SMP Sun"),
])
def test_booted_kernel_must_be_the_built_one(rtgate_process: RunProcess,
                                             tmp_path: Path, rt_kernel: BuildResult, field: str,
                                             value: str, message: str) -> None:
    kernel = tmp_path / "kernel"
    shutil.copytree(rt_kernel.out, kernel)
    meta = json.loads((kernel / "metadata.json").read_text())
    meta[field] = value
    (kernel / "metadata.json").write_text(json.dumps(meta))
    out = tmp_path / "out"
    proc = _board_run(rtgate_process, kernel, out, scenario="idle", duration="1")
    assert proc.returncode == 3, proc.stderr
    assert message.format(release=rt_kernel.kernel_release) in proc.stderr
    assert (out / "console.log").is_file() and not (out / "result.json").exists()


def test_run_timeout_is_infra_with_log(rtgate_process: RunProcess,
                                       tmp_path: Path, rt_kernel: BuildResult) -> None:
    """The guest cannot finish a 3 s measurement and send its files within 3.01 s."""
    out = tmp_path / "out"
    proc = _board_run(rtgate_process, rt_kernel.out, out, scenario="idle", duration="3",
                      root=_root(tmp_path, run_margin_s=0.01))
    assert proc.returncode == 3, proc.stderr
    assert "timed out waiting for the end of idle" in proc.stderr
    assert "RTGATE-MEASURE-START" in (out / "console.log").read_text(errors="replace")
    assert not (out / "result.json").exists()


def test_sigterm_stops_the_emulator_and_is_incomplete(tmp_path: Path,
                                                     rt_kernel: BuildResult) -> None:
    """A cancelled CI job sends SIGTERM: the guest's emulator (its own session, so not in the
    job's process group) must not outlive rtgate and load the lab for the next job."""
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-m", "rtgate", "board", "run", "--board", "qemu-arm64", "--kernel",
         str(rt_kernel.out), "--scenario", "idle", "--duration", "120", "--out", str(out)],
        stderr=subprocess.PIPE, text=True)
    emulators: list[int] = []
    try:
        deadline = time.monotonic() + 600
        while "RTGATE-MEASURE-START" not in _text(out / "console.log"):
            assert proc.poll() is None and time.monotonic() < deadline, _text(out / "console.log")
            time.sleep(0.5)
        children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
        emulators = [int(c) for c in children
                     if "qemu-system" in Path(f"/proc/{c}/cmdline").read_text(errors="replace")]
        assert emulators
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=60)
        assert proc.returncode == 3, stderr
        assert "interrupted by SIGTERM" in stderr
        for pid in emulators:
            with pytest.raises(ProcessLookupError):
                os.kill(pid, 0)
        assert "RTGATE-MEASURE-START" in _text(out / "console.log")
    finally:
        proc.kill()
        for pid in emulators:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _text(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""


def test_guest_server_that_never_listens_is_infra(rtgate_process: RunProcess,
                                                  tmp_path: Path, rt_kernel: BuildResult) -> None:
    scenario = tmp_path / "deaf.yml"
    scenario.write_text(yaml.safe_dump({
        "name": "deaf", "description": "a server load that never listens", "warmup_s": 0,
        "loads": [{"name": "deaf-server", "argv": ["sleep", "60"], "listens_on": "{port}"}]}))
    out = tmp_path / "out"
    proc = _board_run(rtgate_process, rt_kernel.out, out, scenario=str(scenario), duration="1")
    assert proc.returncode == 3, proc.stderr
    assert "in the guest: load 'deaf-server' does not listen on port 5201" in proc.stderr
