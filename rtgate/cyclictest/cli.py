"""``rtgate parse RAW... -o result.json``: normalize cyclictest output into a result."""

from __future__ import annotations

import argparse
from pathlib import Path

from rtgate.errors import Exit

HELP = """Read the output files of ONE cyclictest run and write the normalized result.

Formats are detected per file: rt-tests 2.x --json, -h/-H histogram (stdout or --histfile,
rt-tests 1.x too), verbose -v logs, and T: summary lines (-q, or the live screen). Several files
of the same run are merged; files that contradict each other are refused.

exit codes: 0 written; 2 malformed or contradictory input (one line on stderr naming the file
and line; the output is not written)."""


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("parse", help="normalize cyclictest output into result.json",
                       description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("raw", nargs="+", type=Path, metavar="RAW", help="cyclictest output files")
    p.add_argument("-o", "--output", type=Path, required=True, metavar="RESULT",
                   help="where to write result.json")
    p.add_argument("--board", default="unknown", help="board name (default: unknown)")
    p.add_argument("--virtual", action="store_true",
                   help="the board is a VM or emulator: its numbers are no real-time claim")
    p.add_argument("--scenario", default="unknown", help="load scenario (default: unknown)")
    p.add_argument("--flavor", default=None,
                   help="kernel flavor (default: rt or stock, from the kernel version string)")
    p.add_argument("--run-id", default=None,
                   help="run id (default: derived from board, scenario, start and the files)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # Imported here: numpy and the readers would slow down every other rtgate command's start.
    from rtgate.cyclictest.parse import parse

    result = parse(args.raw, board=args.board, virtual=args.virtual, scenario=args.scenario,
                   flavor=args.flavor, run_id=args.run_id)
    result.write(args.output)
    return int(Exit.OK)
