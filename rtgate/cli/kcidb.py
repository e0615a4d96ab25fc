"""``rtgate kcidb``: a gate run as one KCIDB report (and, when a lab configures it, sent)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from rtgate.cli.args import add_thresholds_option, comma_names, duration
from rtgate.errors import InputError
from rtgate.kcidb.engine import KcidbSettings, kcidb
from rtgate.kcidb.send import Endpoint

EPILOG = """\
exit codes: 0 the report is written and valid (whatever the verdicts in it: `rtgate publish` is
  the gate) and, with --send, processed or queued by the endpoint; 1 the endpoint rejected the
  report; 2 an input error (a run directory or context that does not load, a bad origin or
  URL, --send without its variables); 3 not delivered (the token refused, the endpoint
  unreachable after its retries). docs/kcidb.md says what goes where.

--send reads the endpoint from RTGATE_KCIDB_URL and the token from RTGATE_KCIDB_TOKEN (never
from the command line, which other users of the machine can read).
"""


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser(
        "kcidb", help="a gate run as one KCIDB report (checkout, builds, tests, issues)",
        description="Judge a gate run's results as `rtgate publish` does and write them as one "
                    "KCIDB report (kcidb-io schema v5.3, validated): a checkout per kernel "
                    "source and patch series, a build per flavor, a boot test per board run, "
                    "rt-tests.* tests with latencies in seconds, the A/B verdict, an issue and "
                    "an incident per exceeded budget.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+", type=Path, metavar="RUN",
                   help="gate-BOARD artifact directories, or one `rtgate pipeline --out` "
                        "directory with --board")
    p.add_argument("--out", type=Path, required=True, metavar="REPORT.json")
    p.add_argument("--origin", required=True, metavar="NAME",
                   help="the lab's KCIDB origin ([a-z0-9_]+, given by KernelCI)")
    p.add_argument("--board", metavar="NAME",
                   help="the board of a plain run directory (not named gate-BOARD)")
    p.add_argument("--flavors", type=comma_names, metavar="LIST",
                   help="with --board: the flavors the run measured (default: the board's)")
    p.add_argument("--run-id", metavar="ID",
                   help="the gate run's id, part of every test id (default: $GITHUB_RUN_ID, "
                        "else a digest of the results' run ids)")
    p.add_argument("--context", type=Path, metavar="DIR",
                   help="the gate's run-context artifact (context.json): the commit, pull "
                        "request and A/B plans")
    add_thresholds_option(p, optional=False)
    p.add_argument("--boards", type=Path, metavar="DIR",
                   help="board definitions (default: bench/boards)")
    p.add_argument("--scenarios", type=comma_names, metavar="LIST",
                   help="scenarios the gate ran (default: the context's, else each board's)")
    p.add_argument("--commit", metavar="SHA", help="the commit measured (default: the "
                                                   "context's head_sha)")
    p.add_argument("--run-url", metavar="URL", help="link to the gate run")
    p.add_argument("--site-url", metavar="URL",
                   help="the results site holding these runs' pages (main's runs)")
    p.add_argument("--repository-url", metavar="URL",
                   help="the repository, for links to the series' patches at --commit")
    p.add_argument("--files", type=Path, metavar="DIR",
                   help="write each build's .config and log (as .txt) under DIR/builds/")
    p.add_argument("--files-url", metavar="URL", help="where DIR is served")
    p.add_argument("--send", action="store_true",
                   help="send the report to the KCIDB-NG endpoint $RTGATE_KCIDB_URL with the "
                        "token $RTGATE_KCIDB_TOKEN, and wait for its status")
    p.add_argument("--status-wait", type=duration, default=300, metavar="DURATION",
                   help="how long to poll the submission's status (default 300s)")
    p.set_defaults(func=handler)


def _endpoint(args: argparse.Namespace) -> Endpoint | None:
    if not args.send:
        return None
    url, token = os.environ.get("RTGATE_KCIDB_URL", ""), os.environ.get("RTGATE_KCIDB_TOKEN", "")
    if not url or not token:
        raise InputError("--send needs RTGATE_KCIDB_URL and RTGATE_KCIDB_TOKEN in the "
                         "environment (the lab's secrets)")
    # A status poll every 5 s, more often when the wait is short.
    return Endpoint(url=url, token=token, status_wait_s=args.status_wait,
                    poll_s=min(5.0, max(0.5, args.status_wait / 10)))


def handler(args: argparse.Namespace) -> int:
    return int(kcidb(KcidbSettings(
        runs=tuple(args.runs), out=args.out, origin=args.origin, board=args.board,
        flavors=tuple(args.flavors or ()),
        run_id=args.run_id, context=args.context, thresholds=args.thresholds,
        boards=args.boards, scenarios=tuple(args.scenarios or ()), run_url=args.run_url,
        site_url=args.site_url, files=args.files, files_url=args.files_url,
        repository_url=args.repository_url, commit=args.commit, send=_endpoint(args))))
