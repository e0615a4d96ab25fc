"""Shared fixtures. Add yours; do not rewrite others'.

Tiers: tests/unit (no external program; tests/unit/conftest.py enforces it), tests/integration
(real tools, seconds each), tests/e2e (kernels, containers, guests, LAVA).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from clirun import RunCli, RunProcess, as_process, in_process

from rtgate import paths
from rtgate.kernel.build import BuildResult, build
from rtgate.kernel.runtime import BUILDER_IMAGE


@pytest.fixture(scope="session")
def rtgate_cli() -> RunCli:
    """rtgate_cli(*args, cwd=, env=): `rtgate ARGS` in this process through rtgate.cli.main,
    returning a CompletedProcess (exit code, stdout, stderr). ``env`` adds variables for the call
    (None unsets one). Another data root needs rtgate_process (tests/clirun.py says why)."""
    return in_process


@pytest.fixture(scope="session")
def rtgate_process() -> RunProcess:
    """rtgate_process(*args, cwd=, env=, timeout=): `python -m rtgate ARGS` as a process, only for
    what needs one: signals, start-up (imports, sys.modules), another data root."""
    return as_process


@pytest.fixture
def no_ci_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """No CI variables from the environment running the tests (GITHUB_*): provenance and
    context are what a test sets."""
    for name in [n for n in os.environ if n.startswith("GITHUB_")]:
        monkeypatch.delenv(name)


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
