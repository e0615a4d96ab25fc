"""``rtgate compare``: a before/after Markdown table for a pull-request comment, and the A/B
decision of the candidate's rounds against the baseline's.

In the table runs are paired by board × flavor × scenario, the newest of each side; the verdict
is the candidate's budget verdict, so the comment and `rtgate check` never disagree. The A/B
decision (rtgate.stats.ab) takes every complete round of each side for the key: a round is one
result.json, the unit of replication.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from rtgate import calibration
from rtgate.board.spec import board_kind
from rtgate.errors import Exit

# Names come from results anyone writes: code spans keep markup, links and mentions inert.
from rtgate.gate.markdown import cell, code
from rtgate.outcome import Comparison
from rtgate.report.judge import Judge
from rtgate.report.runs import RunFiles
from rtgate.report.summary import RunSummary
from rtgate.result import Percentile
from rtgate.stats import ab
from rtgate.textfmt import fmt
from rtgate.tools.rounds import round_of

FIXED_SIZE = ("A fixed-size test: one look at every round given, the key's alpha split between "
              "the tail test and the stall test as the gate splits it; not the gate's "
              "sequential looks (`rtgate ab`), whose boundaries are planned before the rounds.")
_MARK = {"pass": "✅ pass", "fail": "❌ fail", "incomplete": "⚠️ incomplete",
         "no budget": "➖ no budget"}


def _value(v: float | Percentile | None) -> str:
    if v is None:
        return "—"
    return str(v) if isinstance(v, Percentile) else fmt(v)


def _exact(v: float | Percentile | None) -> float | None:
    """The value when it is known exactly; a lower bound has no meaningful difference."""
    if isinstance(v, Percentile):
        return v.value_us if v.relation == "=" else None
    return v


def change(before: float | Percentile | None, after: float | Percentile | None) -> str:
    """``before → after (Δ +x, +y %)``; the delta is left out when either side is not exact."""
    text = f"{_value(before)} → {_value(after)}"
    a, b = _exact(before), _exact(after)
    if a is None or b is None:
        return text if before is None or after is None else f"{text} (Δ n/a: lower bound)"
    delta = b - a
    sign = "+" if delta >= 0 else "−"
    pct = f", {sign}{abs(delta) / a:.0%}" if a else ""
    return f"{text} (Δ {sign}{fmt(round(abs(delta), 2))}{pct})"


def _newest(runs: list[RunFiles]) -> dict[tuple[str, str, str], RunFiles]:
    newest: dict[tuple[str, str, str], RunFiles] = {}
    # A published run's place is its publication number; a start is what a board's clock said.
    for run in sorted(runs, key=lambda r: (r.publication.seq if r.publication else 0,
                                           r.summary.order)):
        newest[run.summary.key] = run
    return newest


def markdown(baseline: list[RunFiles], candidate: list[RunFiles], judge: Judge,
             ab_test: ABTest | None = None) -> str:
    """The before/after table; with ``ab_test``, its decision per key in a column and a section
    (the publisher's one-round baseline comparison has no rounds to decide from)."""
    before, after = _newest(baseline), _newest(candidate)
    decided = {d.key: d for d in ab_test.decisions} if ab_test else {}
    extra = " A/B |" if ab_test else ""
    lines = ["| board | flavor | scenario | avg µs | max µs | p99.99 µs | verdict |" + extra,
             "| --- | --- | --- | --- | --- | --- | --- |" + (" --- |" if ab_test else "")]
    virtual: dict[str, None] = {}
    for key in sorted(before.keys() | after.keys()):
        b = before[key].summary if key in before else None
        a = after[key].summary if key in after else None
        for s in (b, a):
            if s is not None and s.virtual:
                virtual[s.board] = None
        if a is None:
            verdict = "➖ not measured by the candidate"
        else:
            verdict = _MARK[judge(after[key]).verdict] + ("" if b else " (new: no baseline)")
        cells = [*(cell(k) for k in key),
                 _metric(b, a, "avg_us"), _metric(b, a, "max_us"), _metric(b, a, "p99_99"),
                 verdict]
        if ab_test:
            cells.append(_decision_cell(decided.get(key)))
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines += [f"> ⚠️ {cell(board)} is a virtual board — not a real-time claim: its numbers "
              "say nothing about real hardware." for board in virtual]
    if ab_test:
        lines += ["", *ab_test.section()]
    return "\n".join(lines).rstrip("\n") + "\n"


def _metric(before: RunSummary | None, after: RunSummary | None, field: str) -> str:
    return change(getattr(before, field) if before else None,
                  getattr(after, field) if after else None)


_OUTCOME = {Comparison.SAME: "🟰 same", Comparison.WORSE: "❌ worse",
            Comparison.BETTER: "✅ better", Comparison.UNKNOWN: "❔ unknown"}


def _interval(e: ab.Effect) -> str:
    return f"{e} ({e.rounds[0]} vs {e.rounds[1]} rounds)"


def _decision_cell(d: ab.Decision | None) -> str:
    if d is None:
        return "—"
    effect = f": {_interval(d.headline)}" if d.headline else f" ({d.rounds[0]} vs " \
        f"{d.rounds[1]} rounds)"
    return _OUTCOME[d.outcome] + effect


class ABTest:
    """Every key's A/B decision, one family: ``alpha`` holds across all of them together."""

    def __init__(self, baseline: list[RunFiles], candidate: list[RunFiles], judge: Judge,
                 min_effect_pct: float | None = None, alpha: float | None = None) -> None:
        sides: dict[ab.Key, tuple[list[RunFiles], list[RunFiles]]] = defaultdict(
            lambda: ([], []))
        for i, runs in enumerate((baseline, candidate)):
            for run in runs:
                sides[run.summary.key][i].append(run)
        self.notes: list[str] = []
        comparisons = []
        budgets = []
        for key in sorted(sides):
            tools = sorted({run.result.tool.name for runs in sides[key] for run in runs})
            if len(tools) > 1:
                # timerlat's and cyclictest's latencies are measured differently (timer IRQ and
                # thread wake-up vs clock_nanosleep): a difference between them is no effect.
                self.notes.append(f"{code('/'.join(key))}: measured with different tools "
                                  f"({', '.join(code(t) for t in tools)}): not compared")
                continue
            a, b = (self._rounds(key, name, runs)
                    for name, runs in zip(("baseline", "candidate"), sides[key], strict=True))
            any_run = (sides[key][1] or sides[key][0])[0]
            budget = judge(any_run).budget
            stated = budget.ab if budget is not None else None
            pct = min_effect_pct if min_effect_pct is not None else (
                stated.min_effect_pct if stated else None)
            if pct is None:
                self.notes.append(f"{code('/'.join(key))}: no minimum effect (`ab.min_effect_pct` "
                                  "in thresholds.yml, or --min-effect-pct): not compared")
                continue
            budgets.append(stated)
            # The gate's registration: the board kind's calibration record names the primary
            # metric and the stall threshold, as `rtgate ab` takes them.
            record = calibration.for_kind(board_kind(key[0], judge.boards))
            cal = next((k for k in record.keys if (k.flavor, k.scenario) == key[1:]),
                       None) if record else None
            comparisons.append(ab.KeyRounds(
                key, a, b, ab.Margin(pct / 100), budget.min_samples if budget else None,
                cal.primary_metric if cal else None, cal.stall_threshold_us if cal else None))
        # The strictest rate any budget asks for holds for the whole check.
        self.alpha = alpha if alpha is not None else min(
            (s.alpha for s in budgets if s is not None), default=0.01)
        self.decisions = ab.decide(comparisons, self.alpha)
        self.uncompared = len(sides) - len(comparisons)

    def _rounds(self, key: ab.Key, side: str, runs: list[RunFiles]) -> list[ab.Round]:
        complete = [r for r in runs if r.result.status == "complete"]
        if len(complete) < len(runs):
            self.notes.append(f"{code('/'.join(key))}: {len(runs) - len(complete)} {side} "
                              "round(s) not complete, left out of the A/B test")
        return [round_of(r.result) for r in complete]

    @property
    def exit(self) -> Exit:
        """1 when any key is worse, else 4 when any is unknown or not compared, else 0."""
        outcomes = {d.outcome for d in self.decisions}
        if Comparison.WORSE in outcomes:
            return Exit.BUDGET
        if Comparison.UNKNOWN in outcomes or self.uncompared:
            return Exit.UNDECIDED
        return Exit.OK

    def section(self) -> list[str]:
        lines = [f"### A/B: candidate against baseline (false-alarm rate {self.alpha:g} for "
                 "the whole comparison)", "",
                 f"{FIXED_SIZE} Effect reported: {ab.EFFECT_REPORTED}. *Same*: the primary "
                 "metric's interval lies within ×(1 + margin) either way and the stall test "
                 "finds no more stalls; *worse*: the interval lies wholly above no change, or "
                 "the stall test finds more stall blocks in the candidate's rounds; *better*: "
                 "wholly below; each key at the rate / keys.", ""]
        for d in self.decisions:
            where = code("/".join(d.key))
            lines.append(f"- {where}: **{_OUTCOME[d.outcome]}** (margin {d.margin})")
            lines += [f"  - {_interval(e)}" + (" (primary, tested)" if e is d.headline else "")
                      for e in d.effects]
            if d.stalls:
                lines.append(f"  - {code(str(d.stalls))}")
            lines += [f"  - {code(r)}" for r in d.reasons]
        lines += [f"- {n}" for n in self.notes]
        return lines

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": "rtgate/compare/v2", "alpha": self.alpha, "exit": int(self.exit),
            "design": FIXED_SIZE,
            "effect_reported": ab.EFFECT_REPORTED, "notes": self.notes,
            "decisions": [{
                "board": d.key[0], "flavor": d.key[1], "scenario": d.key[2],
                "outcome": d.outcome.value, "rounds": {"baseline": d.rounds[0],
                                                        "candidate": d.rounds[1]},
                "min_effect_pct": 100 * d.margin.relative, "margin_ratio": d.margin_ratio,
                "primary": _effect_json(d.headline) if d.headline else None,
                "effects": [_effect_json(e) for e in d.effects],
                "statistic": d.statistic, "boundary": d.boundary, "key_alpha": d.alpha,
                "reasons": d.reasons,
                "stalls": None if d.stalls is None else {
                    "threshold_us": d.stalls.threshold_us, "from": d.stalls.threshold_from,
                    "baseline": list(d.stalls.a), "candidate": list(d.stalls.b),
                    "p": d.stalls.p, "boundary": d.stalls.boundary, "worse": d.stalls.worse},
            } for d in self.decisions],
        }


def _effect_json(e: ab.Effect) -> dict[str, Any]:
    return {"metric": e.metric, "ratio": e.ratio, "low": e.low, "high": e.high,
            "confidence": e.confidence, "baseline_geomean_us": e.a_geomean_us,
            "candidate_geomean_us": e.b_geomean_us}
