"""The lava board through a real LAVA lab: Debian 12's lava-server and lava-dispatcher in a
throwaway container (docker/lava.sh), its aarch64 `qemu` device booting the cached qemu-arm64 RT
kernel with rtgate's initramfs, driven through `rtgate board run`.

A job that cannot boot must be exit 3 naming the job's URL, with LAVA's log kept.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

from rtgate import paths
from rtgate.bench.loads import free_port
from rtgate.kernel.build import BuildResult
from rtgate.kernel.source import sha256_file
from rtgate.result import load_result

pytestmark = [pytest.mark.integration, pytest.mark.kernel, pytest.mark.timeout(2400)]

LAB = paths.ROOT / "docker" / "lava.sh"


@pytest.fixture(scope="module")
def lab() -> Iterator[tuple[int, str]]:
    """A running LAVA lab: (its published API port, the admin token)."""
    name, port, token = f"rtgate-lava-{uuid.uuid4().hex[:8]}", free_port(), secrets.token_hex(20)
    proc = subprocess.run([str(LAB), "start", name, str(port), token], capture_output=True,
                          text=True, timeout=3600)
    try:
        assert proc.returncode == 0, proc.stderr[-4000:]
        yield port, token
    finally:
        subprocess.run([str(LAB), "stop", name], capture_output=True, timeout=120)


@pytest.fixture(scope="module")
def rt_kernel(kernel_build: Callable[[str, str], BuildResult]) -> BuildResult:
    return kernel_build("qemu-arm64", "rt")


def _root(tmp_path: Path, port: int, **context: object) -> Path:
    """An RTGATE_ROOT whose lava-qemu board points at the lab on ``port``."""
    root = tmp_path / "rtgate-root"
    (root / "bench" / "boards").mkdir(parents=True)
    for data in ("scenarios", "lava"):
        (root / "bench" / data).symlink_to(paths.ROOT / "bench" / data)
    board = yaml.safe_load((paths.BOARDS / "lava-qemu.yml").read_text())
    board["options"]["server"] = f"http://127.0.0.1:{port}"
    board["options"]["context"].update(context)
    (root / "bench" / "boards" / "lava-qemu.yml").write_text(yaml.safe_dump(board))
    return root


def _board_run(kernel: Path, out: Path, root: Path, token: str,
               duration: str = "5") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RTGATE_ROOT": str(root), "RTGATE_LAVA_TOKEN": token}
    return subprocess.run(
        [sys.executable, "-m", "rtgate", "board", "run", "--board", "lava-qemu",
         "--kernel", str(kernel), "--scenario", "idle", "--duration", duration,
         "--out", str(out)], env=env, capture_output=True, text=True, timeout=1800)


def _log(out: Path) -> str:
    path = out / "lava-job.log"
    return path.read_text(errors="replace")[-4000:] if path.is_file() else "(no job log)"


def test_rt_kernel_measured_in_a_lava_job(tmp_path: Path, lab: tuple[int, str],
                                         rt_kernel: BuildResult) -> None:
    port, token = lab
    out = tmp_path / "out"
    proc = _board_run(rt_kernel.out, out, _root(tmp_path, port), token)
    assert proc.returncode == 0, proc.stderr[-3000:] + _log(out)

    result = load_result(out / "result.json")
    assert result.board.name == "lava-qemu" and result.board.virtual is True
    assert result.kernel.release == rt_kernel.kernel_release
    assert result.kernel.preempt_rt is True and result.kernel.machine == "aarch64"
    assert result.status == "complete" and result.totals.samples > 0
    assert len(result.threads) == result.environment["cpus_online"] == 2
    # Block maxima, reduced in the job by busybox awk, agree with the histogram the controller
    # parsed from the raw files the job printed.
    for t in result.threads:
        assert t.blocks is not None and t.blocks.cycles == t.samples > 0
        assert max(t.blocks.maxima_us) == t.max_us
        assert t.blocks.block_cycles == 1000  # -i1000: one second
    # The images the job fetched are the ones measured.
    images = json.loads((out / "lava-images.json").read_text())
    assert images["sha256"]["Image"] == sha256_file(rt_kernel.out / "Image")
    assert f"127.0.0.1:{port}/scheduler/job/" in images["job"]
    assert "RTGATE-MEASURE-START" in (out / "lava-job.log").read_text()


def test_a_job_that_cannot_boot_is_an_infrastructure_failure(
        tmp_path: Path, lab: tuple[int, str], rt_kernel: BuildResult) -> None:
    port, token = lab
    broken = tmp_path / "broken-kernel"
    shutil.copytree(rt_kernel.out, broken)
    (broken / "Image").write_bytes(b"\0" * 4096)  # no kernel: the device never prints anything
    out = tmp_path / "out"
    proc = _board_run(broken, out, _root(tmp_path, port, boot_timeout_s=30), token)
    assert proc.returncode == 3, proc.stderr[-3000:]
    assert f"http://127.0.0.1:{port}/scheduler/job/" in proc.stderr
    assert "LAVA job incomplete" in proc.stderr
    assert (out / "lava-job.log").is_file() and not (out / "result.json").exists()
