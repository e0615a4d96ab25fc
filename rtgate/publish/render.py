"""The pull-request comment (with its banner when a pull request changes gate inputs) and the
outcome JSON, in words that keep a latency verdict, "not decided from the data" and an
infrastructure failure apart; whatever came from an artifact is a code span."""

from __future__ import annotations

import json
from pathlib import Path

from rtgate.ab.render import markdown as ab_markdown
from rtgate.errors import InputError
from rtgate.gate import budgetdiff, markdown
from rtgate.gate.markdown import code
from rtgate.gate.thresholds import Thresholds, load_thresholds
from rtgate.outcome import GATE_EXIT, GateOutcome
from rtgate.publish.context import Context
from rtgate.publish.judgement import BoardJudgement, Judgement

MARKER = "<!-- rtgate-latency-gate -->"
# GitHub refuses a comment or a check run's summary over 65 536 characters, and a refused update
# would leave the previous push's verdict standing: the comment is kept below it.
LIMIT = 60_000
LISTED = 30  # of a list a pull request controls (changed paths, budgets, artifact names)


HEADLINE = {
    GateOutcome.PASS: "✅ latency verdict: every budget met",
    GateOutcome.REGRESSION: "❌ latency verdict: regression, a budget was exceeded",
    GateOutcome.CRASHED: "💥 the kernel under test crashed: its failure (panic, oops, hang or a "
                         "reboot nobody asked for), with the board's evidence",
    GateOutcome.INCOMPLETE: "⚠️ not decided from the data: the measurement is incomplete, "
                            "measure more (no latency verdict)",
    GateOutcome.INFRASTRUCTURE: "🛠️ infrastructure failure: no measurement, re-run once the "
                                "board is healthy (no latency verdict)",
    GateOutcome.INPUT: "⚠️ input error: nothing was judged",
    GateOutcome.UNDECIDED: "❔ undecided at the time cap: the A/B rounds could not tell the "
                           "pull request's kernel from main's, measure longer (no latency "
                           "verdict)",
    GateOutcome.UNCHANGED: "✅ no kernel input changed: nothing measured, nothing to judge",
}
UNCHANGED_TEXT = ("This pull request changes nothing under `kernel/patches/` or `kernel/configs/` "
                  "(its diff from the merge base with the default branch, read by the default "
                  "branch's plan job): no kernel was built, booted or measured, and there is no "
                  "latency verdict to give. A push that changes a kernel input runs the gate.")


def banner(context: Context, ours: Thresholds, theirs: Path | None) -> list[str]:
    """The gate inputs a pull request changed, shown first, and what its budgets would do."""
    if not context.changed_inputs:
        return []
    lines = ["> [!WARNING]",
             "> **This pull request changes gate inputs.** They are not used: the gate judges a "
             "pull request's kernel with the default branch's budgets, scenarios, boards and "
             "rtgate only. A maintainer reviews these changes (CODEOWNERS):", ">"]
    lines += _listed([f"> - {code(p)}" for p in context.changed_inputs], "> - ")
    if theirs is not None:
        try:
            changes = budgetdiff.diff(ours, load_thresholds(theirs))
        except InputError as exc:
            lines += [">", f"> Its `thresholds.yml` does not load: {code(exc.oneline())}"]
        else:
            lines += [">", "> `rtgate thresholds diff` (default branch → pull request):", ">"]
            lines += _listed([f"> - **{c.verdict}** {code(c.scope)}: {code(c.text)}"
                              for c in changes], "> - ")
            if not changes:
                lines.append("> - no budget changes")
    return lines + [""]


def render(judgement: Judgement, *, banner_lines: list[str], comparison: str | None,
           run_url: str | None) -> str:
    lines = [MARKER, "## Latency gate", ""] + banner_lines
    lines += [f"**{HEADLINE[judgement.kind]}**", ""]
    if judgement.unchanged:
        lines += [UNCHANGED_TEXT, ""]
    lines += [f"- {code(b.name)}{_on(b)}: {HEADLINE[b.kind]}" for b in judgement.boards]
    if judgement.ignored:
        why = ("nothing was to be measured" if judgement.unchanged
               else "no board of the default branch's `bench/boards`")
        lines += ["", f"Ignored ({why}): "
                  + ", ".join(_listed([code(n) for n in judgement.ignored], ""))]
    for b in judgement.boards:
        if b.ab is not None:
            lines += ["", ab_markdown(b.ab, f"### A/B on {code(b.name)}: main's kernel (A) "
                                            "against this pull request's (B)").rstrip("\n")]
    if not judgement.unchanged:
        lines += ["", "<details><summary>Every check</summary>", "",
                  markdown.render(judgement.outcomes), "</details>", ""]
    else:
        lines.append("")
    if comparison is not None:
        lines += ["### Against the latest main results", "", comparison]
    if run_url:
        lines.append(f"[Gate run]({run_url})")
    return _fit(lines, run_url)


def _on(board: BoardJudgement) -> str:
    return f" (on {code(board.instance)})" if board.instance not in (None, board.name) else ""


def _listed(items: list[str], prefix: str) -> list[str]:
    if len(items) <= LISTED:
        return items
    return [*items[:LISTED], f"{prefix}… and {len(items) - LISTED} more"]


def _fit(lines: list[str], run_url: str | None) -> str:
    """The comment, cut at a line below LIMIT when it is longer: never inside a line, where a
    code span holding a pull request's text would lose its closing backticks."""
    text = "\n".join(lines).rstrip("\n") + "\n"
    if len(text) <= LIMIT:
        return text
    cut = [f"*Cut at {LIMIT} characters (GitHub's limit). Every check is in `junit.xml` of the "
           "publisher's `latency-report` artifact"
           + (f" ([gate run]({run_url}))*." if run_url else "*.")]
    # What follows the kept lines: a closing </details>, an empty line, the note.
    room = LIMIT - len("</details>\n\n") - len(cut[0]) - 1
    kept: list[str] = []
    for line in lines:
        room -= len(line) + 1
        if room < 0:
            break
        kept.append(line)
    # Close a <details> the cut left open, so that the note shows.
    closing = ["</details>"] if kept.count("</details>") < sum(
        ln.startswith("<details>") for ln in kept) else []
    return "\n".join([*kept, *closing, "", *cut]) + "\n"


def outcome_json(judgement: Judgement) -> str:
    kind = judgement.kind
    return json.dumps({"outcome": kind.value, "exit": int(GATE_EXIT[kind]), "title": HEADLINE[kind],
                       "boards": {b.name: b.kind.value for b in judgement.boards}}, indent=1)
