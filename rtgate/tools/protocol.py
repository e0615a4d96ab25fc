"""What every measuring tool answers: its command line from a scenario's block of options, the
raw files it leaves, its part of a guest's script, the result parsed from its raw output, and
what it measures — wake-up latency or OS noise — with which metrics, so that budgets, A/B and
reports never put two kinds of numbers side by side."""

from __future__ import annotations

import shlex
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol

from pydantic import BaseModel

from rtgate.cyclictest.version import Capabilities
from rtgate.result import Result

Kind = Literal["wake-up latency", "OS noise"]
"""What a tool's numbers are. Two tools of one kind still measure differently (cyclictest's
user-space wake-up and rtla timerlat's thread are not one quantity): budgets and A/B name the
tool, the kind says which words a report may use for it."""


@dataclass(frozen=True)
class Metric:
    """One number a tool's result carries and a budget may bound."""

    name: str
    """The budget field that bounds it (``max_us``, ``max_single_noise_us``)."""
    unit: str
    description: str
    higher_is_worse: bool = True


class ToolCommand(Protocol):
    """A planned command: what the plan carries for the tool that measures."""

    argv: list[str]


@dataclass(frozen=True)
class RunFacts:
    """What a parser needs to know of the run besides the raw files."""

    board: str
    virtual: bool
    scenario: str
    flavor: str
    run_id: str
    cpus_online: int | None = None
    """The CPUs online where the tool ran (a tool measuring every CPU shows each of them)."""


@dataclass(frozen=True)
class GuestShell:
    """What a guest's script (busybox sh, no Python: rtgate.board.qemu.guestscript) offers a
    tool's part of it."""

    raw: str
    """The directory every raw file goes to (sent back to the controller)."""
    state: str
    """The directory of what the script notes about the run (exit statuses, times)."""
    quote: Callable[[list[str]], str]
    guarded: Callable[[str], list[str]]
    """Lines starting a command (ending in ``&``) under the hang guard, noting its exit status
    in state/TOOL-rc and the seconds it ran."""
    tracefs: list[str]
    """Lines mounting tracefs and noting the kernel's tracers (state/tracers)."""


class MeasuringTool(ABC):
    """One measuring tool. A module of ``rtgate.tools`` names its instance ``TOOL``."""

    name: ClassVar[str]
    """The tool's word in scenarios (``tool:``, and the key of its block of options), results
    (``tool.name``) and budgets (``tool:``)."""
    package: ClassVar[str]
    """The program whose version the result's environment records (``cyclictest``, ``rtla``)."""
    measures: ClassVar[Kind]
    metrics: ClassVar[tuple[Metric, ...]]
    primary: ClassVar[str]
    """The metric A/B compares the two sides on."""
    options: ClassVar[type[BaseModel]]
    """The model of the scenario's block named after the tool."""
    tracer: ClassVar[str | None] = None
    """The kernel tracer the tool needs (a guest without it is an infrastructure failure)."""
    contexts: ClassVar[tuple[str, ...]] = ()
    """The contexts a budget may name besides the default ``thread`` (rtla timerlat's ``irq``
    and ``user``): a result's series per context (``Result.contexts``)."""
    local: ClassVar[bool] = False
    """Whether the ``local`` board runs it (its runner only runs cyclictest so far)."""

    @abstractmethod
    def command(self, options: Any, *, caps: Capabilities, duration_s: int, outdir: str,
                source: Path) -> ToolCommand:
        """The planned command for a scenario's ``options``, writing its raw files under
        ``outdir`` (a path where the tool runs); an option the tool cannot take fails here."""

    @abstractmethod
    def on_controller(self, command: Any, rawdir: Path) -> ToolCommand:
        """``command`` with its raw files where they are on the controller, in ``rawdir``."""

    @abstractmethod
    def guest_lines(self, command: Any, shell: GuestShell) -> list[str]:
        """The tool's part of a guest's run script, between the warm-up and the loads' stop."""

    @abstractmethod
    def parse(self, command: Any, rawdir: Path, run: RunFacts,
              strict: bool) -> tuple[Result | None, str | None]:
        """The result of a run from its raw files, or None and why none could be read.
        ``strict``: files from a machine that may lie are read all together or not at all."""

    def measuring_thread(self, comm: str, *, main: bool) -> bool:
        """Whether a task named ``comm`` (``main``: a process's main thread) measures for this
        tool, for the check that a tuning profile's isolated CPUs hold it."""
        return False

    def measured(self, result: Result) -> dict[str, float | None]:
        """The result's value of each metric that is not a wake-up latency (those the gate
        reads from the result's totals itself); None where the result has none."""
        return {}

    def resolution_us(self, options: Any) -> float | None:
        """The least step of the numbers ``options`` ask the tool to measure (a result's
        ``resolution_us``), as a scenario says it before any round; None: known only from the
        results. What a calibration record's bank is checked against before the first round."""
        return None

    def notes(self, command: Any) -> list[str]:
        """How the command line was adapted to the installed tool (the environment's notes)."""
        return []

    def pinned(self, options: Any, cpus: str) -> Any:
        """``options`` measuring on ``cpus`` only (a tuning profile's isolated CPUs)."""
        return options

    def cmdline(self, command: Any) -> str:
        return shlex.join(command.argv)

    def metric(self, name: str) -> Metric | None:
        return next((m for m in self.metrics if m.name == name), None)
