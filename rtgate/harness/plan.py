"""What to run: a scenario plus the facts of one run, turned into concrete argv lists.

Nothing runs here. The local runner executes a Plan; a guest driver can turn the same Plan into a
shell script (there is no Python inside a guest).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rtgate import tools
from rtgate.cyclictest.command import CyclictestCommand, build
from rtgate.cyclictest.version import Capabilities
from rtgate.harness.scenario import PLACEHOLDER, SCALED, Scenario

TIMEOUT_MARGIN_S = 30
"""Loads get this much beyond warm-up + duration, so they never end before rtgate stops them."""


@dataclass(frozen=True)
class Params:
    """The facts of one run that scenario templates refer to."""

    cpus: int
    port: int
    tmpdir: str
    scale: float
    timeout_s: int

    def value(self, placeholder: str) -> str:
        if m := SCALED.match(placeholder):
            return str(max(1, round(float(m.group(1)) * self.scale)))
        return {"cpus": str(self.cpus), "port": str(self.port), "tmpdir": self.tmpdir,
                "timeout": str(self.timeout_s), "scale": f"{self.scale:g}"}[placeholder]


def render(template: str, params: Params) -> str:
    return PLACEHOLDER.sub(lambda m: params.value(m.group(1)), template)


@dataclass(frozen=True)
class PlannedLoad:
    name: str
    argv: list[str]
    listens_on: int | None


@dataclass(frozen=True)
class Plan:
    scenario: str
    source: Path
    cyclictest: CyclictestCommand
    loads: list[PlannedLoad]
    warmup_s: float
    duration_s: int
    scale: float
    tool: str = "cyclictest"
    """What measures (a tool of rtgate.tools): its raw files are raw/TOOL.stdout and .stderr."""
    measure: Any = None
    """The measuring tool's command (a ``tools.ToolCommand`` of the tool's own type, which only
    the tool reads) when it is not cyclictest, whose is ``cyclictest``: planned for every
    scenario, since the breach tracer's follow-up run measures with it."""

    @property
    def command(self) -> tools.ToolCommand:
        """The measuring tool's planned command."""
        return self.cyclictest if self.measure is None else self.measure


def timeout_for(scenario: Scenario, duration_s: int) -> int:
    return int(scenario.warmup_s + duration_s) + TIMEOUT_MARGIN_S


def make_plan(scenario: Scenario, source: Path, caps: Capabilities, *, duration_s: int,
              params: Params, outdir: str) -> Plan:
    """Every command of the run; an option the installed cyclictest lacks fails here, first."""
    command = build(scenario.cyclictest, caps, duration_s=duration_s, outdir=outdir, source=source)
    loads = [PlannedLoad(spec.name, [render(a, params) for a in spec.argv],
                         None if spec.listens_on is None else int(render(spec.listens_on, params)))
             for spec in scenario.loads]
    measure = None if scenario.tool == "cyclictest" else tools.get(scenario.tool).command(
        scenario.options(), caps=caps, duration_s=duration_s, outdir=outdir, source=source)
    return Plan(scenario.name, source, command, loads, scenario.warmup_s, duration_s,
                params.scale, scenario.tool, measure)
