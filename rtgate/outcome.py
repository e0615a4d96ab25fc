"""The one outcome family: what rtgate can conclude, from one A/B key up to a published board.

Each level has its own words, because each says something different; how one level's outcome
becomes the next one's, and which exit code each means, is mapped once, here:

    Comparison (one board × flavor × scenario, the A/B test)
      -> ABOutcome (an `rtgate ab` run)  -> Exit
           -> StepOutcome (a bisect step)     BisectOutcome (a bisect) -> Exit
           -> GateOutcome (a board in the pull request's check) -> Exit
"""

from __future__ import annotations

from enum import StrEnum

from rtgate.errors import Exit


class Comparison(StrEnum):
    """The A/B test's decision on one key: B against A."""

    SAME = "same"
    WORSE = "worse"
    BETTER = "better"
    UNKNOWN = "unknown"


class ABOutcome(StrEnum):
    """An A/B run as a whole."""

    SAME = "same"
    BETTER = "better"
    WORSE = "worse"
    BUDGET = "budget"
    """A candidate round exceeded its budget."""
    UNDECIDED = "undecided"
    """The time cap came first: the rounds could not tell same from worse or better."""
    INCOMPLETE = "incomplete"
    """A round is incomplete or the lab failed to measure it: no verdict."""
    CRASHED = "crashed"
    """The candidate's kernel crashed in a round, with the board's evidence: its failure."""


AB_EXIT = {ABOutcome.SAME: Exit.OK, ABOutcome.BETTER: Exit.OK, ABOutcome.WORSE: Exit.BUDGET,
           ABOutcome.BUDGET: Exit.BUDGET, ABOutcome.CRASHED: Exit.BUDGET,
           ABOutcome.UNDECIDED: Exit.UNDECIDED,
           ABOutcome.INCOMPLETE: Exit.INCOMPLETE}


class StepOutcome(StrEnum):
    """What one bisect step's A/B run says of its candidate against its base."""

    WORSE = "worse"
    SAME = "same"
    BETTER = "better"
    UNKNOWN = "unknown"
    """Undecided at the step's cap."""
    SKIP = "skip"
    """No build, no boot, or an incomplete round: the step says nothing."""


STEP_OF_AB = {ABOutcome.WORSE: StepOutcome.WORSE, ABOutcome.BUDGET: StepOutcome.WORSE,
              ABOutcome.CRASHED: StepOutcome.WORSE,
              ABOutcome.SAME: StepOutcome.SAME, ABOutcome.BETTER: StepOutcome.BETTER,
              ABOutcome.UNDECIDED: StepOutcome.UNKNOWN, ABOutcome.INCOMPLETE: StepOutcome.SKIP}
GOOD_STEPS = frozenset({StepOutcome.SAME, StepOutcome.BETTER})


class BisectOutcome(StrEnum):
    """What a bisect concludes of its series."""

    CONFIRMED = "confirmed"
    NOTHING = "nothing"
    SPREAD = "spread"
    UNCONFIRMED = "unconfirmed"
    AMBIGUOUS = "ambiguous"
    ENDS = "ends"
    UNMEASURED = "unmeasured"


BISECT_EXIT = {BisectOutcome.CONFIRMED: Exit.BUDGET, BisectOutcome.NOTHING: Exit.OK,
               BisectOutcome.ENDS: Exit.INPUT, BisectOutcome.SPREAD: Exit.INCOMPLETE,
               BisectOutcome.UNCONFIRMED: Exit.INCOMPLETE,
               BisectOutcome.AMBIGUOUS: Exit.INCOMPLETE, BisectOutcome.UNMEASURED: Exit.INCOMPLETE}
WITH_CULPRIT = frozenset({BisectOutcome.CONFIRMED, BisectOutcome.SPREAD,
                          BisectOutcome.UNCONFIRMED})
"""The outcomes that name a patch: confirmed, or the first worse prefix when not confirmed."""


class GateOutcome(StrEnum):
    """A board's (or the whole pull request's) outcome in the published check."""

    PASS = "pass"
    REGRESSION = "regression"
    CRASHED = "crashed"
    """The kernel under test crashed (panic, oops, hang, a reboot nobody asked for) and the
    board's evidence says so: the kernel's failure, never the lab's."""
    INCOMPLETE = "incomplete"
    INFRASTRUCTURE = "infrastructure"
    INPUT = "input"
    UNDECIDED = "undecided"
    UNCHANGED = "unchanged"
    """A pull request that changes no kernel input (its base...head diff, as the default
    branch's plan job computed it): nothing was measured and there is nothing to judge."""


GATE_EXIT = {GateOutcome.PASS: Exit.OK, GateOutcome.REGRESSION: Exit.BUDGET,
             GateOutcome.CRASHED: Exit.BUDGET,
             GateOutcome.INCOMPLETE: Exit.INCOMPLETE, GateOutcome.INFRASTRUCTURE: Exit.INCOMPLETE,
             GateOutcome.INPUT: Exit.INPUT, GateOutcome.UNDECIDED: Exit.UNDECIDED,
             GateOutcome.UNCHANGED: Exit.OK}
WORST_FIRST = (GateOutcome.INPUT, GateOutcome.INFRASTRUCTURE, GateOutcome.INCOMPLETE,
               GateOutcome.CRASHED, GateOutcome.REGRESSION, GateOutcome.UNDECIDED,
               GateOutcome.PASS, GateOutcome.UNCHANGED)
"""The one order of outcomes, worst first, that a mixed run shows: what must happen before any
verdict comes first (fix the input, re-run the lab); a regression anywhere outranks a board that
is merely undecided. The exit codes' order is read from it (``EXIT_WORST_FIRST``)."""
EXIT_WORST_FIRST = tuple(dict.fromkeys(GATE_EXIT[k] for k in WORST_FIRST))
"""Exit codes, worst first: 2, 3, 1, 4, 0."""


def worst_outcome(kinds: set[GateOutcome]) -> GateOutcome:
    """The first of ``kinds`` in WORST_FIRST; nothing at all is an infrastructure failure (no
    board reported)."""
    return next(k for k in WORST_FIRST if k in (kinds or {GateOutcome.INFRASTRUCTURE}))


def worst_exit(codes: list[Exit]) -> Exit:
    """The first of ``codes`` in EXIT_WORST_FIRST; none: OK."""
    return next((c for c in EXIT_WORST_FIRST if c in codes), Exit.OK)


GATE_OF_AB = {ABOutcome.SAME: GateOutcome.PASS, ABOutcome.BETTER: GateOutcome.PASS,
              ABOutcome.WORSE: GateOutcome.REGRESSION, ABOutcome.BUDGET: GateOutcome.REGRESSION,
              ABOutcome.CRASHED: GateOutcome.CRASHED,
              ABOutcome.UNDECIDED: GateOutcome.UNDECIDED,
              ABOutcome.INCOMPLETE: GateOutcome.INCOMPLETE}
GATE_OF_EXIT = {Exit.OK: GateOutcome.PASS, Exit.BUDGET: GateOutcome.REGRESSION,
                Exit.INCOMPLETE: GateOutcome.INCOMPLETE, Exit.INPUT: GateOutcome.INPUT}
"""A judged result's exit code as the check's outcome (an infrastructure failure has none)."""
