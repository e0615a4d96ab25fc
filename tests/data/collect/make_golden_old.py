"""Writes tests/data/collect/*/result.json with the drivers' own collect() as they were before
the one collect step (commit 21e3507), from the run directories make_inputs.py writes:

    git worktree add /tmp/rtgate-old 21e3507
    PYTHONPATH=/tmp/rtgate-old python tests/data/collect/make_golden_old.py

The paths of each run's directory are written as OUT. tests/unit/test_collect.py feeds the same
runs through today's drivers and rtgate.board.collect and compares the bytes.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from unittest import mock

from rtgate.board.base import KernelArtifacts
from rtgate.board.lava.driver import LavaBoard
from rtgate.board.peer import split
from rtgate.board.qemu import driver as qemu_driver
from rtgate.board.qemu.driver import QemuBoard
from rtgate.board.qemu.guestenv import GuestFacts
from rtgate.board.rawrun import PeerLoad, RawRun, RunningKernel
from rtgate.board.rpi5 import driver as rpi5_driver
from rtgate.board.rpi5.driver import Rpi5Board
from rtgate.board.spec import load_board
from rtgate.board.tuning import Applied, load_profile, parse_readback
from rtgate.cyclictest.command import build
from rtgate.cyclictest.version import parse_help
from rtgate.harness.assemble import run_id
from rtgate.harness.plan import Plan
from rtgate.harness.scenario import load_scenario

HERE = Path(__file__).resolve().parent
START = datetime(2026, 11, 22, 19, 33, 55, tzinfo=UTC)
END = START + timedelta(seconds=3)
KERNEL = KernelArtifacts(dir=Path("/k"), image=Path("/k/Image"), release="6.12.117-rt",
                         flavor="rt", uts_version="#1 SMP PREEMPT_RT")
READBACK_END = parse_readback((HERE / "READBACK_END").read_text())


def _facts(root: Path) -> GuestFacts:
    return GuestFacts({p.name: p.read_text() for p in (root / "meta").iterdir()})


def _written(case: str, out: Path) -> None:
    text = (out / "result.json").read_text().replace(str(out.resolve()), "OUT")
    (HERE / case / "result.json").write_text(text, encoding="utf-8")


def qemu(tmp: Path) -> None:
    out = tmp / "qemu"
    shutil.copytree(HERE / "qemu-net-tuned" / "in", out)
    board = QemuBoard.__new__(QemuBoard)
    spec = load_board("qemu-arm64")
    board.spec, board.opts, board.workdir, board.kernel = spec, spec.options, out, KERNEL
    board.profile = load_profile("isolated")
    board.facts, board.host_port = _facts(out), 5999
    with mock.patch.object(qemu_driver, "controller_cpus", lambda: 4), \
            mock.patch.object(QemuBoard, "_readback", lambda self, **kw: READBACK_END):
        assert board.tuned is not None
        board.tuning_checks = board.tuned.verify(READBACK_END, "boot")
        plan, _ = board._plans("net", 3, None, tmp / "scratch", (out / "raw").resolve())
        peer = [PeerLoad(name="iperf3-client", command=["iperf3", "-c", "127.0.0.1"],
                         early_exit=1, early_after_s=1.5, died_at=START + timedelta(seconds=2))]
        raw = RawRun(out=out, scenario=plan.scenario, flavor=None,
                     run_id=run_id(spec.name, plan.scenario, START), plan=plan, start=START,
                     end=END, peer_loads=peer)
        board.collect(raw)
    _written("qemu-net-tuned", out)


def lava(tmp: Path) -> None:
    out = tmp / "lava"
    shutil.copytree(HERE / "lava-cpu" / "in", out)
    board = LavaBoard.__new__(LavaBoard)
    spec = load_board("lava-qemu")
    board.spec, board.opts, board.workdir, board.kernel = spec, spec.options, out, KERNEL
    board.caps, board.finished = parse_help((out / "meta" / "cyclictest-help").read_text()), 4711
    plan = board._plan("cpu", 3, None)
    plan = replace(plan, cyclictest=replace(plan.cyclictest, histfile=None))
    raw = RawRun(out=out, scenario=plan.scenario, flavor=None,
                 run_id=run_id(spec.name, plan.scenario, job=4711), plan=plan, start=START,
                 end=END)
    board.collect(raw)
    _written("lava-cpu", out)


def rpi5(tmp: Path) -> None:
    out = tmp / "rpi5"
    shutil.copytree(HERE / "rpi5-net" / "in", out)
    board = Rpi5Board.__new__(Rpi5Board)
    spec = load_board("rpi5")
    board.spec, board.kernel, board.pi = spec, KERNEL, None
    board.tuned = Applied(load_profile("isolated"), spec.name, 4)
    board.tuning_checks = board.tuned.verify(READBACK_END, "boot")
    scenario, source = load_scenario("net")
    on_board, _ = split(scenario, spec.options.peer, spec.options.peer.board_port)
    on_board = board.tuned.pin(on_board)
    caps = parse_help((HERE.parent / "help" / "cyclictest-2.40.txt").read_text())
    rawdir = (out / "raw").resolve()
    command = build(on_board.cyclictest, caps, duration_s=3, outdir=str(rawdir), source=source)
    plan = Plan(scenario.name, source, replace(command, histfile=None), [], scenario.warmup_s,
                3, scenario.scale)
    peer = [PeerLoad(name="iperf3-client", command=["iperf3", "-c", "rpi5"], early_exit=1,
                     early_after_s=4.0, died_at=END + timedelta(seconds=1))]
    raw = RawRun(out=out, scenario=plan.scenario, flavor=None,
                 run_id=run_id(spec.name, plan.scenario, START), plan=plan, start=START,
                 end=END + timedelta(seconds=2), peer_loads=peer, board_exit=0,
                 cyclictest_version="2.40",
                 kernel=RunningKernel(release="6.12.117-rt", version="#1 SMP PREEMPT_RT",
                                      machine="aarch64", realtime=None),
                 tool_sha256={"cyclictest": "a" * 64}, board_loads=on_board.loads,
                 privileges={"route": "capabilities", "user": "rtgate", "loads_as": "rtgate"},
                 throttled=[0x0, 0x50005])
    with mock.patch.object(rpi5_driver.tuning, "readback", lambda pi, tuned: READBACK_END):
        board.collect(raw)
    _written("rpi5-net", out)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        qemu(Path(tmp))
        lava(Path(tmp))
        rpi5(Path(tmp))


if __name__ == "__main__":
    main()
