"""A pipeline resolved before anything runs: every flavor × scenario to its scenario file, tool,
budget, tuning and kernel, every problem found at once (exit 2), printable as YAML without a
device (``--dry-run``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from rtgate import paths
from rtgate.board.spec import (
    BoardSpec,
    QemuOptions,
    flavors_of,
    kind_of,
    load_board,
    scenarios_of,
)
from rtgate.board.tuning import Profile, load_profile
from rtgate.breach import BreachTracing
from rtgate.errors import InputError, Problems
from rtgate.gate.thresholds import Thresholds, load_thresholds
from rtgate.harness.scenario import load_scenario
from rtgate.pipeline.kernels import kernel_of
from rtgate.pipeline.settings import PipelineSettings


def tuning_profile(spec: BoardSpec, tuning: str | None,
                   allow_host_changes: bool) -> Profile | None:
    """``--tuning``, refused on the local board unless the user allows changing the host."""
    if not tuning:
        return None
    profile = load_profile(tuning)
    if spec.driver == "local" and (profile.boot or profile.runtime) and not allow_host_changes:
        raise InputError(f"tuning profile {profile.name!r} changes this machine's settings: "
                         "give --allow-host-changes (run-time writes are undone at the end)")
    return profile


def with_kernel_args(spec: BoardSpec, words: list[str]) -> BoardSpec:
    """The board with ``words`` appended to the kernel command line it boots with."""
    if not words:
        return spec
    if not isinstance(spec.options, QemuOptions):
        raise InputError(f"board {spec.name!r} takes no --kernel-arg (only qemu boards do)")
    options = spec.options.model_copy(update={"append": [*spec.options.append, *words]})
    return spec.model_copy(update={"options": options})


@dataclass(frozen=True)
class PlannedRun:
    flavor: str | None
    """None: the board's running kernel, its flavor read when it runs."""
    scenario: str
    """As asked for (a name, or a file)."""
    name: str
    """The scenario's own name: what results and budgets are keyed by."""
    source: Path
    tool: str
    budget: str | None
    """Where the budget that judges it is (file:line); None: none (yet) known."""


@dataclass(frozen=True)
class PipelinePlan:
    """A pipeline resolved before anything runs: every flavor × scenario with its scenario
    file, tool, budget and kernel."""

    spec: BoardSpec
    thresholds: Thresholds
    profile: Profile | None
    tracing: BreachTracing | None
    flavors: list[str]
    kernels: dict[str, str]
    """Per flavor, where its kernel comes from."""
    runs: list[PlannedRun]

    def describe(self, s: PipelineSettings) -> str:
        """The plan as YAML: what would be built, booted and measured (``--dry-run``)."""
        return yaml.safe_dump({
            "board": self.spec.name, "kind": kind_of(self.spec), "driver": self.spec.driver,
            "duration_s": s.duration, "scale": s.scale,
            "tuning": self.profile.name if self.profile else "none",
            "trace_on_breach": s.trace_on_breach,
            "kernels": {flavor or "running": where for flavor, where in self.kernels.items()},
            "runs": [{"flavor": r.flavor or "running", "scenario": r.name,
                      "file": paths.shown(r.source), "tool": r.tool, "budget": r.budget}
                     for r in self.runs]}, sort_keys=False, allow_unicode=True)


def validate(s: PipelineSettings) -> PipelinePlan:
    """Every flavor × scenario resolved to its scenario, tool, budget, tuning and kernel before
    any build or boot; every problem found is reported (rtgate.errors.raise_found, exit 2)."""
    spec = load_board(s.board)  # nothing else can be resolved without the board
    problems = Problems()

    flavors = problems.attempt(lambda: flavors_of(spec, s.flavors)) or []
    thresholds = problems.attempt(lambda: load_thresholds(s.thresholds))
    profile = problems.attempt(lambda: tuning_profile(spec, s.tuning, s.allow_host_changes))
    booted = problems.attempt(lambda: with_kernel_args(spec, s.kernel_args)) or spec
    kernels = {flavor: where for flavor in flavors
               if (where := problems.attempt(lambda f=flavor: kernel_of(spec, f, s.kernel)))}
    kind = kind_of(spec)
    runs = []
    named: dict[str, str] = {}
    for scenario in scenarios_of(spec, s.scenarios):
        loaded = problems.attempt(lambda sc=scenario: load_scenario(sc))
        if loaded is None:
            continue
        found, source = loaded
        if named.setdefault(found.name, scenario) != scenario:
            problems.add(InputError(
                f"scenarios {named[found.name]!r} and {scenario!r} are both named "
                f"{found.name!r}: their runs and budgets would be one"))
            continue
        for flavor in flavors:
            budget = None
            if thresholds is not None and flavor:
                chosen = thresholds.select(kind, flavor, found.name,
                                           profile.name if profile else "none", found.tool)
                budget = paths.shown_source(chosen.source) if chosen else None
                if chosen is None and not s.allow_unbudgeted:
                    problems.add(InputError(
                     f"no budget matches board={spec.name} flavor={flavor} "
                     f"scenario={found.name}" + ("" if found.tool == "cyclictest" else
                                                 f" tool={found.tool}")
                     + " (--allow-unbudgeted measures it unjudged)", path=s.thresholds))
            runs.append(PlannedRun(flavor or None, scenario, found.name, source, found.tool,
                                   budget))
    problems.raise_found("any build or boot")
    assert thresholds is not None
    tracing = (BreachTracing(s.trace_on_breach, s.trace_cap, thresholds, paths.BOARDS)
               if s.trace_on_breach is not None else None)
    return PipelinePlan(booted, thresholds, profile, tracing, flavors, kernels, runs)
