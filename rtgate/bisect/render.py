"""A bisect in Markdown: the pull-request comment and `rtgate bisect`'s printed report."""

from __future__ import annotations

from rtgate.bisect.doc import BisectDoc, Step, label
from rtgate.errors import Exit, RtgateError
from rtgate.gate.markdown import cell, code
from rtgate.outcome import BisectOutcome

HEADLINE = {
    BisectOutcome.CONFIRMED: "❌ culprit found and confirmed",
    BisectOutcome.NOTHING: "✅ nothing to bisect",
    BisectOutcome.SPREAD: "❔ not confirmed: the regression may be spread",
    BisectOutcome.UNCONFIRMED: "❔ not confirmed",
    BisectOutcome.AMBIGUOUS: "❔ not confirmed: skipped patches",
    BisectOutcome.ENDS: "⚠️ the ends are wrong",
    BisectOutcome.UNMEASURED: "⚠️ no verdict: the ends could not be measured",
}

_REPLAYED = ("Re-decided from the rounds' result files (`rtgate bisect --replay`): the "
             "measuring job's verdicts, reports, state and times were not read.")


def markdown(doc: BisectDoc, *, replayed: bool = False) -> str:
    """The report; ``replayed``: re-decided from the rounds, which took no board time here."""
    n = len(doc.patches)
    lines = [f"## rtgate bisect: {HEADLINE[doc.outcome]} (exit {doc.exit})", "", doc.why, ""]
    if (p := doc.culprit_patch) is not None:
        lines += [f"Patch {p.number}: {code(p.file)} — {cell(p.subject)} ({cell(p.author)})", ""]
    if doc.skipped:
        lines += [f"Skipped (no build, no boot, or unknown at the step's cap): prefixes "
                  f"{', '.join(map(str, doc.skipped))}", ""]
    lines += _table(doc.steps, n, replayed=replayed) + [""]
    lines.append(f"{len(doc.steps)} measurements. " + (_REPLAYED if replayed else
                 f"{doc.measured_s:.0f} s measured, {doc.elapsed_s:.0f} s this session."))
    return "\n".join(lines) + "\n"


def _table(steps: list[Step], n: int, *, replayed: bool) -> list[str]:
    lines = ["| step | purpose | candidate | base | outcome | evidence | s |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for i, s in enumerate(steps, start=1):
        m = s.measurement
        lines.append(f"| {i} | {s.purpose} | {label(s.cand, n)} | {label(s.base, n)} | "
                     f"{m.outcome} | {cell(m.summary)} | "
                     f"{'—' if replayed else format(s.seconds, '.0f')} |")
    return lines


def refused_markdown(error: RtgateError, steps: list[Step], n: int) -> str:
    """A replay that stopped on its input: the error (untrusted text: the artifact's names) and
    the steps re-decided before it. No outcome: nothing was concluded."""
    headline = ("⚠️ input error: the bisect's rounds were refused, nothing was concluded"
                if error.code is Exit.INPUT else
                "🛠️ no verdict: the bisect's rounds end before it finished (the lab job's log "
                "says why)")
    lines = [f"## rtgate bisect: {headline} (exit {int(error.code)})", "",
             code(error.oneline()), ""]
    if steps:
        lines += ["Re-decided before that:", ""]
        lines += _table(steps, n, replayed=True)
    return "\n".join(lines) + "\n"
