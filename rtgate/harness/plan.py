"""What to run: a scenario plus the facts of one run, turned into concrete argv lists.

Nothing runs here. The local runner executes a Plan; a guest driver can turn the same Plan into a
shell script (there is no Python inside a guest).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rtgate.cyclictest.command import CyclictestCommand, build
from rtgate.cyclictest.version import Capabilities
from rtgate.harness.scenario import PLACEHOLDER, SCALED, Scenario
from rtgate.timerlat import command as rtla

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
    timerlat: rtla.TimerlatCommand | None = None
    """Set when rtla timerlat hist measures instead of cyclictest (``tool: timerlat``)."""

    @property
    def tool(self) -> str:
        """What measures: its raw files are raw/TOOL.stdout and .stderr."""
        return rtla.TOOL if self.timerlat else "cyclictest"


def timeout_for(scenario: Scenario, duration_s: int) -> int:
    return int(scenario.warmup_s + duration_s) + TIMEOUT_MARGIN_S


def make_plan(scenario: Scenario, source: Path, caps: Capabilities, *, duration_s: int,
              params: Params, outdir: str) -> Plan:
    """Every command of the run; an option the installed cyclictest lacks fails here, first."""
    command = build(scenario.cyclictest, caps, duration_s=duration_s, outdir=outdir, source=source)
    loads = [PlannedLoad(spec.name, [render(a, params) for a in spec.argv],
                         None if spec.listens_on is None else int(render(spec.listens_on, params)))
             for spec in scenario.loads]
    measure = (rtla.build(scenario.timerlat, duration_s=duration_s, outdir=outdir)
               if scenario.tool == rtla.TOOL else None)
    return Plan(scenario.name, source, command, loads, scenario.warmup_s, duration_s,
                params.scale, measure)
