"""``--trace-on-breach``: after a measurement that breached, a time-capped follow-up run with a
tracer armed at the threshold, on the same booted board.

A tracer that stops at the first breach (rtla's stop threshold, cyclictest -b) would end the
measurement there and spoil its statistics, so the measurement runs as always and only a run
whose maximum crossed the threshold is followed by a trace run. Its analysis goes into the
result's ``trace`` section and its raw files beside the measurement's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from rtgate.board.base import BoardDriver, MeasuredRun
from rtgate.errors import InfraError
from rtgate.gate.thresholds import Thresholds
from rtgate.result import Trace

BUDGET = "budget"
"""--trace-on-breach without a number: the threshold is the matching budget's max_us."""
DEFAULT_CAP_S = 60


@dataclass(frozen=True)
class BreachTracing:
    threshold: float | str
    """µs, or BUDGET."""
    cap_s: int
    thresholds: Thresholds
    boards: Path
    """The board files a result's kind is read from (its budget's key)."""

    def threshold_for(self, m: MeasuredRun) -> float | None:
        if self.threshold != BUDGET:
            return float(self.threshold)
        budget = self.thresholds.for_result(m.result, self.boards)
        return budget.max_us if budget else None

    def follow_up(self, scenario: str, scale: float | None
                  ) -> Callable[[BoardDriver, MeasuredRun], MeasuredRun]:
        def after(board: BoardDriver, m: MeasuredRun) -> MeasuredRun:
            threshold = self.threshold_for(m)
            worst = m.result.totals.max_us
            if threshold is None or worst is None or worst <= threshold:
                return m
            try:
                trace = board.trace(scenario, threshold, self.cap_s, m.result_path.parent,
                                    scale=scale)
            except InfraError as exc:
                # The measurement's verdict stands; only its explanation is missing.
                trace = Trace(tool="none", threshold_us=threshold, cap_s=self.cap_s,
                              breached=False, note=f"the trace run failed: {exc.oneline()}")
            result = m.result.model_copy(update={"trace": trace})
            result.write(m.result_path)
            return replace(m, result=result)
        return after

