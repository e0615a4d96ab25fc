"""A Markdown summary of a gate run, fit for ``$GITHUB_STEP_SUMMARY`` or a PR comment."""

from __future__ import annotations

from rtgate.errors import Exit
from rtgate.gate.thresholds import flavor_of
from rtgate.gate.verdict import Infra, Outcome, Unjudged, Verdict, fmt, worst

_MARK = {Verdict.PASS: "✅ pass", Verdict.FAIL: "❌ fail", Verdict.INCOMPLETE: "⚠️ incomplete"}
_HEADLINE = {
    Exit.OK: "✅ all within budget",
    Exit.BUDGET: "❌ budget exceeded",
    Exit.INCOMPLETE: "⚠️ incomplete measurement — no verdict",
    Exit.INPUT: "⚠️ input error",
}
_VIRTUAL = "virtual board — not a real-time claim"


def _cell(text: str) -> str:
    # A pipe or newline inside a cell would break the table.
    return " ".join(text.split()).replace("|", "\\|")


def render(outcomes: list[Outcome]) -> str:
    code = worst([o.exit for o in outcomes])
    lines = [f"## rtgate check: {_HEADLINE[code]} (exit {int(code)})", "",
             "| board | flavor | scenario | metric | measured | budget | margin | verdict |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    notes: list[str] = []
    for o in outcomes:
        lines.extend(_rows(o))
        notes.extend(_notes(o))
    virtual = dict.fromkeys(o.result.board.name for o in outcomes
                            if o.result is not None and o.result.board.virtual)
    lines.append("")
    lines.extend(f"> ⚠️ `{b}` is a {_VIRTUAL}: its numbers say nothing about real hardware."
                 for b in virtual)
    if notes:
        lines += ["", "**Not judged:**", ""] + [f"- {n}" for n in notes]
    return "\n".join(lines).rstrip("\n") + "\n"


def _rows(o: Outcome) -> list[str]:
    if isinstance(o, Infra):
        return [f"| {_cell(o.board)} | {_cell(o.flavor)} | {_cell(o.scenario)} | — | — | — | — | "
                f"🛠️ infrastructure failure: {_cell(o.message)} |"]
    if o.result is None:
        assert isinstance(o, Unjudged)
        return [f"| — | — | — | — | — | — | — | ⚠️ error: {_cell(o.message)} |"]
    board = o.result.board.name + (" (virtual)" if o.result.board.virtual else "")
    keys = f"| {_cell(board)} | {_cell(flavor_of(o.result))} | {_cell(o.result.scenario)} |"
    if isinstance(o, Unjudged):
        verdict = "⏭️ no budget (allowed)" if o.allowed else "⚠️ no budget"
        return [f"{keys} — | — | — | — | {verdict} |"]
    return [f"{keys} {c.metric} | {c.measured_text} | {c.op} {fmt(c.budget)}{c.unit} | "
            f"{c.margin_text} | {_MARK[c.verdict]} |" for c in o.checks]


def _notes(o: Outcome) -> list[str]:
    """Why checks were not judged: the result-wide reasons, else each check's own."""
    if isinstance(o, Infra):
        return [f"`{o.label}`: infrastructure failure (log: {_cell(str(o.source))})"]
    if isinstance(o, Unjudged):
        return [_cell(o.message)] if o.result is not None else []
    if o.incomplete:
        return [f"`{o.label}` ({_cell(str(o.source))}): {_cell(why)}" for why in o.incomplete]
    return [f"`{o.label}` {c.metric}: {_cell(c.why)}" for c in o.checks
            if c.verdict is Verdict.INCOMPLETE]
