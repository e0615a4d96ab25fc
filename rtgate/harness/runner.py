"""Running a Plan here: loads, warm-up, the real cyclictest, signals, progress, shutdown.

The order matters: loads start first and must still be running when cyclictest ends, otherwise
the numbers describe a lighter load than the scenario claims (the result is then `degraded`).
SIGINT/SIGTERM is forwarded to cyclictest as SIGINT, on which it still writes its JSON, so an
interrupted run keeps its raw data and yields a `partial` result. cyclictest's stdout (-v, one
line per sample) goes straight into the block-maxima reducer (awk), so the samples are reduced
as they are printed and never stored.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType, TracebackType

from pydantic import BaseModel, ConfigDict, Field
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn

from rtgate.cyclictest.version import Capabilities
from rtgate.errors import InfraError
from rtgate.harness import environment, loads
from rtgate.harness.loads import EndedLoad
from rtgate.harness.plan import Params, Plan, make_plan, timeout_for
from rtgate.harness.scenario import Scenario
from rtgate.harness.thermal import ThermalSampler

TICK_S = 0.1
HANG_MARGIN_S = 30.0
"""cyclictest still running this long after its --duration is hung: stop it, result partial."""
SIGINT_GRACE_S = 10.0
REDUCER_GRACE_S = 10.0
"""The reducer ends at cyclictest's end of output; one still running this long after is hung."""


class Interrupts:
    """Turns SIGINT/SIGTERM into a flag the run loop polls, instead of an exception that could
    strike between starting a process and recording it."""

    def __init__(self) -> None:
        self.received: str | None = None
        self._old: dict[int, object] = {}

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        self.received = self.received or signal.Signals(signum).name

    def __enter__(self) -> Interrupts:
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._old[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        for sig, handler in self._old.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]


class RunLog(BaseModel):
    """What happened during a run, for the result's status, loads and environment: what the
    runner here saw, or what a board's run script noted (rtgate.board.qemu.guestenv)."""

    model_config = ConfigDict(extra="forbid")
    loads: list[EndedLoad] = Field(default_factory=list)
    """This machine's loads (a remote board's are load records of the collect step)."""
    start: datetime | None = None
    end: datetime | None = None
    measured_s: float = 0.0
    cyclictest_rc: int | None = None
    reducer_rc: int | None = None
    interrupted: str | None = None
    hung: bool = False
    loadavg_before: list[float] | None = None
    loadavg_after: list[float] | None = None
    max_temp_c: float | None = None
    max_temp_zone: str | None = None


def _progress() -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(),
                    TextColumn("{task.fields[left]} left"),
                    console=Console(stderr=True), transient=False)


class _Run:
    def __init__(self, plan: Plan, rawdir: Path, scratch: Path) -> None:
        self.plan, self.rawdir, self.scratch = plan, rawdir, scratch
        self.run_log = RunLog()
        self.loads: list[loads.RunningLoad] = []
        self.interrupts = Interrupts()
        self.progress = _progress()
        self.task = self.progress.add_task(f"{plan.scenario}: starting loads",
                                           total=plan.warmup_s + plan.duration_s, left="")
        self.t0 = time.monotonic()

    def _tick(self, phase: str) -> None:
        for load in self.loads:
            if load.check():
                self.progress.console.print(
                    f"rtgate bench: load {load.spec.name!r} exited early with status "
                    f"{load.early_exit}")
        elapsed = time.monotonic() - self.t0
        total = self.plan.warmup_s + self.plan.duration_s
        self.progress.update(self.task, completed=min(elapsed, total), description=phase,
                             left=f"{max(0.0, total - elapsed):.0f} s")

    def _start_loads(self) -> None:
        for spec in self.plan.loads:
            if self.interrupts.received:
                return
            self.loads.append(loads.start(spec, self.rawdir, self.scratch))
            self._tick(f"{self.plan.scenario}: starting loads")

    def _warm_up(self) -> None:
        deadline = time.monotonic() + self.plan.warmup_s
        while time.monotonic() < deadline and not self.interrupts.received:
            self._tick(f"{self.plan.scenario}: warm-up")
            time.sleep(TICK_S)

    def _measure(self) -> None:
        argv, reducer = self.plan.cyclictest.argv, self.plan.cyclictest.reducer()
        with open(self.rawdir / "cyclictest.stdout", "wb") as out, \
                open(self.rawdir / "cyclictest.stderr", "wb") as err, \
                open(self.rawdir / "reducer.stderr", "wb") as red_err:
            try:
                red = subprocess.Popen(reducer, stdin=subprocess.PIPE, stdout=out,
                                       stderr=red_err, start_new_session=True)
            except OSError as exc:
                raise InfraError(f"cannot start {reducer[0]}: {exc.strerror}") from exc
            assert red.stdin is not None
            try:
                proc = subprocess.Popen(argv, stdout=red.stdin, stderr=err,
                                        stdin=subprocess.DEVNULL, start_new_session=True)
            except OSError as exc:
                red.kill()
                raise InfraError(f"cannot start {argv[0]}: {exc.strerror}") from exc
            finally:
                red.stdin.close()  # cyclictest holds the pipe now: its exit is the reducer's EOF
            started = time.monotonic()
            self.run_log.start = datetime.now(UTC)
            sent_at: float | None = None
            hang_at = started + self.plan.duration_s + HANG_MARGIN_S
            while proc.poll() is None:
                now = time.monotonic()
                if sent_at is None and (self.interrupts.received or now > hang_at):
                    self.run_log.hung = not self.interrupts.received
                    proc.send_signal(signal.SIGINT)  # cyclictest writes its JSON on SIGINT
                    sent_at = now
                elif sent_at is not None and now > sent_at + SIGINT_GRACE_S:
                    proc.kill()
                self._tick(f"{self.plan.scenario}: measuring")
                time.sleep(TICK_S)
            self.run_log.end = datetime.now(UTC)
            self.run_log.measured_s = time.monotonic() - started
            self.run_log.cyclictest_rc = proc.returncode
            try:
                self.run_log.reducer_rc = red.wait(timeout=REDUCER_GRACE_S)
            except subprocess.TimeoutExpired:
                red.kill()
                self.run_log.reducer_rc = red.wait()
        self._tick(f"{self.plan.scenario}: stopping loads")

    def execute(self) -> RunLog:
        self.run_log.loadavg_before = environment.loadavg()
        with self.interrupts, ThermalSampler() as thermal, self.progress:
            try:
                self._start_loads()
                self._warm_up()
                if not self.interrupts.received:
                    self._measure()
            finally:
                # Reverse order: an iperf3 client goes before its server, so it is not the
                # server's disappearance that ends it.
                for load in reversed(self.loads):
                    loads.stop(load)
                self.run_log.loads = [load.ended() for load in self.loads]
            self.run_log.interrupted = self.interrupts.received
        self.run_log.max_temp_c, self.run_log.max_temp_zone = thermal.max_c, thermal.zone
        self.run_log.loadavg_after = environment.loadavg()
        return self.run_log


def execute(plan: Plan, rawdir: Path, scratch: Path) -> RunLog:
    """Run ``plan`` on this machine; raw outputs land in ``rawdir``, loads work in ``scratch``."""
    return _Run(plan, rawdir, scratch).execute()


@contextmanager
def planned(scenario: Scenario, source: Path, caps: Capabilities, *, duration_s: int,
            rawdir: Path, scale: float | None) -> Iterator[tuple[Plan, Path]]:
    """The plan of one run of ``scenario`` here, with outputs in ``rawdir``, and the scratch
    directory its loads work in (removed after the block)."""
    # A stressor leaving an odd file behind must not cost the result: cleanup errors are ignored.
    with tempfile.TemporaryDirectory(prefix=f"rtgate-{scenario.name}-",
                                     ignore_cleanup_errors=True) as scratch:
        params = Params(cpus=os.cpu_count() or 1, port=loads.free_port(), tmpdir=scratch,
                        scale=scale or scenario.scale,
                        timeout_s=timeout_for(scenario, duration_s))
        yield (make_plan(scenario, source, caps, duration_s=duration_s, params=params,
                         outdir=str(rawdir)), Path(scratch))
