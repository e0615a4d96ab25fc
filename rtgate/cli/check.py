"""``rtgate check`` (judge results against the budgets; JUnit, Markdown) and ``rtgate thresholds
diff`` (which budgets a change loosens or tightens)."""

from __future__ import annotations

import argparse
from pathlib import Path

from rtgate.cli.args import add_thresholds_option
from rtgate.gate import budgetdiff
from rtgate.gate.check import CheckSettings, check
from rtgate.gate.thresholds import load_thresholds

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


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser(
        "check", help="gate results against latency budgets; write JUnit",
        description="Judge each RESULT (rtgate/result/v3 JSON, or older) against the most specific "
                    "matching budget in the thresholds file.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("results", nargs="+", type=Path, metavar="RESULT", help="result.json files")
    add_thresholds_option(p, optional=False)
    p.add_argument("--junit", type=Path, required=True, metavar="OUT.xml",
                   help="JUnit XML report: one testsuite per result")
    p.add_argument("--markdown", type=Path, metavar="OUT.md",
                   help="Markdown summary table, to append to $GITHUB_STEP_SUMMARY")
    p.add_argument("--allow-unbudgeted", action="store_true",
                   help="a result no budget matches is reported as skipped, not an error")
    p.set_defaults(func=check_handler)

    t = subparsers.add_parser(
        "thresholds", help="compare two thresholds files",
        description="Work with budget files (schema rtgate/thresholds/v3; v2 still read).")
    tsub = t.add_subparsers(dest="thresholds_command", required=True, metavar="ACTION")
    d = tsub.add_parser(
        "diff", help="which budgets loosen or tighten, by how much",
        description="For every board x flavor x scenario either file names, compare the budget "
                    "that judges such a result in OLD with the one in NEW; each pair of "
                    "budgets is reported once: loosens, tightens, mixed or removes.",
        epilog="exit codes: 0 the diff was printed (changes or not), 2 a file does not load.")
    d.add_argument("old", type=Path, metavar="OLD")
    d.add_argument("new", type=Path, metavar="NEW")
    d.set_defaults(func=diff_handler)


def check_handler(args: argparse.Namespace) -> int:
    return int(check(CheckSettings(
        results=tuple(args.results), junit=args.junit, thresholds=args.thresholds,
        markdown=args.markdown, allow_unbudgeted=args.allow_unbudgeted)))


def diff_handler(args: argparse.Namespace) -> int:
    changes = budgetdiff.diff(load_thresholds(args.old), load_thresholds(args.new))
    print(budgetdiff.text(changes), end="")
    return 0
