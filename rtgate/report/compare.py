"""``rtgate compare``: a before/after Markdown table for a pull-request comment.

Runs are paired by board × flavor × scenario, the newest of each side; the verdict is the
candidate's budget verdict, so the comment and `rtgate check` never disagree.
"""

from __future__ import annotations

# Names come from results anyone writes: code spans keep markup, links and mentions inert.
from rtgate.gate.markdown import cell
from rtgate.gate.verdict import fmt
from rtgate.report.judge import Judge
from rtgate.report.runs import RunFiles
from rtgate.report.summary import RunSummary
from rtgate.result import Percentile

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
    for run in sorted(runs, key=lambda r: r.summary.order):
        newest[run.summary.key] = run
    return newest


def markdown(baseline: list[RunFiles], candidate: list[RunFiles], judge: Judge) -> str:
    before, after = _newest(baseline), _newest(candidate)
    lines = ["| board | flavor | scenario | avg µs | max µs | p99.99 µs | verdict |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
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
        lines.append("| " + " | ".join([
            *(cell(k) for k in key),
            _metric(b, a, "avg_us"), _metric(b, a, "max_us"), _metric(b, a, "p99_99"),
            verdict]) + " |")
    lines.append("")
    lines += [f"> ⚠️ {cell(board)} is a virtual board — not a real-time claim: its numbers "
              "say nothing about real hardware." for board in virtual]
    return "\n".join(lines).rstrip("\n") + "\n"


def _metric(before: RunSummary | None, after: RunSummary | None, field: str) -> str:
    return change(getattr(before, field) if before else None,
                  getattr(after, field) if after else None)
