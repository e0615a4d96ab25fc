"""rtla timerlat as a measuring tool: wake-up latency of the timer IRQ and of the timerlat thread
it wakes, per CPU, as separate series (the totals are the thread's).

``rtla timerlat hist`` (built from the trusted kernel source: rtgate.trace.rtla) writes its
histogram on stdout; it needs the kernel's timerlat tracer."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import ClassVar

from rtgate.cyclictest.version import Capabilities
from rtgate.errors import InputError
from rtgate.result import NSEC_US, RESOLUTION_US, Result
from rtgate.timerlat import command as rtla
from rtgate.timerlat.command import DEFAULT_PERIOD_US
from rtgate.tools.cyclictest import LATENCY_METRICS
from rtgate.tools.protocol import GuestShell, Kind, MeasuringTool, RunFacts


class Timerlat(MeasuringTool):
    name: ClassVar[str] = rtla.TOOL
    package: ClassVar[str] = "rtla"
    measures: ClassVar[Kind] = "wake-up latency"
    metrics = LATENCY_METRICS
    primary: ClassVar[str] = "max_us"
    options = rtla.TimerlatSpec
    tracer: ClassVar[str | None] = "timerlat"
    contexts: ClassVar[tuple[str, ...]] = ("thread", "user", "irq")

    def command(self, options: rtla.TimerlatSpec, *, caps: Capabilities, duration_s: int,
                outdir: str, source: Path) -> rtla.TimerlatCommand:
        return rtla.build(options, duration_s=duration_s, outdir=outdir)

    def resolution_us(self, options: rtla.TimerlatSpec) -> float:
        """ns with -n (``nsecs``, the default), else whole µs: rtla prints every number in the
        unit it was asked for, and a result whose output says otherwise is refused
        (rtgate.timerlat.hist), so the scenario says it before any round."""
        return NSEC_US if options.nsecs else RESOLUTION_US

    def on_controller(self, command: rtla.TimerlatCommand,
                      rawdir: Path) -> rtla.TimerlatCommand:
        return replace(command, stdout=str(rawdir / Path(command.stdout).name))

    def guest_lines(self, command: rtla.TimerlatCommand, shell: GuestShell) -> list[str]:
        """rtla timerlat hist, its histogram on stdout, with the hang guard."""
        return [*shell.tracefs,
                *shell.guarded(f"{shell.quote(command.argv)} >{command.stdout} "
                               f"2>{shell.raw}/{self.name}.stderr &")]

    def parse(self, command: rtla.TimerlatCommand, rawdir: Path, run: RunFacts,
              strict: bool) -> tuple[Result | None, str | None]:
        """rtla timerlat hist's stdout, with the run's histogram limit, bins and period."""
        from rtgate.timerlat import hist  # here: see rtgate.tools.cyclictest's parse()

        path = Path(command.stdout)
        if not (path.is_file() and path.stat().st_size > 0):
            return None, f"{path}: missing or empty"
        try:
            return hist.parse(path, limit_us=command.limit_us, bucket_us=command.bucket_us,
                              bucket_ns=command.bucket_ns,
                              period_us=command.period_us or DEFAULT_PERIOD_US,
                              board=run.board, virtual=run.virtual, scenario=run.scenario,
                              flavor=run.flavor, run_id=run.run_id), None
        except InputError as exc:
            return None, exc.oneline()

    def measuring_thread(self, comm: str, *, main: bool) -> bool:
        return comm.startswith("timerlat/")  # rtla -k: the kernel's timerlat/N threads

    def pinned(self, options: rtla.TimerlatSpec, cpus: str) -> rtla.TimerlatSpec:
        return options.model_copy(update={"cpus": cpus or None})


TOOL = Timerlat()
