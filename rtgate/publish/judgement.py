"""What the publisher decided: each board's rulings (or its A/B decision), and the run's."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rtgate.ab.loop import ABRun
from rtgate.gate.verdict import Crash, Infra, Ruling
from rtgate.outcome import GATE_OF_AB, GATE_OF_EXIT, ABOutcome, GateOutcome, worst_outcome


def kind_of(outcomes: list[Ruling]) -> GateOutcome:
    """The worst outcome among a board's rulings (``rtgate.outcome.WORST_FIRST``)."""
    return worst_outcome({_kind(o) for o in outcomes})


def _kind(o: Ruling) -> GateOutcome:
    if isinstance(o, Crash):
        return GateOutcome.CRASHED
    if isinstance(o, Infra):
        return GateOutcome.INFRASTRUCTURE
    return GATE_OF_EXIT[o.exit]


@dataclass(frozen=True)
class BoardJudgement:
    name: str
    outcomes: list[Ruling]
    ab: ABRun | None = None
    """The board's A/B decision, re-made from its rounds; ``outcomes`` are then the candidate
    rounds' budget verdicts."""
    instance: str | None = None
    """The board that measured, when ``name`` is its kind (a pull request's gate)."""

    @property
    def kind(self) -> GateOutcome:
        if self.ab is None:
            return kind_of(self.outcomes)
        if self.ab.outcome is ABOutcome.INCOMPLETE and self.ab.infra:
            return GateOutcome.INFRASTRUCTURE
        return GATE_OF_AB[self.ab.outcome]


@dataclass(frozen=True)
class Judgement:
    boards: list[BoardJudgement]
    ignored: list[str]  # artifact names that name no known board
    accepted: list[Path]  # result files that were judged where the gate writes them
    unchanged: bool = False
    """A pull request that changes no kernel input: nothing measured, nothing judged."""

    @property
    def outcomes(self) -> list[Ruling]:
        return [o for b in self.boards for o in b.outcomes]

    @property
    def kind(self) -> GateOutcome:
        if self.unchanged:
            return GateOutcome.UNCHANGED
        return worst_outcome({b.kind for b in self.boards})


def nothing_to_judge(artifacts: list[Path]) -> Judgement:
    """The judgement of a pull request that changes no kernel input. The gate measured nothing;
    an artifact that turns up anyway is listed as ignored, never judged."""
    return Judgement([], [a.name for a in artifacts], [], unchanged=True)
