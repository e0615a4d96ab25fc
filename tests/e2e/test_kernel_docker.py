"""The kernel builder image, built with the local dockerd from a debootstrapped base, and the
docker runtime producing the same .config as the host runtime."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from clirun import RunCli
from steps import ROOT, step

pytestmark = pytest.mark.integration


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


def test_docker_runtime_gives_the_host_config(rtgate_cli: RunCli,
                                              builder_image: str, tmp_path: Path) -> None:
    configs = {}
    for runtime in ("host", "docker"):
        out = tmp_path / runtime
        proc = rtgate_cli("kernel", "build", "--board", "qemu-arm64", "--flavor", "rt",
                          "--runtime", runtime, "--config-only", "--quiet", "--out", str(out))
        assert proc.returncode == 0, proc.stderr
        assert json.loads((out / "metadata.json").read_text())["runtime"] == runtime
        configs[runtime] = (out / ".config").read_text()
    assert "CONFIG_PREEMPT_RT=y" in configs["docker"]
    assert configs["docker"] == configs["host"]


def test_both_runtimes_plan_the_same_build(rtgate_cli: RunCli, builder_image: str) -> None:
    # Same toolchain versions in the image as on the host: a kernel built by one is a cache hit
    # for the other.
    keys = {}
    for runtime in ("host", "docker"):
        proc = rtgate_cli("kernel", "plan", "--board", "qemu-arm64", "--flavor", "rt",
                          "--runtime", runtime)
        assert proc.returncode == 0, proc.stderr
        keys[runtime] = json.loads(proc.stdout)["cache_key"]
    assert keys["docker"] == keys["host"]


RUNNER_UID = 1001  # GitHub-hosted runners' user


def _bash(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=1200)


def test_the_kernels_workflow_builds_offline_as_the_runners_user(builder_image: str,
                                                                 tmp_path: Path) -> None:
    """kernels.yml's build and delivery steps (a pull request's kernel for LAVA boards, on
    GitHub-hosted runners): the source is fetched in one container; kbuild, which runs the pull
    request's Makefiles, in another with no network, as the runner's user, writing only
    cache/; the upload's directory is written by `rtgate kernel deliver` alone. Config-only
    here: compiling is test_kernel_build's."""
    workflow = ROOT / ".github" / "workflows" / "kernels.yml"
    script = step(workflow, "Build the kernel inside the builder image")["run"]
    deliver = step(workflow, "Deliver the kernel")["run"]
    upload = step(workflow, "Upload the kernel")["with"]
    assert upload["path"] == "delivery/${{ matrix.board }}-${{ matrix.flavor }}"
    assert script.count("--runtime host --quiet") == 1
    fetch, build = script.split("docker run")[1:]
    assert "rtgate kernel build" in build and "--network none" in build
    assert "setpriv --reuid" in build and "--network" not in fetch
    assert "--cap-drop ALL" in build and "no-new-privileges" in build
    assert ":/out" not in build  # the delivery directory is not mounted where kbuild runs
    script = script.replace("--runtime host --quiet", "--runtime host --quiet --config-only")
    # The suite runs as root: `id` answers as GitHub's runner user would, whose workspace it is.
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "id").write_text(f"#!/bin/sh\necho {RUNNER_UID}\n")
    (shim / "id").chmod(0o755)
    ws = tmp_path / "ws"
    ws.mkdir()
    os.chown(ws, RUNNER_UID, RUNNER_UID)
    env = {"PATH": f"{shim}:{os.environ['PATH']}", "HOME": str(tmp_path), "BOARD": "qemu-arm64",
           "FLAVOR": "rt", "BUILDER_IMAGE": builder_image}
    proc = _bash(script, ws, env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    # What the step's `mkdir -p delivery` makes as the runner's user.
    (ws / "delivery").mkdir()
    os.chown(ws / "delivery", RUNNER_UID, RUNNER_UID)
    proc = _bash(deliver, ws, env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = ws / "delivery" / "qemu-arm64-rt"
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["config_only"] and meta["plan"]["source"]["kind"] == "debian"
    assert sorted(p.name for p in out.iterdir()) == [".config", "build.log", "metadata.json"]
    assert "CONFIG_PREEMPT_RT=y" in (out / ".config").read_text()
    # Written by the runner's user, not root: the build ran unprivileged.
    assert {p.lstat().st_uid for p in out.iterdir()} == {RUNNER_UID}
    assert {p.lstat().st_uid for p in (ws / "cache").rglob("*")} == {RUNNER_UID}

    # What a pull request's Makefiles could leave in the build's output: delivery refuses it,
    # by name, and the upload then finds nothing.
    built = ws / "cache" / "out" / "qemu-arm64-rt"
    (built / "leak").symlink_to("/proc/self/environ")
    (built / ".tmpdir").symlink_to(ws)
    shutil.rmtree(ws / "delivery" / "qemu-arm64-rt")
    proc = _bash(deliver, ws, env)
    assert proc.returncode == 3
    assert "leak (a symbolic link)" in proc.stderr and ".tmpdir (a symbolic link)" in proc.stderr
    assert not (ws / "delivery" / "qemu-arm64-rt").exists()
