"""Shared fixtures. Add yours; do not rewrite others'."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from rtgate import paths
from rtgate.kernel.build import BuildResult, build
from rtgate.kernel.runtime import BUILDER_IMAGE


@pytest.fixture(scope="session")
def kernel_build(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, str], BuildResult]:
    """kernel_build(board, flavor): a real kernel, built at most once per test session.

    The two real builds (qemu-arm64 stock and rt) are the slowest thing in the suite; every test
    that needs a kernel shares them, and the artifact cache (keyed by the plan) makes later
    sessions on the same machine a copy.
    """
    outdir = tmp_path_factory.mktemp("kernels")
    built: dict[tuple[str, str], BuildResult] = {}

    def get(board: str, flavor: str) -> BuildResult:
        if (board, flavor) not in built:
            built[board, flavor] = build(board, flavor, out=Path(outdir) / f"{board}-{flavor}",
                                         progress=False)
        return built[board, flavor]

    return get


@pytest.fixture(scope="session")
def builder_image() -> str:
    """The kernel builder image (docker/kernel-builder.sh), for the docker runtime's tests."""
    # Starts dockerd when none answers; layers are cached, so a second session is quick.
    proc = subprocess.run([str(paths.ROOT / "docker" / "kernel-builder.sh"), BUILDER_IMAGE],
                          capture_output=True, text=True, timeout=3600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert proc.stdout.strip() == BUILDER_IMAGE
    return BUILDER_IMAGE
