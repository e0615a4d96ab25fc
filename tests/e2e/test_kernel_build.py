"""Real builds of qemu-arm64 stock and rt (shared per session by the kernel_build fixture),
booted in qemu-system-aarch64 far enough to print the version banner."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from clirun import RunProcess

from rtgate.kernel.build import BuildResult
from rtgate.kernel.kconfig import parse_config
from rtgate.kernel.source import sha256_file

pytestmark = [pytest.mark.kernel, pytest.mark.integration]
Build = Callable[[str, str], BuildResult]


def boot_banner(image: Path, timeout: float = 300.0) -> str:
    """Boot the Image (no initramfs) and return the `Linux version` line from the serial console.

    Mainline 6.12 has no /sys/kernel/realtime, and the banner is printed before anything
    can go wrong in userland: it is the earliest proof of what kernel is running.
    """
    argv = ["qemu-system-aarch64", "-M", "virt", "-cpu", "cortex-a76", "-smp", "2", "-m", "1G",
            # No NIC: virt's default one wants an option ROM from ipxe-qemu, which
            # qemu-system-arm only recommends (a fresh install lacks it).
            "-nographic", "-no-reboot", "-nic", "none", "-kernel", str(image), "-append",
            "console=ttyAMA0 panic=-1"]
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, errors="replace")
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    seen: list[str] = []
    try:
        for line in proc.stdout:
            seen.append(line)
            if "Linux version" in line:
                return line.strip()
            if time.monotonic() > deadline:
                break
    finally:
        proc.kill()
        proc.wait()
    pytest.fail("no version banner on the serial console; last lines:\n" + "".join(seen[-20:]))


@pytest.mark.parametrize("flavor", ["rt", "stock"])
def test_build_outputs_and_metadata(kernel_build: Build, flavor: str) -> None:
    result = kernel_build("qemu-arm64", flavor)
    meta = json.loads(result.metadata.read_text())
    assert meta["schema"] == "rtgate/kernel-build/v1"
    assert meta["plan"]["flavor"] == flavor
    assert meta["kernel_release"] == result.kernel_release
    assert result.kernel_release.startswith("6.12.")
    assert meta["build_seconds"] > 0
    assert set(meta["outputs"]) == {"Image", ".config"}
    for name, digest in meta["outputs"].items():
        assert sha256_file(result.out / name) == digest
    assert result.image is not None and result.image.stat().st_size > 1_000_000
    assert "Linux/arm64" in result.config.read_text()


def test_preempt_rt_only_in_rt(kernel_build: Build) -> None:
    rt = parse_config(kernel_build("qemu-arm64", "rt").config)
    stock = parse_config(kernel_build("qemu-arm64", "stock").config)
    assert rt["CONFIG_PREEMPT_RT"] == "y"
    assert stock.get("CONFIG_PREEMPT_RT") is None
    assert "PREEMPT_RT" in (kernel_build("qemu-arm64", "rt").uts_version or "")
    assert "PREEMPT_RT" not in (kernel_build("qemu-arm64", "stock").uts_version or "")


@pytest.mark.parametrize("flavor", ["rt", "stock"])
def test_image_boots_to_its_version_banner(kernel_build: Build, flavor: str) -> None:
    result = kernel_build("qemu-arm64", flavor)
    assert result.image is not None
    banner = boot_banner(result.image)
    assert result.kernel_release in banner
    assert ("PREEMPT_RT" in banner) == (flavor == "rt"), banner


def test_rebuild_is_a_cache_hit(rtgate_process: RunProcess,
                                kernel_build: Build, tmp_path: Path) -> None:
    first = kernel_build("qemu-arm64", "rt")
    proc = rtgate_process("kernel", "build", "--board", "qemu-arm64", "--flavor", "rt", "--quiet",
                          "--out", str(tmp_path / "again"), timeout=600)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["cache_hit"] is True
    assert report["cache_key"] == first.plan.cache_key
    assert (tmp_path / "again" / "Image").read_bytes() == first.image.read_bytes()
    assert json.loads((tmp_path / "again" / "metadata.json").read_text())["cache_hit"] is True
