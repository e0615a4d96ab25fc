"""The verdict a report shows: the gate's own budget lookup and evaluation, nothing re-invented.

A report must agree with `rtgate check`, so it asks the same functions. Unlike the gate it does
not stop at a result without a budget: such a run is published as "no budget".
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from rtgate import paths
from rtgate.errors import Exit
from rtgate.gate.thresholds import Budget, Thresholds, load_thresholds
from rtgate.gate.verdict import Check, Evaluation, Verdict, evaluate
from rtgate.report.runs import RunFiles
from rtgate.textfmt import fmt

NO_BUDGET = "no budget"
_VERDICT = {Exit.OK: Verdict.PASS.value, Exit.BUDGET: Verdict.FAIL.value,
            Exit.INCOMPLETE: Verdict.INCOMPLETE.value}
# The budget fields a report draws as lines, with the name of the metric they bound.
BUDGET_LINES = (("max", "max_us"), ("avg", "avg_us"), ("p99", "p99_us"), ("p99.99", "p9999_us"))


@dataclass(frozen=True)
class Judged:
    budget: Budget | None
    evaluation: Evaluation | None

    @property
    def verdict(self) -> str:
        """pass, fail, incomplete or "no budget"."""
        return _VERDICT[self.evaluation.exit] if self.evaluation else NO_BUDGET

    @property
    def checks(self) -> list[Check]:
        return self.evaluation.checks if self.evaluation else []

    @property
    def problems(self) -> list[str]:
        """The sentences that explain a verdict other than pass."""
        return [c.detail for c in self.checks if c.verdict is not Verdict.PASS]

    def lines(self, names: tuple[str, ...] = ("max", "avg", "p99", "p99.99")
              ) -> list[tuple[str, float]]:
        """Budget values to draw, as (metric, µs)."""
        if self.budget is None:
            return []
        return [(n, v) for n, field in BUDGET_LINES
                if n in names and (v := getattr(self.budget, field)) is not None]

    @property
    def text(self) -> str:
        """The budget in one line: ``max ≤ 155 · avg ≤ 7.4 µs``."""
        return budget_text(self.lines()) if self.budget is not None else "—"


def budget_text(lines: Iterable[tuple[str, float]]) -> str:
    """Budget values (metric, µs) in one line: ``max ≤ 155 · avg ≤ 7.4 µs``."""
    return " · ".join(f"{n} ≤ {fmt(v)}" for n, v in lines) + " µs"


class Judge:
    def __init__(self, thresholds: Thresholds | None, boards: Path) -> None:
        self.thresholds = thresholds
        self.boards = boards
        """The board files a run's kind is read from (its budget's key)."""

    @property
    def identity(self) -> str:
        """What the budgets are, as text: a page judged by other budgets is out of date."""
        return self.thresholds.model_dump_json() if self.thresholds else NO_BUDGET

    @classmethod
    def from_file(cls, path: Path | None, boards: Path) -> Judge:
        """The named thresholds file; without one, the repository's when it exists (else every
        run is shown unjudged, and stderr says why: a site of "no budget" rows is no verdict)."""
        if path is None:
            path = paths.THRESHOLDS if paths.THRESHOLDS.is_file() else None
        if path is None:
            print(f"rtgate: no {paths.THRESHOLDS.name} in {paths.ROOT} (set RTGATE_ROOT=DIR or "
                  "give --thresholds FILE): no run is judged against a budget", file=sys.stderr)
        return cls(load_thresholds(path) if path else None, boards)

    def __call__(self, run: RunFiles) -> Judged:
        budget = self.thresholds.for_result(run.result, self.boards) if self.thresholds else None
        if budget is None:
            return Judged(None, None)
        return Judged(budget, evaluate(run.result, budget, run.result_path))
