"""One order of outcomes, worst first (rtgate.outcome.WORST_FIRST), for the publisher's comment,
`rtgate kcidb`'s outcome and every command's exit code (gate.verdict.worst)."""

from __future__ import annotations

from rtgate.errors import Exit
from rtgate.gate.verdict import worst
from rtgate.outcome import EXIT_WORST_FIRST, GateOutcome, worst_outcome


def test_the_exit_codes_order_is_read_from_the_outcomes() -> None:
    assert EXIT_WORST_FIRST == (Exit.INPUT, Exit.INCOMPLETE, Exit.BUDGET, Exit.UNDECIDED,
                                Exit.OK)
    assert worst([Exit.BUDGET, Exit.INCOMPLETE]) is Exit.INCOMPLETE
    assert worst([Exit.INCOMPLETE, Exit.INPUT]) is Exit.INPUT
    assert worst([Exit.UNDECIDED, Exit.BUDGET]) is Exit.BUDGET
    assert worst([]) is Exit.OK


def test_what_must_happen_before_a_verdict_comes_first() -> None:
    assert worst_outcome({GateOutcome.INCOMPLETE, GateOutcome.INPUT}) is GateOutcome.INPUT
    assert worst_outcome({GateOutcome.REGRESSION, GateOutcome.UNDECIDED}) \
        is GateOutcome.REGRESSION
    assert worst_outcome({GateOutcome.CRASHED, GateOutcome.INFRASTRUCTURE}) \
        is GateOutcome.INFRASTRUCTURE
    assert worst_outcome(set()) is GateOutcome.INFRASTRUCTURE  # no board reported at all
