"""ab.md: an A/B run in Markdown, for the pull-request comment (also printed)."""

from __future__ import annotations

import statistics

from rtgate.ab.loop import ABRun
from rtgate.errors import Exit
from rtgate.gate.markdown import cell, code
from rtgate.outcome import ABOutcome
from rtgate.stats.ab import EFFECT_REPORTED
from rtgate.textfmt import fmt

_HEADLINE = {
    ABOutcome.SAME: "🟰 same", ABOutcome.BETTER: "✅ better", ABOutcome.WORSE: "❌ worse",
    ABOutcome.BUDGET: "❌ a candidate round exceeded its budget",
    ABOutcome.CRASHED: "💥 the candidate's kernel crashed in a round (its failure, with the "
                       "board's evidence)",
    ABOutcome.UNDECIDED: "❔ undecided at the time cap (measure longer)",
    ABOutcome.INCOMPLETE: "⚠️ not decided from the data: a round is incomplete, measure more",
}
_INFRA = "🛠️ infrastructure failure: a round has no measurement, re-run once the board is healthy"


def markdown(run: ABRun, heading: str = "## rtgate ab") -> str:
    seq = run.seq
    said = _INFRA if run.outcome is ABOutcome.INCOMPLETE and run.infra \
        else _HEADLINE[run.outcome]
    lines = [f"{heading}: {said} (exit {int(run.exit)})", ""]
    if run.why:
        lines += [f"{code(run.why)}", ""]
    if not run.spec.kernel_target:
        b = run.sides[1].scenarios
        lines += [f"> ⚠️ {code(run.spec.name)} measures its running kernel: A and B are the "
                  "same kernel" + (f", B with the scenarios of {code(str(b))}" if b else
                                   " (an A/A check)")
                  + ". Not a comparison of two kernels.", ""]
    if any(v.evaluation.result.board.virtual for v in run.verdicts):
        lines += [f"> ⚠️ {code(run.spec.name)} is a virtual board — not a real-time claim.", ""]
    spent = f"{seq.alpha_spent:.3g} of {seq.alpha:g}" if seq else "0"
    took = ("re-decided from the rounds' results" if run.elapsed_s is None
            else f"{run.elapsed_s:.0f} s")
    if walls := [v.wall_s for v in run.verdicts if v.wall_s is not None]:
        # What a round costs beyond its measurement (boots, reboots) is the board's pace.
        took += (f"; board time a round: median {statistics.median(walls):.0f} s, "
                 f"{min(walls):.0f}–{max(walls):.0f} s")
    planned = seq.planned if seq else "—"
    settings = run.settings
    lines += [f"Rounds interleaved A B B A …: {run.pairs} a side of "
              f"{fmt(settings.round_duration)} s ({took}; cap {fmt(settings.max_time)} s, "
              f"{planned} planned); {len(seq.looks) if seq else 0} look(s), "
              f"false-alarm rate spent {spent} (O'Brien-Fleming-type alpha spending, exact "
              "boundaries; standard errors floored at the calibration bank's log-sd). "
              f"Effect: {EFFECT_REPORTED}.", "",
              "| board | flavor | scenario | outcome | effect (B/A, interval) | rounds A/B "
              "| budget | candidate rounds within budget |",
              "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for key in run.budgets:
        d = seq.latest(key) if seq else None
        e = d.headline if d else None
        effect = f"{e} at {e.confidence:.4g}" if e else "—"
        mine = [v for v in run.verdicts if v.key == key and v.side.role == "candidate"]
        within = sum(v.evaluation.exit is Exit.OK for v in mine)
        budget = run.budgets[key]
        text = " · ".join(f"{n} ≤ {fmt(v)}" for n, v in (
            ("max", budget.max_us), ("avg", budget.avg_us), ("p99", budget.p99_us),
            ("p99.99", budget.p9999_us)) if v is not None) + " µs"
        if budget.min_samples:
            text += f"; ≥ {budget.min_samples} samples pooled"
        margin = run.margins.get(key)
        if margin is not None:
            text += f"; same within {margin}"
        lines.append("| " + " | ".join([
            *(cell(k) for k in key), f"**{d.outcome.value if d else 'unknown'}**",
            effect, f"{len(run.rounds['A'].get(key, []))}/"
            f"{len(run.rounds['B'].get(key, []))}", cell(text),
            f"{within}/{len(mine)}"]) + " |")
    lines.append("")
    for key in run.budgets:
        d = seq.latest(key) if seq else None
        if d and d.stalls:
            lines.append(f"- {cell('/'.join(key))}: {code(str(d.stalls))}")
        lines += [f"- {cell('/'.join(key))}: {code(r)}" for r in (d.reasons if d else [])]
    lines += [f"- {code(n)}" for n in run.notes]
    return "\n".join(lines).rstrip("\n") + "\n"
