"""``rtgate check``: judge result files against the budgets, write JUnit (and Markdown), print
each verdict, and say the worst as the exit code."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from rtgate import paths
from rtgate.ciout import escape
from rtgate.errors import Exit, InputError
from rtgate.gate import junit, markdown
from rtgate.gate.thresholds import load_thresholds, thresholds_file
from rtgate.gate.verdict import Evaluation, Ruling, Unjudged, Verdict, judge, worst
from rtgate.jsonfile import write_output


@dataclass(frozen=True)
class CheckSettings:
    results: tuple[Path, ...]
    junit: Path
    thresholds: Path | None = None  # None: thresholds.yml of the data root
    markdown: Path | None = None
    allow_unbudgeted: bool = False  # a result no budget matches is skipped, not an error


def check(settings: CheckSettings) -> Exit:
    try:
        thresholds = load_thresholds(thresholds_file(settings.thresholds))
    except InputError as exc:
        # Nothing can be judged, but CI still gets a report saying why.
        outcomes: list[Ruling] = [Unjudged(settings.thresholds or paths.THRESHOLDS,
                                           exc.oneline())]
    else:
        outcomes = judge(list(settings.results), thresholds, boards=paths.BOARDS,
                         allow_unbudgeted=settings.allow_unbudgeted)
    write_output(settings.junit, junit.render(outcomes))
    if settings.markdown:
        write_output(settings.markdown, markdown.render(outcomes))
    for o in outcomes:
        _print(o)
    return worst([o.exit for o in outcomes])


_TAG = {Verdict.PASS: "PASS", Verdict.FAIL: "FAIL", Verdict.INCOMPLETE: "INCOMPLETE"}


def _print(o: Ruling) -> None:
    # Labels, run ids, budget sources and details come from the results and the thresholds
    # file: escaped, so that none becomes a line of its own, or a CI workflow command.
    if isinstance(o, Unjudged):
        if o.allowed:
            print(f"SKIP {escape(o.label)}: {escape(o.message)}")
        else:
            print(f"rtgate: {escape(o.message)}", file=sys.stderr)
        return
    assert isinstance(o, Evaluation)
    virtual = " (virtual board: no real-time claim)" if o.result.board.virtual else ""
    print(f"{escape(o.label)} [{escape(o.result.run_id)}] budget {escape(o.budget.source)}"
          f"{virtual}")
    for c in o.checks:
        print(f"  {_TAG[c.verdict]:<10} {escape(c.detail)}")
    if o.exit is not Exit.OK:
        print(f"  -> exit {int(o.exit)}")
