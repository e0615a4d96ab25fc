"""A timerlat budget judges the context it names: the thread's by default, the -u workload's
(user) or the timer interrupt's (irq) when it says so; a result without it is incomplete."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from rtgate.gate.thresholds import Budget
from rtgate.gate.verdict import Verdict, evaluate
from rtgate.timerlat import hist

DATA = Path(__file__).parents[1] / "data" / "rtla"
# The guest's `rtla timerlat hist -E 20` (tests/data/rtla/README.md): user maxima 13637 and
# 12533 µs, thread maxima below them.
E20 = DATA / "guest-hist-E20.session"


def budget(**fields: object) -> Budget:
    return Budget.model_validate({"board": "*", "flavor": "*", "scenario": "*",
                                  "tool": "timerlat", "max_us": 13000, "reason": "test",
                                  **fields}, strict=False)


def max_check(context: str) -> tuple[Verdict, float | None]:
    result = hist.parse(E20, lenient=True)
    evaluation = evaluate(result, budget(context=context), E20)
    (check,) = [c for c in evaluation.checks if c.metric == "max_us"]
    return check.verdict, check.measured


def test_the_user_context_is_judged_when_the_budget_names_it() -> None:
    result = hist.parse(E20, lenient=True)
    assert max_check("user") == (Verdict.FAIL, result.contexts["user"].totals.max_us) \
        == (Verdict.FAIL, 13637)


def test_the_thread_context_is_the_default() -> None:
    result = hist.parse(E20, lenient=True)
    assert budget().context == "thread"
    assert max_check("thread")[1] == result.totals.max_us \
        == result.contexts["thread"].totals.max_us


def test_a_result_without_the_context_is_incomplete() -> None:
    result = hist.parse(E20, lenient=True)
    alone = result.model_copy(update={"contexts": {k: v for k, v in result.contexts.items()
                                                   if k != "user"}})
    evaluation = evaluate(alone, budget(context="user"), E20)
    assert {c.verdict for c in evaluation.checks} == {Verdict.INCOMPLETE}
    assert any("user context" in why for why in evaluation.incomplete)


def test_only_timerlat_has_contexts() -> None:
    with pytest.raises(ValidationError, match="context 'user' is not one of cyclictest's"):
        budget(tool="cyclictest", context="user")
