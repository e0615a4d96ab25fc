"""The bisect's search, pure: the measurement is a function (base, candidate) → StepMeasurement,
so that a board, a replay of a board's rounds or a test's model of a series can stand behind it."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from rtgate.bisect.doc import Purpose, Step, StepMeasurement, Variant, label, prefix
from rtgate.bisect.state import Log
from rtgate.errors import Exit, InputError
from rtgate.outcome import BISECT_EXIT, GOOD_STEPS, BisectOutcome, StepOutcome

Measure = Callable[[Variant, Variant], StepMeasurement]
"""measure(base, candidate)."""

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Conclusion:
    """What the search found, with the evidence: every step measured (or replayed)."""

    outcome: BisectOutcome
    why: str
    culprit: int | None
    skipped: list[int]
    steps: list[Step]
    elapsed_s: float
    measured_s: float

    @property
    def exit(self) -> Exit:
        return BISECT_EXIT[self.outcome]


@dataclass
class Search:
    n: int
    good: int
    bad: int
    measure: Measure
    log: Log
    explicit_bad: bool = False
    repeats: int = 2
    progress: Progress = print
    clock: Callable[[], float] = time.monotonic
    started: float = 0.0
    _search_left: int = 0

    def _measure(self, purpose: Purpose, base: Variant, cand: Variant) -> StepMeasurement:
        index = self.log.replayed
        if index < len(self.log.steps):
            step = self.log.steps[index]
            if (step.purpose, step.base, step.cand) != (purpose, base, cand):
                raise InputError(f"the state file's step {index + 1} ({step.purpose} "
                                 f"{label(step.cand, self.n)} vs {label(step.base, self.n)}) is "
                                 "not what this bisect asks next: it is of another bisect",
                                 path=self.log.path)
            self.log.replayed += 1
            self.progress(f"step {index + 1}: {purpose} {label(cand, self.n)} vs "
                          f"{label(base, self.n)}: {step.measurement.outcome} (from the state "
                          "file)")
            return step.measurement
        self.progress(f"step {index + 1} ({self._left()}): {purpose}: measuring "
                      f"{label(cand, self.n)} against {label(base, self.n)}")
        start = self.clock()
        m = self.measure(base, cand)
        self.log.steps.append(Step(purpose=purpose, base=base, cand=cand, measurement=m,
                                   seconds=round(self.clock() - start, 1)))
        self.log.replayed += 1
        self.log.save()
        self.progress(f"  → {m.outcome}: {m.summary}")
        return m

    def _left(self) -> str:
        """Step k of ~total, builds left, time spent: the search's remaining halvings plus the
        confirmation's measurements (the parent's repeats and the revert) are the estimate."""
        done = len(self.log.steps)
        confirming = sum(s.purpose in ("parent", "revert") for s in self.log.steps)
        left = self._search_left + max(self.repeats + 1 - confirming, 0)
        spent = sum(s.seconds for s in self.log.steps)
        return (f"of ~{done + left} · ~{left} build(s) left · {spent:.0f} s measured, "
                f"{self.clock() - self.started:.0f} s this session")

    def run(self) -> Conclusion:
        self.started = self.clock()
        g, b = prefix(self.good), prefix(self.bad)
        self._search_left = math.ceil(math.log2(max(self.bad - self.good, 1)))
        ends = self._measure("ends", g, b)
        if not ends.base_ok:
            return self._end(BisectOutcome.ENDS, f"the good end ({label(g, self.n)}) is not "
                             "good: its own rounds exceed their budget")
        if ends.outcome is StepOutcome.SKIP:
            return self._end(BisectOutcome.UNMEASURED, "the ends could not be measured (the "
                             "evidence below)")
        if ends.outcome in GOOD_STEPS and not self.explicit_bad:
            return self._end(BisectOutcome.NOTHING, f"the whole series is {ends.outcome} as the "
                             "good end: nothing to bisect")
        if ends.outcome is not StepOutcome.WORSE:
            return self._end(BisectOutcome.ENDS, f"the bad end ({label(b, self.n)}) is not worse "
                             f"than the good end ({label(g, self.n)}): {ends.outcome}")
        lo, hi, skipped = self.good, self.bad, list[int]()
        while True:
            untried = [k for k in range(lo + 1, hi) if k not in skipped]
            if not untried:
                break
            self._search_left = math.ceil(math.log2(len(untried) + 1))
            mid = min(untried, key=lambda k: (abs(k - (lo + hi) / 2), k))
            m = self._measure("search", g, prefix(mid))
            if m.outcome is StepOutcome.WORSE:
                hi = mid
            elif m.outcome in GOOD_STEPS:
                lo = mid
            else:
                skipped.append(mid)
        self._search_left = 0
        if hi - lo > 1:
            between = ", ".join(str(p) for p in range(lo + 1, hi + 1))
            return self._end(BisectOutcome.AMBIGUOUS, f"prefixes {lo + 1}..{hi - 1} were "
                             f"skipped: the culprit is one of patches {between} (not confirmed)",
                             skipped=skipped)
        return self._confirm(hi, skipped)

    def _confirm(self, culprit: int, skipped: list[int]) -> Conclusion:
        parent, cand = prefix(culprit - 1), prefix(culprit)
        g = prefix(self.good)
        # The ends step already is culprit against parent when they are the ends.
        earlier = [s.measurement for s in self.log.steps[:self.log.replayed]
                   if (s.base, s.cand) == (parent, cand)]
        for _ in range(self.repeats - len(earlier)):
            earlier.append(self._measure("parent", parent, cand))
        worse = sum(m.outcome is StepOutcome.WORSE for m in earlier)
        revert = tuple(p for p in prefix(self.bad) if p != culprit)
        revert_ok: bool | None  # None: the revert does not apply
        if revert == parent:
            # The culprit is the bad end's last patch: the revert is the parent, which the
            # search found good (or which is the good end).
            reverted = f"the bad end without it is {label(parent, self.n)}, good above"
            revert_ok = True
        else:
            r = self._measure("revert", g, revert)
            revert_ok = r.outcome in GOOD_STEPS if r.applies else None
            reverted = (f"the bad end without patch {culprit} is {r.outcome} against the good "
                        "end" if r.applies else
                        f"the revert ({label(revert, self.n)}) does not apply (a later patch "
                        f"depends on patch {culprit}): the evidence is the culprit against its "
                        "parent alone")
        if worse < self.repeats:
            return self._end(BisectOutcome.SPREAD, f"prefix {label(cand, self.n)} is the first "
                             f"that is worse than the good end, but patch {culprit} against its "
                             f"parent was worse in {worse} of {self.repeats} measurements: the "
                             "regression may be spread over several patches (not confirmed); "
                             + reverted, culprit=culprit, skipped=skipped)
        if revert_ok is False:
            return self._end(BisectOutcome.UNCONFIRMED, f"patch {culprit} against its parent "
                             f"was worse {worse} of {self.repeats} times, but {reverted} (worse: "
                             "another patch regresses too; unknown: measure longer): not "
                             "confirmed", culprit=culprit, skipped=skipped)
        return self._end(BisectOutcome.CONFIRMED, f"patch {culprit} is the culprit: worse than "
                         f"its parent in {worse} of {self.repeats} measurements, and {reverted}",
                         culprit=culprit, skipped=skipped)

    def _end(self, outcome: BisectOutcome, why: str, *, culprit: int | None = None,
             skipped: list[int] | None = None) -> Conclusion:
        self.progress(why)
        return Conclusion(outcome, why, culprit, skipped or [], list(self.log.steps),
                          elapsed_s=round(self.clock() - self.started, 1),
                          measured_s=round(sum(s.seconds for s in self.log.steps), 1))
