"""The kernel builder image, built with the local dockerd from a debootstrapped base, and the
docker runtime producing the same .config as the host runtime."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration


def rtgate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rtgate", *args], capture_output=True,
                          text=True, timeout=1800)


def docker_run(image: str, *argv: str) -> str:
    proc = subprocess.run(["docker", "run", "--rm", "--network", "none", image, *argv],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_builder_image_has_the_toolchain_and_rtgate(builder_image: str) -> None:
    base = subprocess.run(["docker", "image", "inspect", "debian:bookworm-slim"],
                          capture_output=True)
    if base.returncode != 0:
        # No Docker Hub image here: the base must be the debootstrapped one.
        history = subprocess.run(["docker", "image", "history", "--no-trunc", builder_image],
                                 capture_output=True, text=True, check=True).stdout
        assert "Imported from -" in history
    assert "aarch64-linux-gnu-gcc (Debian 12" in docker_run(builder_image,
                                                           "aarch64-linux-gnu-gcc", "--version")
    assert "ccache version" in docker_run(builder_image, "ccache", "--version")
    plan = json.loads(docker_run(builder_image, "rtgate", "kernel", "plan", "--board", "rpi5",
                                 "--flavor", "rt"))
    assert plan["board"]["image_name"] == "kernel_2712.img"


def test_docker_runtime_gives_the_host_config(builder_image: str, tmp_path: Path) -> None:
    configs = {}
    for runtime in ("host", "docker"):
        out = tmp_path / runtime
        proc = rtgate("kernel", "build", "--board", "qemu-arm64", "--flavor", "rt",
                      "--runtime", runtime, "--config-only", "--quiet", "--out", str(out))
        assert proc.returncode == 0, proc.stderr
        assert json.loads((out / "metadata.json").read_text())["runtime"] == runtime
        configs[runtime] = (out / ".config").read_text()
    assert "CONFIG_PREEMPT_RT=y" in configs["docker"]
    assert configs["docker"] == configs["host"]


def test_both_runtimes_plan_the_same_build(builder_image: str) -> None:
    # Same toolchain versions in the image as on the host: a kernel built by one is a cache hit
    # for the other.
    keys = {}
    for runtime in ("host", "docker"):
        proc = rtgate("kernel", "plan", "--board", "qemu-arm64", "--flavor", "rt",
                      "--runtime", runtime)
        assert proc.returncode == 0, proc.stderr
        keys[runtime] = json.loads(proc.stdout)["cache_key"]
    assert keys["docker"] == keys["host"]
