"""``rtgate check``, ``rtgate thresholds diff`` and ``rtgate publish``: the gate's commands.

check judges results against thresholds.yml and writes JUnit (and Markdown); thresholds diff says
which budgets a change loosens or tightens; publish re-judges a gate's artifacts for the
publisher. The last two import their modules when run, so that ``rtgate check`` stays light.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rtgate import paths
from rtgate.cli.args import comma_names
from rtgate.errors import Exit, InputError
from rtgate.gate import junit, markdown
from rtgate.gate.thresholds import load_thresholds
from rtgate.gate.verdict import Evaluation, Outcome, Unjudged, Verdict, judge, worst
from rtgate.jsonfile import write_atomic

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
    p.add_argument("--thresholds", type=Path, metavar="FILE",
                   help="budgets (default: thresholds.yml of RTGATE_ROOT or the checkout)")
    p.add_argument("--junit", type=Path, required=True, metavar="OUT.xml",
                   help="JUnit XML report: one testsuite per result")
    p.add_argument("--markdown", type=Path, metavar="OUT.md",
                   help="Markdown summary table, to append to $GITHUB_STEP_SUMMARY")
    p.add_argument("--allow-unbudgeted", action="store_true",
                   help="a result no budget matches is reported as skipped, not an error")
    p.set_defaults(func=handler)

    t = subparsers.add_parser(
        "thresholds", help="compare two thresholds files",
        description="Work with budget files (schema rtgate/thresholds/v1).")
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

    pub = subparsers.add_parser(
        "publish", help="re-judge gate artifacts from their results: comment, JUnit, outcome",
        description="Judge the result.json files of gate-BOARD directories (downloaded "
                    "artifacts or one board's --out) with these budgets; exit-code files, JUnit "
                    "and Markdown inside them are ignored. Writes the pull-request comment "
                    "(Markdown, every artifact-borne text escaped), JUnit and an outcome JSON.",
        epilog=PUBLISH_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    pub.add_argument("artifacts", nargs="*", type=Path, metavar="gate-BOARD",
                     help="directories named gate-BOARD; other names are listed as ignored")
    pub.add_argument("--thresholds", type=Path, metavar="FILE",
                     help="budgets (default: thresholds.yml of RTGATE_ROOT or the checkout)")
    pub.add_argument("--boards", type=Path, metavar="DIR",
                     help="board definitions, the allowlist (default: bench/boards)")
    pub.add_argument("--expect", type=comma_names, metavar="BOARDS",
                     help="comma-separated boards the gate ran on (default: the context's, "
                          "else every known board found): a missing one is an infrastructure "
                          "failure")
    pub.add_argument("--scenarios", type=comma_names, metavar="LIST",
                     help="scenarios the gate ran (default: the context's, else each board's)")
    pub.add_argument("--context", type=Path, metavar="DIR",
                     help="the gate's run-context artifact: context.json (+ the pull "
                          "request's thresholds.yml), for the changed-inputs banner")
    pub.add_argument("--baseline", type=Path, metavar="HISTORY",
                     help="results of main to compare with (the history store)")
    pub.add_argument("--run-url", metavar="URL", help="link to the gate run")
    pub.add_argument("--markdown", type=Path, required=True, metavar="OUT.md")
    pub.add_argument("--junit", type=Path, metavar="OUT.xml")
    pub.add_argument("--outcome", type=Path, metavar="OUT.json",
                     help='{"outcome": pass|regression|incomplete|infrastructure|input, ...}')
    pub.set_defaults(func=publish_handler)


PUBLISH_EPILOG = """\
exit codes: 0 every board passed, 1 a latency regression, 2 an input error (a result that
  does not load or claims another run), 3 no verdict: incomplete measurement or infrastructure
  failure (the outcome JSON says which), 4 undecided at the time cap (a board the context's
  `ab` plan names: its A/B rounds, re-decided, could not tell the kernels apart; measure
  longer). The files are written whatever the code.
"""


def _thresholds(given: Path | None) -> Path:
    """The file named, else the data root's, which must then exist (paths.require)."""
    return given or paths.require(paths.THRESHOLDS, "--thresholds FILE")



def diff_handler(args: argparse.Namespace) -> int:
    from rtgate.gate import budgetdiff

    changes = budgetdiff.diff(load_thresholds(args.old), load_thresholds(args.new))
    print(budgetdiff.text(changes), end="")
    return 0


def publish_handler(args: argparse.Namespace) -> int:
    from rtgate.gate import publish

    thresholds = load_thresholds(_thresholds(args.thresholds))
    boards = args.boards or paths.require(paths.BOARDS, "--boards DIR")
    context, theirs = publish.load_context(args.context) if args.context else (None, None)
    expected = args.expect or (context.boards if context else None)
    scenarios = args.scenarios or (context.scenarios if context else None) or None
    judged = publish.judge_artifacts(args.artifacts, thresholds, boards, expected, scenarios,
                                     context.ab if context else None)
    banner = publish.banner(context, thresholds, theirs) if context else []
    text = publish.render(judged, banner_lines=banner,
                          comparison=_comparison(args.baseline, judged.accepted, thresholds),
                          run_url=args.run_url)
    publish.write(args.markdown, text)
    if args.junit:
        publish.write(args.junit, junit.render(judged.outcomes))
    if args.outcome:
        publish.write(args.outcome, publish.outcome_json(judged) + "\n")
    print(publish.outcome_json(judged))
    return int(publish.exit_of(judged))


def _comparison(baseline: Path | None, accepted: list[Path], thresholds: object) -> str | None:
    if baseline is None:
        return None
    from rtgate.report import compare
    from rtgate.report.history import runs_of
    from rtgate.report.judge import Judge
    from rtgate.report.runs import load_run

    try:
        before = runs_of([baseline])
    except InputError as exc:
        return f"No main baseline to compare with: {markdown.code(exc.oneline())}"
    judge_ = Judge(thresholds)  # type: ignore[arg-type]
    return compare.markdown(before, [load_run(p) for p in accepted], judge_)


def handler(args: argparse.Namespace) -> int:
    try:
        thresholds = load_thresholds(_thresholds(args.thresholds))
    except InputError as exc:
        # Nothing can be judged, but CI still gets a report saying why.
        outcomes: list[Outcome] = [Unjudged(args.thresholds or paths.THRESHOLDS,
                                            exc.oneline())]
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
