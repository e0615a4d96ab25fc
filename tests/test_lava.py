"""The lava board through a real LAVA lab: Debian 12's lava-server and lava-dispatcher in a
throwaway container (docker/lava.sh), its aarch64 `qemu` device booting the cached qemu-arm64 RT
kernel with rtgate's initramfs, driven through `rtgate board run`.

A job that cannot boot, or that finds no device within the queue timeout, must be exit 3
naming the job's URL, with LAVA's log kept.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Lab:
    name: str
    port: int
    token: str

    def device_health(self, health: str) -> None:
        proc = subprocess.run(["docker", "exec", self.name, "lava-server", "manage", "devices",
                               "update", "--health", health, "qemu-01"],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr


@pytest.fixture(scope="module")
def lab() -> Iterator[Lab]:
    """A running LAVA lab with one aarch64 qemu device, qemu-01."""
    lab = Lab(f"rtgate-lava-{uuid.uuid4().hex[:8]}", free_port(), secrets.token_hex(20))
    proc = subprocess.run([str(LAB), "start", lab.name, str(lab.port), lab.token],
                          capture_output=True, text=True, timeout=3600)
    try:
        assert proc.returncode == 0, proc.stderr[-4000:]
        yield lab
    finally:
        subprocess.run([str(LAB), "stop", lab.name], capture_output=True, timeout=120)


@pytest.fixture(scope="module")
def rt_kernel(kernel_build: Callable[[str, str], BuildResult]) -> BuildResult:
    return kernel_build("qemu-arm64", "rt")


def _root(tmp_path: Path, port: int, *, queue_timeout_s: float = 300,
          **context: object) -> Path:
    """An RTGATE_ROOT whose lava-qemu board points at the lab on ``port``."""
    root = tmp_path / "rtgate-root"
    (root / "bench" / "boards").mkdir(parents=True)
    for data in ("scenarios", "lava"):
        (root / "bench" / data).symlink_to(paths.ROOT / "bench" / data)
    board = yaml.safe_load((paths.BOARDS / "lava-qemu.yml").read_text())
    board["options"]["server"] = f"http://127.0.0.1:{port}"
    board["options"]["context"].update(context)
    board["options"]["queue_timeout_s"] = queue_timeout_s
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


def test_rt_kernel_measured_in_a_lava_job(tmp_path: Path, lab: Lab,
                                         rt_kernel: BuildResult) -> None:
    port, token = lab.port, lab.token
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
        tmp_path: Path, lab: Lab, rt_kernel: BuildResult) -> None:
    port, token = lab.port, lab.token
    broken = tmp_path / "broken-kernel"
    shutil.copytree(rt_kernel.out, broken)
    (broken / "Image").write_bytes(b"\0" * 4096)  # no kernel: the device never prints anything
    out = tmp_path / "out"
    proc = _board_run(broken, out, _root(tmp_path, port, boot_timeout_s=30), token)
    assert proc.returncode == 3, proc.stderr[-3000:]
    assert f"http://127.0.0.1:{port}/scheduler/job/" in proc.stderr
    assert "LAVA job incomplete" in proc.stderr
    assert (out / "lava-job.log").is_file() and not (out / "result.json").exists()


def test_no_device_within_the_queue_timeout_cancels_the_job(
        tmp_path: Path, lab: Lab, rt_kernel: BuildResult) -> None:
    lab.device_health("MAINTENANCE")
    try:
        out = tmp_path / "out"
        proc = _board_run(rt_kernel.out, out, _root(tmp_path, lab.port, queue_timeout_s=15),
                          lab.token)
    finally:
        lab.device_health("GOOD")
    assert proc.returncode == 3, proc.stderr[-3000:]
    said = re.search(r"job (http://127\.0\.0\.1:\d+/scheduler/job/(\d+)) waited 15 s for a "
                     r"qemu device and was canceled", proc.stderr)
    assert said, proc.stderr[-3000:]
    job = json.loads(urllib.request.urlopen(urllib.request.Request(
        f"http://127.0.0.1:{lab.port}/api/v0.2/jobs/{said[2]}/",
        headers={"Authorization": f"Token {lab.token}"}), timeout=30).read())
    assert job["state"] in ("Canceling", "Finished") and job["health"] in ("Unknown", "Canceled")


def test_pipeline_through_lava_gives_the_qemu_boards_results(
        tmp_path: Path, lab: Lab, kernel_build: Callable[[str, str], BuildResult]) -> None:
    """`rtgate pipeline --board lava-qemu`: both flavors built (cache hits), measured in LAVA
    jobs, judged (no budget for the LAVA board in thresholds.yml: skipped) and compared."""
    for flavor in ("stock", "rt"):
        kernel_build("qemu-arm64", flavor)  # warm the cache: the pipeline's builds are copies
    out = tmp_path / "out"
    root = _root(tmp_path, lab.port)
    (root / "thresholds.yml").symlink_to(paths.THRESHOLDS)
    for data in ("kernel", "docker"):
        (root / data).symlink_to(paths.ROOT / data)
    proc = subprocess.run(
        [sys.executable, "-m", "rtgate", "pipeline", "--board", "lava-qemu", "--duration", "5s",
         "--allow-unbudgeted", "--out", str(out)],
        env={**os.environ, "RTGATE_ROOT": str(root), "RTGATE_LAVA_TOKEN": lab.token},
        capture_output=True, text=True, timeout=2400)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = {flavor: load_result(out / flavor / "idle" / "result.json")
               for flavor in ("stock", "rt")}
    for flavor, result in results.items():
        assert result.status == "complete" and result.board.virtual is True
        assert result.kernel.preempt_rt is (flavor == "rt")
        assert (out / flavor / "idle" / "lava-job.log").is_file()
    assert "virtual board, not a real-time claim" in (out / "comparison.md").read_text()
