"""``rtgate publish``: re-judge a gate's artifacts from their results for the publisher."""

from __future__ import annotations

import argparse
from pathlib import Path

from rtgate.cli.args import add_thresholds_option, comma_names
from rtgate.publish.engine import publish
from rtgate.publish.settings import PublishSettings

EPILOG = """\
exit codes: 0 every board passed (or the context says the pull request changes no kernel
  input: outcome "unchanged", nothing measured or judged), 1 a latency regression, 2 an input
  error (a result that does not load or claims another run), 3 no verdict: incomplete
  measurement or infrastructure failure (the outcome JSON says which), 4 undecided at the
  time cap (a board the context's `ab` plan names: its A/B rounds, re-decided, could not tell
  the kernels apart; measure longer). The files are written whatever the code.
"""


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    pub = subparsers.add_parser(
        "publish", help="re-judge gate artifacts from their results: comment, JUnit, outcome",
        description="Judge the result.json files of gate-BOARD directories (downloaded "
                    "artifacts or one board's --out) with these budgets; exit-code files, JUnit "
                    "and Markdown inside them are ignored. Writes the pull-request comment "
                    "(Markdown, every artifact-borne text escaped), JUnit and an outcome JSON.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    pub.add_argument("artifacts", nargs="*", type=Path, metavar="gate-BOARD",
                     help="directories named gate-BOARD; other names are listed as ignored")
    add_thresholds_option(pub, optional=False)
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
                     help='{"outcome": pass|regression|incomplete|infrastructure|input|'
                          'undecided|unchanged, ...}')
    pub.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    return int(publish(PublishSettings(
        artifacts=tuple(args.artifacts), markdown=args.markdown, thresholds=args.thresholds,
        boards=args.boards, expect=tuple(args.expect or ()),
        scenarios=tuple(args.scenarios or ()), context=args.context, baseline=args.baseline,
        run_url=args.run_url, junit=args.junit, outcome=args.outcome)))
