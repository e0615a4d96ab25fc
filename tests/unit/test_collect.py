"""The one collect step (rtgate.board.collect): every driver hands a RawRun to it, and what it
writes is, byte for byte, what each driver's own collect() wrote before (tests/data/collect/,
written by those drivers at commit 21e3507: make_golden_old.py); it alone assembles results and
makes run ids (an AST check over the package that can fail)."""

from __future__ import annotations

import ast
import shutil
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from rtgate.board import drivers
from rtgate.board.base import BoardDriver, KernelArtifacts
from rtgate.board.collect import collect
from rtgate.board.lava.driver import LavaBoard
from rtgate.board.peer import split
from rtgate.board.qemu import driver as qemu_driver
from rtgate.board.qemu.driver import QemuBoard
from rtgate.board.qemu.guestenv import GuestFacts
from rtgate.board.rawrun import PeerLoad, RawRun
from rtgate.board.rpi5 import driver as rpi5_driver
from rtgate.board.rpi5.driver import PiRun, Rpi5Board
from rtgate.board.rpi5.session import RunningKernel
from rtgate.board.spec import load_board
from rtgate.board.tuning import Applied, load_profile, parse_readback
from rtgate.cyclictest.command import CyclictestCommand, CyclictestSpec, build
from rtgate.cyclictest.command import build as build_command
from rtgate.cyclictest.version import parse_help
from rtgate.harness import plan as harness_plan
from rtgate.harness.plan import Plan
from rtgate.harness.runner import RunLog
from rtgate.harness.scenario import load_scenario
from rtgate.tools import cyclictest as cyclictest_tool

ROOT = Path(__file__).resolve().parents[2]
HERE = ROOT / "tests" / "data" / "collect"
START = datetime(2026, 11, 22, 19, 33, 55, tzinfo=UTC)
END = START + timedelta(seconds=3)
KERNEL = KernelArtifacts(dir=Path("/k"), image=Path("/k/Image"), release="6.12.117-rt",
                         flavor="rt", uts_version="#1 SMP PREEMPT_RT")
READBACK_END = parse_readback((HERE / "READBACK_END").read_text())


@pytest.fixture(autouse=True)
def _measured_in_us(monkeypatch: pytest.MonkeyPatch) -> None:
    """The golden runs were measured in whole µs, before -N became the harness's default."""
    def in_us(spec: CyclictestSpec, *args: Any, **kwargs: Any) -> CyclictestCommand:
        return build_command(spec.model_copy(update={"nsecs": False}), *args, **kwargs)
    for module in (cyclictest_tool, harness_plan, rpi5_driver):
        monkeypatch.setattr(module, "build", in_us)
    monkeypatch.setitem(globals(), "build", in_us)


def _run_dir(case: str, tmp_path: Path) -> Path:
    out = tmp_path / case
    shutil.copytree(HERE / case / "in", out)
    return out


def _as_before(raw: RawRun, case: str) -> None:
    measured = collect(raw)
    assert measured.result_path == raw.out / "result.json"
    written = measured.result_path.read_text().replace(str(raw.out.resolve()), "OUT")
    assert written == (HERE / case / "result.json").read_text()


def test_a_qemu_guests_tuned_run_collects_as_before(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    out = _run_dir("qemu-net-tuned", tmp_path)
    monkeypatch.setattr(qemu_driver, "controller_cpus", lambda: 4)
    monkeypatch.setattr(QemuBoard, "_readback", lambda self, **kw: READBACK_END)
    board = QemuBoard.__new__(QemuBoard)
    spec = load_board("qemu-arm64")
    board.spec, board.opts, board.workdir, board.kernel = spec, spec.options, out, KERNEL
    board.profile = load_profile("isolated")
    board.facts = GuestFacts({p.name: p.read_text() for p in (out / "meta").iterdir()})
    board.host_port = 5999
    assert board.tuned is not None
    board.tuning_checks = board.tuned.verify(READBACK_END, "boot")
    plan, _ = board._plans("net", 3, None, tmp_path / "scratch", (out / "raw").resolve())
    peer = [PeerLoad(name="iperf3-client", command=["iperf3", "-c", "127.0.0.1"],
                     early_exit=1, early_after_s=1.5, died_at=START + timedelta(seconds=2))]
    raw = board._left(out, plan, RunLog(start=START, end=END), peer, None)
    assert raw.tuning is not None and raw.tuning.end == READBACK_END
    _as_before(raw, "qemu-net-tuned")


def test_a_lava_jobs_run_collects_as_before(tmp_path: Path) -> None:
    out = _run_dir("lava-cpu", tmp_path)
    board = LavaBoard.__new__(LavaBoard)
    spec = load_board("lava-qemu")
    board.spec, board.opts, board.workdir, board.kernel = spec, spec.options, out, KERNEL
    board.caps, board.finished = parse_help((out / "meta" / "cyclictest-help").read_text()), 4711
    plan = board._plan("cpu", 3, None)
    plan = replace(plan, cyclictest=replace(plan.cyclictest, histfile=None))
    raw = board._left(out, plan, RunLog(start=START, end=END), None)
    assert raw.strict and raw.job == 4711
    _as_before(raw, "lava-cpu")


def test_a_pis_run_with_its_claims_throttling_and_tuning_collects_as_before(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = _run_dir("rpi5-net", tmp_path)
    monkeypatch.setattr(rpi5_driver.tuning, "readback", lambda pi, tuned: READBACK_END)
    board = Rpi5Board.__new__(Rpi5Board)
    spec = load_board("rpi5")
    board.spec, board.kernel, board.pi = spec, KERNEL, None
    board.tuned = Applied(load_profile("isolated"), spec.name, 4)
    board.tuning_checks = board.tuned.verify(READBACK_END, "boot")
    scenario, source = load_scenario("net")
    on_board, _ = split(scenario, spec.options.peer, spec.options.peer.board_port)
    on_board = board.tuned.pin(on_board)
    caps = parse_help((ROOT / "tests" / "data" / "help" / "cyclictest-2.40.txt").read_text())
    command = build(on_board.cyclictest, caps, duration_s=3,
                    outdir=str((out / "raw").resolve()), source=source)
    plan = Plan(scenario.name, source, replace(command, histfile=None), [], scenario.warmup_s,
                3, scenario.scale)
    ran = PiRun(plan=plan, start=START, end=END + timedelta(seconds=2),
               peer_loads=[PeerLoad(name="iperf3-client", command=["iperf3", "-c", "rpi5"],
                                    early_exit=1, early_after_s=4.0,
                                    died_at=END + timedelta(seconds=1))],
               board_exit=0, cyclictest_version="2.40",
               kernel=RunningKernel(release="6.12.117-rt", version="#1 SMP PREEMPT_RT",
                                    machine="aarch64", realtime=None),
               tool_sha256={"cyclictest": "a" * 64}, board_loads=on_board.loads,
               privileges={"route": "capabilities", "user": "rtgate", "loads_as": "rtgate"},
               throttled=(0x0, 0x50005))
    raw = board._left(out, ran, None)
    assert raw.claims is not None and raw.claims.status == "degraded"
    _as_before(raw, "rpi5-net")


# -- the collect step is the only one ------------------------------------------------------

ONLY_THERE = {"assemble", "run_id", "RunInfo"}
"""What rtgate.harness.assemble makes that only the collect step may use."""


def takers(root: Path) -> dict[str, set[str]]:
    """Module → the names of ONLY_THERE it imports from rtgate.harness.assemble (or reaches
    through the module)."""
    found: dict[str, set[str]] = {}
    for path in sorted((root / "rtgate").rglob("*.py")):
        module = ".".join(path.relative_to(root).with_suffix("").parts)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "rtgate.harness.assemble":
                names |= {a.name for a in node.names} & ONLY_THERE
            elif isinstance(node, ast.ImportFrom) and node.module == "rtgate.harness" and any(
                    a.name == "assemble" for a in node.names):
                names.add("assemble")
            elif isinstance(node, ast.Import) and any(
                    a.name == "rtgate.harness.assemble" for a in node.names):
                names.add("assemble")
        if names and module != "rtgate.harness.assemble":
            found[module] = names
    return found


def test_only_the_collect_step_assembles_results_and_makes_run_ids() -> None:
    assert takers(ROOT) == {"rtgate.board.collect": ONLY_THERE}


def test_the_check_names_a_driver_that_assembles_by_itself(tmp_path: Path) -> None:
    for name, text in {
            "rtgate/board/collect.py": "from rtgate.harness.assemble import RunInfo, assemble,"
                                       " run_id\n",
            "rtgate/board/qemu/driver.py": "from rtgate.harness.assemble import run_id\n",
            "rtgate/board/lava/driver.py": "from rtgate.harness import assemble\n",
            "rtgate/board/loadreport.py": "from rtgate.harness.assemble import exit_text\n",
    }.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert takers(tmp_path) == {"rtgate.board.collect": ONLY_THERE,
                                "rtgate.board.qemu.driver": {"run_id"},
                                "rtgate.board.lava.driver": {"assemble"}}


@pytest.mark.parametrize("where", sorted(drivers.DRIVERS.values()))
def test_no_driver_collects(where: str) -> None:
    module, name = where.split(":")
    driver: type[BoardDriver] = getattr(__import__(module, fromlist=[name]), name)
    assert not hasattr(driver, "collect"), f"{where} collects by itself"
