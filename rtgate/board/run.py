"""`rtgate board run`: one deploy → boot → run → collect → restore on one board, its inputs
resolved first (the board, the kernel build, the scenario), every problem named before the
board is touched."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from rtgate import paths
from rtgate.board.base import KernelArtifacts, MeasuredRun
from rtgate.board.measure import measure
from rtgate.board.spec import BoardSpec, kind_of, load_board
from rtgate.errors import Problems
from rtgate.harness.scenario import Scenario, load_scenario


@dataclass(frozen=True)
class BoardRunSettings:
    board: str
    kernel: Path | None
    """A kernel build directory (rtgate kernel build --out); None: the board's own kernel."""
    scenario: str
    duration_s: int
    out: Path
    flavor: str | None = None
    scale: float | None = None


@dataclass(frozen=True)
class BoardRunPlan:
    spec: BoardSpec
    kernel: KernelArtifacts | None
    scenario: Scenario
    source: Path

    def describe(self, s: BoardRunSettings) -> str:
        """The plan as YAML, without a device (``--dry-run``)."""
        return yaml.safe_dump({
            "board": self.spec.name, "kind": kind_of(self.spec), "driver": self.spec.driver,
            "kernel": (f"{self.kernel.release} ({self.kernel.flavor or 'no flavor'})"
                       if self.kernel else "the board's own"),
            "flavor": s.flavor or (self.kernel.flavor if self.kernel else None),
            "scenario": self.scenario.name, "file": paths.shown(self.source),
            "tool": self.scenario.tool, "duration_s": s.duration_s, "scale": s.scale},
            sort_keys=False, allow_unicode=True)



def validate(s: BoardRunSettings) -> BoardRunPlan:
    """The board, the kernel build and the scenario resolved before the board is touched; every
    problem reported (rtgate.errors.Problems, exit 2). A kernel directory that is no usable build
    stays an InfraError (exit 3), as it was."""
    spec = load_board(s.board)  # nothing else can be checked without the board
    problems = Problems()
    kernel = problems.attempt(lambda: KernelArtifacts.from_dir(s.kernel)) if s.kernel else None
    loaded = problems.attempt(lambda: load_scenario(s.scenario))
    problems.raise_found("the board was touched")
    assert loaded is not None
    return BoardRunPlan(spec, kernel, *loaded)


def board_run(s: BoardRunSettings, plan: BoardRunPlan) -> MeasuredRun:
    return measure(plan.spec, plan.kernel, s.scenario, s.duration_s, s.out, flavor=s.flavor,
                   scale=s.scale)
