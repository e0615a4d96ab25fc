"""``rtgate check``: judge results against thresholds.yml, write JUnit (and Markdown), exit."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rtgate import paths
from rtgate.errors import Exit, InputError
from rtgate.gate import junit, markdown
from rtgate.gate.thresholds import load_thresholds
from rtgate.gate.verdict import Evaluation, Outcome, Unjudged, Verdict, judge, worst
from rtgate.result import write_atomic

EPILOG = """\
exit codes (when several apply, 2 wins over 3, which wins over 1):
  0  every budgeted metric of every result is within its budget
  1  a budget was exceeded: a latency regression
  2  usage or input error: unreadable or malformed result or thresholds file, or no budget
     matches a result (unless --allow-unbudgeted)
  3  a result is incomplete, never a pass: status partial or degraded, fewer samples than
     min_samples, a percentile budget on a result without percentiles, or a percentile known
     only as ">= histogram limit" with the limit at or below the budget

The JUnit (and Markdown) files are written whatever the exit code. Budget selection: the most
specific budget matching board, flavor and scenario ("*" matches any) wins; an exact board
outweighs an exact flavor, which outweighs an exact scenario. The flavor of a result is
kernel.flavor, else "rt" when kernel.preempt_rt, else "stock".
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "check", help="gate results against latency budgets; write JUnit",
        description="Judge each RESULT (rtgate/result/v2 JSON, or v1) against the most specific "
                    "matching budget in the thresholds file.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("results", nargs="+", type=Path, metavar="RESULT", help="result.json files")
    p.add_argument("--thresholds", type=Path, default=paths.THRESHOLDS, metavar="FILE",
                   help="budgets (default: %(default)s)")
    p.add_argument("--junit", type=Path, required=True, metavar="OUT.xml",
                   help="JUnit XML report: one testsuite per result")
    p.add_argument("--markdown", type=Path, metavar="OUT.md",
                   help="Markdown summary table, to append to $GITHUB_STEP_SUMMARY")
    p.add_argument("--allow-unbudgeted", action="store_true",
                   help="a result no budget matches is reported as skipped, not an error")
    p.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    try:
        thresholds = load_thresholds(args.thresholds)
    except InputError as exc:
        # Nothing can be judged, but CI still gets a report saying why.
        outcomes: list[Outcome] = [Unjudged(args.thresholds, exc.oneline())]
    else:
        outcomes = judge(args.results, thresholds, allow_unbudgeted=args.allow_unbudgeted)
    _write(args.junit, junit.render(outcomes))
    if args.markdown:
        _write(args.markdown, markdown.render(outcomes))
    for o in outcomes:
        _print(o)
    return int(worst([o.exit for o in outcomes]))


def _write(path: Path, text: str) -> None:
    try:
        write_atomic(path, text)
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror}", path=path) from exc


_TAG = {Verdict.PASS: "PASS", Verdict.FAIL: "FAIL", Verdict.INCOMPLETE: "INCOMPLETE"}


def _print(o: Outcome) -> None:
    if isinstance(o, Unjudged):
        if o.allowed:
            print(f"SKIP {o.label}: {o.message}")
        else:
            print(f"rtgate: {o.message}", file=sys.stderr)
        return
    assert isinstance(o, Evaluation)
    virtual = " (virtual board: no real-time claim)" if o.result.board.virtual else ""
    print(f"{o.label} [{o.result.run_id}] budget {o.budget.source}{virtual}")
    for c in o.checks:
        print(f"  {_TAG[c.verdict]:<10} {c.detail}")
    if o.exit is not Exit.OK:
        print(f"  -> exit {int(o.exit)}")
