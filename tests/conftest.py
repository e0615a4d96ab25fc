"""Shared fixtures. Add yours; do not rewrite others'.

Tiers: tests/unit (no external program; tests/unit/conftest.py enforces it), tests/integration
(real tools, seconds each), tests/e2e (kernels, containers, guests, LAVA).

Lanes: `make test` runs the suite on two pytest-xdist workers (`--dist loadgroup`). The e2e
modules, and the integration modules that measure latency on this host, run in two fixed lanes,
one worker each: `measuring` (one latency measurement at a time: a guest, LAVA's jobs, cyclictest
under load here) and `containers` (the fresh machine, kernel trees, image builds, installs:
mostly downloads, unpacking and waiting). Every other module is one unit that either worker
takes when it has room. The fresh machine's `make demo` measures beside the other lane: 20 s of
`net` needs 1000 of its ~40 000 samples, which only a host many times oversubscribed denies it.
Without xdist (`make check`, a file run by hand) the lanes mean nothing.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from clirun import RunCli, RunProcess, as_process, in_process
from xdist.remote import Producer
from xdist.scheduler import LoadScopeScheduling

from rtgate import paths
from rtgate.kernel.build import BuildResult, build
from rtgate.kernel.runtime import BUILDER_IMAGE

ROOT = Path(__file__).resolve().parent
# Module -> lane, with each module's warm time in the full run of 2026-11-25 (docs/journal.md):
# the two lanes' sums are kept near each other, and the longer one (measuring) bounds `make test`.
LANES = {
    # One measurement at a time: QEMU under TCG takes both cores while it boots and under load,
    # a starved guest's cyclictest falls short of its samples, and the latencies are what these
    # tests judge.
    "e2e/test_bisect_qemu.py": "measuring",  # ~4 min (10 s rounds)
    "e2e/test_lava.py": "measuring",  # 8.5 min, one LAVA lab for its 7 tests
    "e2e/test_trace_qemu.py": "measuring",  # 2 min
    "e2e/test_act_gate.py": "measuring",  # 0.8 min, the qemu-arm64 job boots a guest
    "e2e/test_qemu_board.py": "measuring",
    "e2e/test_pipeline_qemu.py": "measuring",
    "e2e/test_timerlat_qemu.py": "measuring",
    "e2e/test_osnoise_qemu.py": "measuring",  # boots a guest, measures 10 s with rtla osnoise
    "e2e/test_sweep_qemu.py": "measuring",
    "e2e/test_kernel_build.py": "measuring",  # boots each kernel to its banner
    "e2e/test_guest_network.py": "measuring",  # boots a guest and runs iperf3 through it
    "integration/test_rpi5_ssh.py": "measuring",  # 1.8 min, the fake Pi is this host
    "integration/test_ab_local.py": "measuring",
    "integration/test_bench_integration.py": "measuring",
    "integration/test_isolation.py": "measuring",
    "integration/test_blocks_cyclictest.py": "measuring",
    "integration/test_cyclictest_histfile.py": "measuring",  # two 0.1 s runs at FIFO 99
    "integration/test_tuning_local.py": "measuring",
    "integration/test_pipeline_local.py": "measuring",
    # The publisher under act on a 3 s measurement of this machine (four act runs, ~70 s).
    "integration/test_act_publish.py": "measuring",
    "integration/test_board_local.py": "measuring",
    "integration/test_board_peer_loads.py": "measuring",
    "integration/test_trace_breaktrace_local.py": "measuring",
    "integration/test_trace_rpi5.py": "measuring",
    # Three booted Debian containers set up by the lab's playbook; the Pis' pipelines measure.
    "e2e/test_lab_ansible.py": "measuring",
    # Containers, kernel trees and installs: mostly downloads, unpacking and waiting.
    "e2e/test_fresh_machine.py": "containers",  # 6.9 min
    "e2e/test_kernel_config.py": "containers",  # 3 min
    "e2e/test_kernel_docker.py": "containers",  # 1.8 min
    "e2e/test_kernel_cache.py": "containers",
    "e2e/test_install.py": "containers",
    "e2e/test_lava_store.py": "containers",
    "e2e/test_initramfs_build.py": "containers",
    "e2e/test_build_isolation.py": "containers",
    "integration/test_builder_wrapper.py": "containers",
}
missing = [name for name in LANES if not (ROOT / name).is_file()]
assert not missing, f"tests/conftest.py LANES names modules that do not exist: {missing}"
# Every e2e module boots, builds or installs: one left out would run beside the guests.
unlaned = [p.relative_to(ROOT).as_posix() for p in sorted((ROOT / "e2e").glob("test_*.py"))
           if p.relative_to(ROOT).as_posix() not in LANES]
assert not unlaned, f"tests/conftest.py LANES has no lane for: {unlaned}"


def lane_of(nodeid: str) -> str:
    module = nodeid.split("::")[0].removeprefix("tests/")
    return LANES.get(module, module)


class LaneScheduling(LoadScopeScheduling):
    """xdist's scope scheduling with a test's scope its lane, else its module: a module's tests
    stay on one worker, in order, sharing its module-scoped fixtures."""

    def _split_scope(self, nodeid: str) -> str:
        return lane_of(nodeid)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Producer) -> LaneScheduling | None:
    # Our groups are the lanes (xdist's own loadgroup reads `xdist_group` markers through a
    # node id pytest 9.2 no longer lets it rewrite); any other --dist is xdist's.
    if config.getvalue("dist") != "loadgroup":
        return None
    # Units in collection order, not by their number of tests: tests/e2e is collected first, so
    # the two lanes start at once, one on each worker, and the modules follow.
    config.option.loadscopereorder = False
    return LaneScheduling(config, log)


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
