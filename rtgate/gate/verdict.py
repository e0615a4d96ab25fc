"""Judging one result against its budget: one check per budgeted metric, then an exit code.

A check is ``incomplete`` — never a pass — whenever the number cannot be trusted or is not
known: the result is partial or degraded, it has fewer samples than the budget asks for, the
metric is absent (summary-only input has no percentiles), a percentile is only known as
"≥ histogram limit" with the limit at or below the budget, or an average known only to 1 µs
(cyclictest's integer average: the true mean lies in [avg, avg + 1)) straddles the budget.

The tail budget (``pwcet_us``) is judged on the pWCET's confidence interval, estimated here from
the result's block maxima rather than read from the result: the estimate depends on the budget's
exceedance rate, and a number a board or a pull request wrote is never what decides (the block
maxima themselves are re-derived from the raw files). It passes only when the upper bound is
within the budget, fails only when the lower bound exceeds it, and is incomplete ("measure
more") in between or when the data give no valid estimate.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path

from rtgate import tools
from rtgate.errors import Exit, InputError
from rtgate.gate.thresholds import Budget, PwcetBudget, Thresholds, flavor_of
from rtgate.outcome import worst_exit
from rtgate.result import Percentile, Result, Thread, load_result
from rtgate.textfmt import fmt


class Verdict(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    INCOMPLETE = "incomplete"


def worst(codes: list[Exit]) -> Exit:
    """When several results or checks disagree, the worst wins (rtgate.outcome.WORST_FIRST): an
    input error, then an incomplete measurement (the run must be repeated before any verdict),
    then an exceeded budget."""
    return worst_exit(codes)


@dataclass(frozen=True)
class Check:
    """One budgeted metric: ``measured <op> budget``."""

    metric: str
    op: str  # "<=" for latencies, ">=" for min_samples
    budget: float
    measured: float | None
    lower_bound: bool  # the measured value is only known as "at least measured"
    verdict: Verdict
    why: str = ""  # why the check is incomplete
    below: float | None = None  # with lower_bound: the value is known to lie in [measured, below)
    interval: tuple[float, float] | None = None  # an estimate's confidence interval
    context: str = ""  # what the estimate is (rate, confidence, method), shown with it
    units: str = "µs"  # of the metric (the tool's Metric.unit)

    @property
    def name(self) -> str:
        return f"{self.metric} {self.op} {fmt(self.budget)}"

    @property
    def unit(self) -> str:
        return "" if self.metric == "samples" else f" {self.units}"

    @property
    def measured_text(self) -> str:
        if self.measured is None:
            return "no valid estimate" if self.context else "absent"
        if self.interval is not None:
            lo, hi = self.interval
            return f"{fmt(self.measured)}{self.unit} in [{fmt(lo)}, {fmt(hi)}] ({self.context})"
        if self.below is not None:
            return f"[{fmt(self.measured)}, {fmt(self.below)}){self.unit}"
        return f"{'≥' if self.lower_bound else ''}{fmt(self.measured)}{self.unit}"

    @property
    def margin(self) -> float | None:
        """Room left before the budget breaks: negative when it is exceeded. For an estimate,
        the room its upper confidence bound leaves."""
        if self.measured is None:
            return None
        room = self.budget - (self.interval[1] if self.interval else self.measured)
        return room if self.op == "<=" else -room

    @property
    def margin_text(self) -> str:
        margin = self.margin
        if margin is None:
            return "—"
        pct = f" ({margin / self.budget:+.0%})" if self.budget else ""
        # A lower-bound measurement leaves at most this much room.
        bound = "≤ " if self.lower_bound else ""
        return f"{bound}{'+' if margin >= 0 else '-'}{fmt(abs(margin))}{self.unit}{pct}"

    @property
    def detail(self) -> str:
        """The sentence for JUnit and the console: measured value, budget, margin, and why."""
        text = (f"{self.metric} measured {self.measured_text}, budget {self.op} "
                f"{fmt(self.budget)}{self.unit}, margin {self.margin_text}")
        if self.verdict is Verdict.FAIL:
            return f"{text}: budget exceeded"
        if self.verdict is Verdict.INCOMPLETE:
            return f"{text}: not judged: {self.why}"
        return text


@dataclass(frozen=True)
class Evaluation:
    """A result, the budget that judged it, and its checks."""

    result: Result
    source: Path
    budget: Budget
    checks: list[Check] = field(default_factory=list)
    incomplete: list[str] = field(default_factory=list)  # result-wide reasons

    @property
    def label(self) -> str:
        return label_of(self.result)

    @property
    def exit(self) -> Exit:
        verdicts = {c.verdict for c in self.checks}
        if Verdict.INCOMPLETE in verdicts:
            return Exit.INCOMPLETE
        return Exit.BUDGET if Verdict.FAIL in verdicts else Exit.OK


def label_of(result: Result) -> str:
    return f"{result.board.name}/{flavor_of(result)}/{result.scenario}"


def evaluate(result: Result, budget: Budget, source: Path) -> Evaluation:
    totals, threads = result.totals, result.threads
    whole: list[str] = []
    if result.status != "complete":
        whole.append(f"result is {result.status}: "
                     + ("; ".join(result.reasons) or "no reason recorded"))
    if budget.context != "thread":
        # ``threads``/``totals`` are the thread context's; another is judged from its series.
        series = result.contexts.get(budget.context)
        if series is None:
            whole.append(f"the budget judges rtla timerlat's {budget.context} context, which "
                         "the result does not have"
                         + (" (run rtla timerlat with -u)" if budget.context == "user" else ""))
        else:
            totals, threads = series.totals, series.threads
    checks: list[Check] = []
    if budget.min_samples is not None:
        enough = totals.samples >= budget.min_samples
        # An upper bound (rtla timerlat top prints only the IRQ count) shows too few, never
        # enough.
        known = totals.samples_relation == "="
        checks.append(Check("samples", ">=", budget.min_samples, totals.samples, False,
                            Verdict.PASS if enough and known else Verdict.INCOMPLETE,
                            "" if known else f"only known as ≤ {totals.samples}: the thread "
                            "context's count is not printed"))
        if not enough:
            whole.append(f"too few samples: {totals.samples}, the budget needs at least "
                         f"{budget.min_samples}")
        elif not known:
            whole.append(f"the samples are only known as ≤ {totals.samples} (a timerlat top "
                         f"screen), which does not show the {budget.min_samples} the budget "
                         "needs")
    tool = tools.get(budget.tool)
    if tool.measures != "wake-up latency":
        # Another kind of number (OS noise): the tool's own metrics, as the tool reads them.
        measured = tool.measured(result)
        checks += [_bounded(m, getattr(budget, m.name), measured.get(m.name))
                   for m in tool.metrics if getattr(budget, m.name) is not None]
    metrics: list[tuple[str, float | None, float | Percentile | None]] = [
        ("max_us", budget.max_us, totals.max_us),
        ("avg_us", budget.avg_us, totals.avg_us),
        ("p99_us", budget.p99_us, totals.p99),
        ("p9999_us", budget.p9999_us, totals.p99_99),
    ]
    for metric, limit, value in metrics:
        if limit is not None:
            check = _judge(metric, limit, value)
            truncated = metric == "avg_us" and totals.avg_truncated
            checks.append(_truncated(check, result.resolution_us) if truncated else check)
    if budget.pwcet_us is not None:
        checks.append(_pwcet(threads, budget.pwcet_us, result.resolution_us))
    if whole:
        # An untrustworthy measurement judges nothing: every check is reported, none decides.
        why = "; ".join(whole)
        checks = [replace(c, verdict=Verdict.INCOMPLETE, why="; ".join(filter(None, [c.why, why])))
                  for c in checks]
    return Evaluation(result=result, source=source, budget=budget, checks=checks,
                      incomplete=whole)


def _bounded(metric: tools.Metric, budget: float, value: float | None) -> Check:
    """A metric of a tool that is no wake-up latency: at most (or, when higher is better, at
    least) the budget; absent: incomplete."""
    op = "<=" if metric.higher_is_worse else ">="
    if value is None:
        return Check(metric.name, op, budget, None, False, Verdict.INCOMPLETE,
                     f"the result has no {metric.name} ({metric.description})",
                     units=metric.unit)
    bad = value > budget if metric.higher_is_worse else value < budget
    return Check(metric.name, op, budget, value, False, Verdict.FAIL if bad else Verdict.PASS,
                 units=metric.unit)


def _judge(metric: str, budget: float, value: float | Percentile | None) -> Check:
    if value is None:
        why = ("the result has no percentiles (summary-only input, a timerlat top screen, or "
               "histogram rows cut)" if metric.startswith("p") else f"the result has no {metric}")
        return Check(metric, "<=", budget, None, False, Verdict.INCOMPLETE, why)
    if isinstance(value, Percentile):
        measured, lower_bound = value.value_us, value.relation == ">="
    else:
        measured, lower_bound = value, False
    if measured > budget:
        return Check(metric, "<=", budget, measured, lower_bound, Verdict.FAIL)
    if lower_bound:
        return Check(metric, "<=", budget, measured, True, Verdict.INCOMPLETE,
                     f"only known as ≥ {fmt(measured)} µs (samples overflowed the histogram), "
                     "which does not show whether the budget holds")
    return Check(metric, "<=", budget, measured, False, Verdict.PASS)


def _pwcet(threads: list[Thread], limit: PwcetBudget, resolution_us: float) -> Check:
    """The tail budget judged on the pWCET of all threads together (rtgate.stats.tail)."""
    # scipy and statsmodels are most of `rtgate check`'s start-up; only this budget needs them.
    from rtgate.stats import tail

    context = f"at {limit.per_hour:g}/h, {tail.CONFIDENCE:.0%} CI, GEV on block maxima"
    series: list[tuple[str, list[float], float]] = []
    missing: list[str] = []
    for t in threads:
        if t.blocks is None or t.interval_us is None:
            missing.append(f"thread {t.thread} has no "
                           + ("block maxima" if t.blocks is None else "interval"))
            continue
        if t.blocks.cycles < t.samples:
            missing.append(f"thread {t.thread}'s last {t.samples - t.blocks.cycles} cycles are "
                           "in no block (the run ended in a stall longer than its histogram)")
            continue
        whole = t.blocks.cycles // t.blocks.block_cycles  # a shorter last block is left out
        series.append((f"thread {t.thread}", t.blocks.maxima_us[:whole],
                       t.blocks.block_cycles * t.interval_us / 1e6))
    if missing or not series:
        why = "; ".join(missing) or "the result has no threads"
        return Check("pwcet_us", "<=", limit.max, None, False, Verdict.INCOMPLETE,
                     f"no valid estimate: {why}", context=context)
    estimate, _ = tail.pwcet_all(series, limit.per_hour, resolution_us=resolution_us)
    if estimate.value_us is None or estimate.lower_us is None or estimate.upper_us is None:
        return Check("pwcet_us", "<=", limit.max, None, False, Verdict.INCOMPLETE,
                     f"no valid estimate: {estimate.why_not}", context=context)
    check = Check("pwcet_us", "<=", limit.max, estimate.value_us, False, Verdict.PASS,
                  interval=(estimate.lower_us, estimate.upper_us), context=context)
    if estimate.lower_us > limit.max:
        return replace(check, verdict=Verdict.FAIL)
    if estimate.upper_us > limit.max:
        return replace(check, verdict=Verdict.INCOMPLETE,
                       why="the interval straddles the budget: measure more (a longer run "
                           "narrows it)")
    return check


def _truncated(check: Check, step: float) -> Check:
    """An average known only to its printed unit ``step`` (1 µs, 1 ns with -N): the true mean
    is in [avg, avg + step). It passes only when all of that interval is within the budget,
    fails only when none of it is."""
    if check.measured is None:
        return check
    bounded = replace(check, lower_bound=True, below=check.measured + step)
    if check.verdict is Verdict.FAIL or check.measured + step <= check.budget:
        return bounded
    return replace(bounded, verdict=Verdict.INCOMPLETE,
                   why=f"cyclictest printed its averages as whole numbers cut toward zero, so "
                       f"the mean is only known to lie in {bounded.measured_text}, which does "
                       "not show whether the budget holds")


@dataclass(frozen=True)
class Unjudged:
    """A file that got no verdict: unreadable or malformed, or no budget matches its result."""

    source: Path
    message: str
    result: Result | None = None  # set when the result was readable but unbudgeted
    allowed: bool = False  # unbudgeted under --allow-unbudgeted: reported, not an error

    @property
    def label(self) -> str:
        return label_of(self.result) if self.result else str(self.source)

    @property
    def exit(self) -> Exit:
        if not self.allowed:
            return Exit.INPUT
        # Allowed to have no budget is not allowed to be untrustworthy: a partial or degraded
        # measurement stays "not decided from the data", budget or none.
        if self.result is not None and self.result.status != "complete":
            return Exit.INCOMPLETE
        return Exit.OK


@dataclass(frozen=True)
class Infra:
    """A run that produced no measurement because the lab or emulator failed (no boot, wrong
    release, timeout, lost board). Reported as an infrastructure failure, never a verdict."""

    board: str
    flavor: str
    scenario: str
    source: Path  # the console or session log kept for the post-mortem
    message: str
    result: None = None

    @property
    def label(self) -> str:
        return f"{self.board}/{self.flavor}/{self.scenario}"

    @property
    def exit(self) -> Exit:
        return Exit.INCOMPLETE


@dataclass(frozen=True)
class Crash(Infra):
    """A run that produced no measurement because its kernel under test crashed (panic, oops,
    hang, a reboot nobody asked for) and the board's evidence says so: ``said``, the first such
    line, in ``evidence``. The kernel's failure (exit 1), not the lab's: a re-run would crash
    again, so it is never reported as an infrastructure failure."""

    said: str = ""
    evidence: Path | None = None

    @property
    def exit(self) -> Exit:
        return Exit.BUDGET


Ruling = Evaluation | Unjudged | Infra
"""What the gate rules on one input: judged, not judged and why, or not measured."""


def judge(paths: list[Path], thresholds: Thresholds, *, boards: Path,
          allow_unbudgeted: bool) -> list[Ruling]:
    """Every result file judged (or not, and why), in the order given: one bad file spoils none;
    a board's kind is read from the board files in ``boards``."""
    outcomes: list[Ruling] = []
    for path in paths:
        try:
            result = load_result(path)
        except InputError as exc:
            outcomes.append(Unjudged(path, exc.oneline()))
            continue
        outcomes.append(judge_result(result, path, thresholds, boards=boards,
                                     allow_unbudgeted=allow_unbudgeted))
    return outcomes


def judge_result(result: Result, path: Path, thresholds: Thresholds, *, boards: Path,
                 allow_unbudgeted: bool) -> Ruling:
    """One result, read from ``path``, judged against the budget that matches it."""
    budget = thresholds.for_result(result, boards)
    if budget is None:
        return Unjudged(path, f"{path}: no budget matches board={result.board.name} "
                              f"flavor={flavor_of(result)} scenario={result.scenario}"
                              + ("" if result.tool.name == "cyclictest" else
                                 f" tool={result.tool.name}"),
                        result=result, allowed=allow_unbudgeted)
    return evaluate(result, budget, path)
