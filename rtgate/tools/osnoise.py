"""rtla osnoise as a measuring tool: OS noise — the time a busy-looping thread on each CPU lost to
anything else (IRQs, softirqs, threads, NMIs, the hardware) — never a wake-up latency.

``rtla osnoise top -q`` runs for the duration and prints one screen at its end: per CPU the
runtime, the noise, the % of CPU available to the workload, the most noise in one period and
the longest single noise, and the interference counts (rtgate.timerlat.osnoise reads it into
``Result.noise``). Budgets bound the longest single noise and the CPU available; A/B compares
the longest single noise. It needs the kernel's osnoise tracer (CONFIG_OSNOISE_TRACER)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from rtgate.cyclictest.version import Capabilities
from rtgate.errors import InputError
from rtgate.result import RESOLUTION_US, Result
from rtgate.timerlat import osnoise
from rtgate.tools.protocol import GuestShell, Kind, MeasuringTool, Metric, RunFacts

STDOUT = "osnoise.stdout"


class OsnoiseSpec(BaseModel):
    """The ``osnoise:`` block of a scenario (read with ``tool: osnoise``)."""

    model_config = ConfigDict(extra="forbid")

    period_us: int | None = Field(
        None, ge=1, le=10_000_000, description="osnoise period (rtla -p); default rtla's 1 s.")
    runtime_us: int | None = Field(
        None, ge=1, le=10_000_000,
        description="Runtime of the busy loop in each period (rtla -r); default rtla's 1 s.")
    threshold_us: int | None = Field(
        None, ge=1, le=1_000_000,
        description="The least interruption counted as noise (rtla -T); default rtla's 5 µs.")
    cpus: str | None = Field(
        None, pattern=r"^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$",
        description="CPU list to measure on (rtla -c); default every CPU.")

    @model_validator(mode="after")
    def _runtime_fits(self) -> OsnoiseSpec:
        if (self.runtime_us or 1_000_000) > (self.period_us or 1_000_000):
            raise ValueError("runtime_us exceeds period_us: rtla refuses it")
        return self


SHORT_S = 1
SHORT_FRACTION = 0.01
"""A screen whose ``duration:`` falls more than 1 s (rtla prints whole seconds) plus 1 % short of
the planned duration is a run cut short: its numbers cover part of the plan, so the result is
partial. (cyclictest and timerlat count samples, which a budget's ``min_samples`` bounds;
osnoise counts none, so its screen's duration is what shows a short run.)"""


@dataclass(frozen=True)
class OsnoiseCommand:
    argv: list[str]
    stdout: str
    """Where rtla's summary screen goes (``outdir/osnoise.stdout``)."""
    duration_s: int
    cpus: str | None = None
    """The CPUs measured (rtla -c); None: every online CPU."""


def _cpus(text: str) -> set[int]:
    """A CPU list as OsnoiseSpec.cpus admits it ("0-1,3")."""
    cpus: set[int] = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def shortfalls(screen: osnoise.Screen, command: OsnoiseCommand,
               cpus_online: int | None) -> list[str]:
    """Why a screen covers less than the plan: a run cut short, or CPUs missing from it."""
    why = []
    if screen.duration_s < command.duration_s * (1 - SHORT_FRACTION) - SHORT_S:
        why.append(f"osnoise measured {screen.duration_s} s of the {command.duration_s} s "
                   "planned (cut short)")
    shown = {n.cpu for n in screen.result.noise or []}
    if command.cpus is not None:
        if missing := sorted(_cpus(command.cpus) - shown):
            why.append(f"osnoise shows no line for CPU {', '.join(map(str, missing))} of the "
                       f"CPUs planned ({command.cpus})")
    elif cpus_online is not None and len(shown) < cpus_online:
        why.append(f"osnoise shows {len(shown)} of the {cpus_online} CPUs online (every CPU "
                   "planned)")
    return why


class Osnoise(MeasuringTool):
    name: ClassVar[str] = osnoise.TOOL
    package: ClassVar[str] = "rtla"
    measures: ClassVar[Kind] = "OS noise"
    metrics = (
        Metric("max_single_noise_us", "µs", "the longest single noise on any CPU"),
        Metric("min_cpu_available_pct", "%", "the least % of CPU time left to the workload on "
               "any CPU", higher_is_worse=False),
    )
    primary: ClassVar[str] = "max_single_noise_us"
    options = OsnoiseSpec
    tracer: ClassVar[str | None] = "osnoise"

    def command(self, options: OsnoiseSpec, *, caps: Capabilities, duration_s: int,
                outdir: str, source: Path) -> OsnoiseCommand:
        """``rtla osnoise top -q``: only the final screen, whose numbers cover the whole run."""
        argv = ["rtla", "osnoise", "top", "-q", "-d", f"{duration_s}s"]
        for flag, value in (("-p", options.period_us), ("-r", options.runtime_us),
                            ("-T", options.threshold_us), ("-c", options.cpus)):
            if value is not None:
                argv += [flag, str(value)]
        return OsnoiseCommand(argv, f"{outdir}/{STDOUT}", duration_s, options.cpus)

    def on_controller(self, command: OsnoiseCommand, rawdir: Path) -> OsnoiseCommand:
        return replace(command, stdout=str(rawdir / Path(command.stdout).name))

    def guest_lines(self, command: OsnoiseCommand, shell: GuestShell) -> list[str]:
        return [*shell.tracefs,
                *shell.guarded(f"{shell.quote(command.argv)} >{command.stdout} "
                               f"2>{shell.raw}/{self.name}.stderr &")]

    def parse(self, command: OsnoiseCommand, rawdir: Path, run: RunFacts,
              strict: bool) -> tuple[Result | None, str | None]:
        path = Path(command.stdout)
        if not (path.is_file() and path.stat().st_size > 0):
            return None, f"{path}: missing or empty"
        try:
            screen = osnoise.read(path, board=run.board, virtual=run.virtual,
                                  scenario=run.scenario, flavor=run.flavor, run_id=run.run_id,
                                  lenient=False)
        except InputError as exc:
            return None, exc.oneline()
        if why := shortfalls(screen, command, run.cpus_online):
            return screen.result.model_copy(update={"status": "partial", "reasons": why}), None
        return screen.result, None

    def resolution_us(self, options: OsnoiseSpec) -> float:
        """Whole µs: rtla osnoise runs without -n, whose output is refused (timerlat.osnoise)."""
        return RESOLUTION_US

    def measured(self, result: Result) -> dict[str, float | None]:
        noise = result.noise or []
        return {"max_single_noise_us": max((n.max_single_us for n in noise), default=None),
                "min_cpu_available_pct": min((n.cpu_available_pct for n in noise),
                                             default=None)}

    def measuring_thread(self, comm: str, *, main: bool) -> bool:
        return comm.startswith("osnoise/")  # the kernel's osnoise/N threads

    def pinned(self, options: OsnoiseSpec, cpus: str) -> OsnoiseSpec:
        return options.model_copy(update={"cpus": cpus or None})


TOOL = Osnoise()
