"""The local board: the machine rtgate runs on. Nothing to deploy or boot.

A tuning profile is applied here at run time only (rtgate pipeline refuses it without
--allow-host-changes): its boot-time words cannot be, and are verified like every other setting,
so a profile that needs them makes the run incomplete unless it marks them optional. The old
values are saved in a state directory before each write and put back by restore(); a run that
crashed leaves that directory behind, and the next tuned run on this machine undoes it first.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

from rtgate.board.base import BoardDriver, KernelArtifacts
from rtgate.board.localbench import BenchSettings, record
from rtgate.board.rawrun import RawRun, TuningReadings
from rtgate.board.spec import BoardSpec
from rtgate.board.tuning import Applied, parse_readback, programs
from rtgate.errors import InputError
from rtgate.harness.scenario import load_scenario
from rtgate.result import Trace, TuningCheck
from rtgate.trace import breaktrace

STATE = Path(os.environ.get("RTGATE_TUNING_STATE", "/var/lib/rtgate/tuning-state"))
"""Where the old values wait to be put back; one machine, one tuned run at a time."""


class LocalBoard(BoardDriver):
    def __init__(self, spec: BoardSpec, workdir: Path) -> None:
        super().__init__(spec)
        self.workdir = workdir

    def deploy(self, kernel: KernelArtifacts | None) -> None:
        if kernel is not None and kernel.release != os.uname().release:
            raise InputError(f"board {self.spec.name!r} cannot boot another kernel (built "
                             f"{kernel.release}, running {os.uname().release})")
        self.kernel = kernel

    @property
    def tuned(self) -> Applied | None:
        return Applied(self.profile, self.spec.name, os.cpu_count() or 1) \
            if self.profile else None

    def boot(self) -> str:
        self.checks: list[TuningCheck] = []
        if self.tuned:
            undo_leftover()
            _sh(self.tuned.apply_script(str(STATE)))
            self.checks = self.tuned.verify(self._readback(), "boot")
        return os.uname().release

    def _readback(self, tasks: bool = False) -> dict[str, list[str]]:
        assert self.tuned is not None
        return parse_readback(_sh(self.tuned.readback_script(str(STATE), tasks=tasks)))

    def run(self, scenario: str, duration_s: int, out: Path, *, flavor: str | None = None,
            scale: float | None = None) -> RawRun:
        """The local bench's run (rtgate.board.localbench), with the tuning read back."""
        sampler = None
        scenario = self._pinned(scenario, out)
        with tempfile.TemporaryDirectory(prefix="rtgate-tuning-") as scratch:
            if self.tuned:
                # The tasks' real affinities once this process's cyclictest measures: a fixed
                # sleep missed a short run's threads on a loaded host.
                pidfile = Path(scratch) / "bench.pid"
                pidfile.write_text(f"{os.getpid()}\n")
                sampler = subprocess.Popen(
                    ["sh", "-c", self.tuned.sampler_script(
                        str(pidfile), load_scenario(scenario)[0].warmup_s + duration_s)],
                    stdout=open(out / "tuning-run.txt", "wb"), stdin=subprocess.DEVNULL)
            try:
                raw = record(BenchSettings(scenario=scenario, duration_s=duration_s, out=out,
                                           board=self.spec.name, flavor=flavor, scale=scale))
            finally:
                if sampler is not None:
                    _reap(sampler)
        if not self.tuned:
            return raw
        during = parse_readback((out / "tuning-run.txt").read_text(errors="replace"))
        readings = TuningReadings(
            profile=self.tuned.profile, cpus=self.tuned.cpus, boot=self.checks, during=during,
            end=self._readback(), programs=programs(raw.plan.loads), root=os.getpid())
        return raw.model_copy(update={"tuning": readings})

    def _pinned(self, scenario: str, out: Path) -> str:
        """The scenario as it runs here: a tuned board's is pinned, written beside the result
        (what ran, reviewable)."""
        if not self.tuned:
            return scenario
        pinned = self.tuned.pin(load_scenario(scenario)[0])
        out.mkdir(parents=True, exist_ok=True)
        path = (out / f"{pinned.name}.yml").resolve()
        path.write_text(yaml.safe_dump(pinned.model_dump(exclude_none=True), sort_keys=False),
                        encoding="utf-8")
        return str(path)

    def trace(self, scenario: str, threshold_us: float, cap_s: int, out: Path, *,
              scale: float | None = None) -> Trace:
        """cyclictest's breaktrace under the measurement's scenario (rtgate.trace.breaktrace):
        it needs only ftrace, and rtla timerlat is not run on this machine."""
        return breaktrace.run(self._pinned(scenario, out), threshold_us, cap_s, out, scale=scale)

    def restore(self) -> None:
        """Put back every value a profile changed (nothing, untuned)."""
        if self.tuned:
            undo_leftover()


def _sh(script: str) -> str:
    proc = subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=False)
    return proc.stdout


def undo_leftover() -> None:
    """Undo what a tuned run left in the state directory (this run's, or a crashed one's)."""
    if STATE.exists():
        print(f"rtgate: putting back the host settings saved in {STATE}", file=sys.stderr)
        _sh(Applied.undo_script(str(STATE)))


def _reap(sampler: subprocess.Popen[bytes]) -> None:
    """The sampler's end: it reads back once cyclictest measured; one that never saw it (the
    bench failed first) is stopped, and its empty read-back says "not present"."""
    try:
        sampler.wait(timeout=30)
    except subprocess.TimeoutExpired:
        sampler.kill()
        sampler.wait()
