"""A Markdown summary of a gate run, fit for ``$GITHUB_STEP_SUMMARY`` or a PR comment.

Board, flavor and scenario names, kernel releases, file names and messages come from results and
artifacts that a pull request's kernel or workflow may have written. GitHub turns plain text into
mentions, issue and commit links, autolinked URLs and ``www.`` hosts, emoji and HTML, and only a
code span is left alone by all of them: every such text reaches Markdown through ``code``.
"""

from __future__ import annotations

import re
import unicodedata

from rtgate.errors import Exit
from rtgate.gate.thresholds import flavor_of
from rtgate.gate.verdict import Crash, Infra, Ruling, Unjudged, Verdict, worst
from rtgate.result import TraceBreach
from rtgate.textfmt import fmt
from rtgate.trace import explain as explain_trace

_MARK = {Verdict.PASS: "✅ pass", Verdict.FAIL: "❌ fail", Verdict.INCOMPLETE: "⚠️ incomplete"}
_HEADLINE = {
    Exit.OK: "✅ all within budget",
    Exit.BUDGET: "❌ budget exceeded",
    Exit.INPUT: "⚠️ input error",
}
# Exit 3 stands for two outcomes a reader must tell apart: what to do next differs.
_INCOMPLETE = "⚠️ not decided from the data: incomplete measurement, measure more"
_INFRA = "🛠️ infrastructure failure: no measurement, re-run once the board is healthy"
# Exit 1 too, but not a budget: the kernel's own failure, which a re-run would repeat.
_CRASH = "💥 the kernel under test crashed (its failure, with the board's evidence)"
_VIRTUAL = "virtual board — not a real-time claim"
# Long enough for a path or a sentence, short enough that no artifact floods a comment.
MAX_TEXT = 300


def _printable(text: str) -> str:
    # Control, format (bidi overrides, zero-width) and unassigned characters could hide or
    # reorder what a reviewer reads; they become U+FFFD.
    return "".join("\ufffd" if unicodedata.category(ch) in ("Cc", "Cf", "Cn", "Cs", "Co")
                   and ch not in "\t\n" else ch for ch in text)


def code(text: str, *, table: bool = False) -> str:
    """Untrusted text as one inline code span: literal, one line, at most MAX_TEXT characters.

    In a table cell a pipe would still end the cell (GFM splits rows before it parses spans):
    ``table=True`` escapes it as ``\\|``, which GitHub shows as ``|`` inside the span.
    """
    flat = " ".join(_printable(text).split())
    if len(flat) > MAX_TEXT:
        flat = flat[:MAX_TEXT - 1] + "…"
    if not flat:
        return "—"
    if table:
        flat = flat.replace("|", "\\|")
    fence = "`" * (max((len(run) for run in re.findall(r"`+", flat)), default=0) + 1)
    pad = " " if flat[0] in "` " or flat[-1] in "` " else ""
    return f"{fence}{pad}{flat}{pad}{fence}"


def cell(text: str) -> str:
    return code(text, table=True)


def render(outcomes: list[Ruling]) -> str:
    code_ = worst([o.exit for o in outcomes])
    lines = [f"## rtgate check: {_headline(outcomes, code_)} (exit {int(code_)})", "",
             "| board | flavor | scenario | metric | measured | budget | margin | verdict |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    notes: list[str] = []
    for o in outcomes:
        lines.extend(_rows(o))
        notes.extend(_notes(o))
    virtual = dict.fromkeys(o.result.board.name for o in outcomes
                            if o.result is not None and o.result.board.virtual)
    lines.append("")
    lines.extend(f"> ⚠️ {code(b)} is a {_VIRTUAL}: its numbers say nothing about real hardware."
                 for b in virtual)
    if notes:
        lines += ["", "**Not judged:**", ""] + [f"- {n}" for n in notes]
    traces = [o for o in outcomes if o.result is not None and o.result.trace is not None]
    if traces:
        lines += ["", "**Root cause at the breach:**", ""]
        lines += [_trace(o) for o in traces]
    return "\n".join(lines).rstrip("\n") + "\n"


def _headline(outcomes: list[Ruling], code_: Exit) -> str:
    if code_ is Exit.BUDGET:
        crash = any(isinstance(o, Crash) for o in outcomes)
        budget = any(not isinstance(o, Crash) and o.exit is Exit.BUDGET for o in outcomes)
        return "; ".join(w for w, on in ((_HEADLINE[code_], budget), (_CRASH, crash)) if on)
    if code_ is not Exit.INCOMPLETE:
        return _HEADLINE[code_]
    infra = any(isinstance(o, Infra) for o in outcomes)
    data = any(not isinstance(o, Infra) and o.exit is Exit.INCOMPLETE for o in outcomes)
    return "; ".join(w for w, on in ((_INCOMPLETE, data), (_INFRA, infra)) if on)


def _rows(o: Ruling) -> list[str]:
    if isinstance(o, Crash):
        return [f"| {cell(o.board)} | {cell(o.flavor)} | {cell(o.scenario)} | — | — | — | — | "
                f"💥 the kernel crashed: {cell(o.said)} |"]
    if isinstance(o, Infra):
        return [f"| {cell(o.board)} | {cell(o.flavor)} | {cell(o.scenario)} | — | — | — | — | "
                f"🛠️ infrastructure failure: {cell(o.message)} |"]
    if o.result is None:
        assert isinstance(o, Unjudged)
        return [f"| — | — | — | — | — | — | — | ⚠️ input error: {cell(o.message)} |"]
    board = o.result.board.name + (" (virtual)" if o.result.board.virtual else "")
    keys = (f"| {cell(board)} | {cell(flavor_of(o.result))} | {cell(o.result.scenario)} |")
    if isinstance(o, Unjudged):
        verdict = "⏭️ no budget (allowed)" if o.allowed else "⚠️ no budget"
        return [f"{keys} — | — | — | — | {verdict} |"]
    return [f"{keys} {c.metric} | {c.measured_text} | {c.op} {fmt(c.budget)}{c.unit} | "
            f"{c.margin_text} | {_MARK[c.verdict]} |" for c in o.checks]


def _trace(o: Ruling) -> str:
    """One bullet per traced run: the trace's text as code spans (it names kernel functions and
    tasks a pull request's kernel chose)."""
    assert o.result is not None and o.result.trace is not None
    trace = o.result.trace
    body = ([_breach(b) for b in trace.breaches] if trace.breaches
            else [code(trace.note or "no analysis")])
    label = code(f"{o.result.board.name} {flavor_of(o.result)} {o.result.scenario}")
    return f"- {label}: {code(explain_trace.headline(trace))}: " + "; ".join(body)


def _breach(b: TraceBreach) -> str:
    # A span per stack frame or trace entry: one long span would be cut at MAX_TEXT, maybe
    # before the culprit.
    text = code(explain_trace.breach(b, with_stack=False))
    if b.stack:
        text += ", stack: " + " ← ".join(code(f) for f in b.stack[:explain_trace.MAX_FRAMES])
    if b.tail:
        text += (f", {explain_trace.tail_label(b)}: "
                 + " · ".join(code(e) for e in b.tail[-explain_trace.MAX_TAIL:]))
    return text


def _notes(o: Ruling) -> list[str]:
    """Why checks were not judged: the result-wide reasons, else each check's own."""
    if isinstance(o, Crash):
        return [f"{code(o.label)}: the kernel under test crashed: {code(o.message)} (evidence: "
                f"{code(str(o.evidence or o.source))})"]
    if isinstance(o, Infra):
        return [f"{code(o.label)}: infrastructure failure, re-run once the board is healthy "
                f"(log: {code(str(o.source))})"]
    if isinstance(o, Unjudged):
        return [code(o.message)] if o.result is not None else []
    if o.incomplete:
        return [f"{code(o.label)} ({code(str(o.source))}): not decided from the data: "
                f"{code(why)}" for why in o.incomplete]
    return [f"{code(o.label)} {c.metric}: {code(c.why)}" for c in o.checks
            if c.verdict is Verdict.INCOMPLETE]
