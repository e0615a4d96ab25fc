"""The `rtgate` command line: one subcommand per stage, each registered by its own package."""

from __future__ import annotations

import argparse
import importlib
import sys
import traceback
from collections.abc import Sequence

from rtgate import __version__
from rtgate.errors import Exit, RtgateError

EXIT_CODES = """exit codes:
  0  success; every budget met
  1  a latency budget was exceeded (regression)
  2  usage or input error (unreadable/malformed file, no matching budget, bad flag)
  3  measurement incomplete or infrastructure failure (partial/degraded result, too few
     samples, board did not boot), or rtgate itself crashed: never a pass, never a
     latency verdict
"""

# Each module defines register(subparsers); order is the order of `rtgate --help`.
COMMAND_MODULES = [
    "rtgate.cyclictest.cli",
    "rtgate.bench.cli",
    "rtgate.gate.cli",
    "rtgate.kernel.cli",
    "rtgate.board.cli",
    "rtgate.pipeline",
    "rtgate.report.cli",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rtgate",
        description="Latency-regression gate for real-time Linux.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"rtgate {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except RtgateError as exc:
        print(f"rtgate: {exc.oneline()}", file=sys.stderr)
        return int(exc.code)
    except KeyboardInterrupt:
        print("rtgate: interrupted", file=sys.stderr)
        return int(Exit.INCOMPLETE)
    except Exception as exc:  # noqa: BLE001 - Python's own exit 1 would read as "budget exceeded"
        traceback.print_exc()
        print(f"rtgate: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return int(Exit.INCOMPLETE)
