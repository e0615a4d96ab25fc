"""The `rtgate` command line: one subcommand per stage, each registered by its own module here
that turns argv into settings for its engine."""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
import traceback
from collections.abc import Sequence

from rtgate import __version__
from rtgate.ciout import CommandGuard
from rtgate.errors import Exit, RtgateError

EXIT_CODES = """exit codes:
  0  success; every budget met
  1  a latency budget was exceeded (regression), or the kernel under test crashed (a panic,
     oops, hang or reboot the board's console, pstore or journal shows): the kernel's failure
  2  usage or input error (unreadable/malformed file, no matching budget, bad flag)
  3  measurement incomplete or infrastructure failure (partial/degraded result, too few
     samples, board did not boot), or rtgate itself crashed: never a pass, never a
     latency verdict
  4  an A/B comparison is undecided (too few rounds to tell same from worse or better):
     measure more; not an infrastructure failure
"""

# Each module defines register(subparsers); order is the order of `rtgate --help`. The command
# names let a run import only its own stage: `rtgate check` in a CI step should not pay for numpy,
# jinja2 and the bench runner.
COMMANDS = {
    "parse": "rtgate.cli.parse",
    "bench": "rtgate.cli.bench",
    "check": "rtgate.cli.check",
    "thresholds": "rtgate.cli.check",
    "publish": "rtgate.cli.publish",
    "kcidb": "rtgate.cli.kcidb",
    "kernel": "rtgate.cli.kernel",
    "board": "rtgate.cli.board",
    "pipeline": "rtgate.cli.pipeline",
    "ab": "rtgate.cli.ab",
    "calibrate": "rtgate.cli.calibrate",
    "bisect": "rtgate.cli.bisect",
    "sweep": "rtgate.cli.sweep",
    "report": "rtgate.cli.report",
    "compare": "rtgate.cli.report",
    "lab": "rtgate.cli.lab",
}
COMMAND_MODULES = list(dict.fromkeys(COMMANDS.values()))


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser for ``command`` alone when it is known, else for every command (help, errors)."""
    parser = argparse.ArgumentParser(
        prog="rtgate",
        description="Latency-regression gate for real-time Linux.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"rtgate {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    modules = [COMMANDS[command]] if command in COMMANDS else COMMAND_MODULES
    for name in modules:
        importlib.import_module(name).register(sub)
    return parser


def _terminated(signum: int, frame: object) -> None:
    # SIGTERM (a cancelled CI job, timeout(1), a runner's shutdown) unwinds like Ctrl-C, so that
    # every finally runs: Python's default ends the process at once, and the emulator (its own
    # session) or a load kept running for the next job to measure beside.
    raise KeyboardInterrupt(signal.Signals(signum).name)


def main(argv: Sequence[str] | None = None) -> int:
    # Whatever rtgate prints, no line of it becomes a CI workflow command (rtgate.ciout).
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = CommandGuard(out), CommandGuard(err)  # type: ignore[assignment]
    try:
        return _main(argv)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        sys.stdout, sys.stderr = out, err


def _main(argv: Sequence[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv[0] if argv else None)
    args = parser.parse_args(argv)
    previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        return int(args.func(args))
    except RtgateError as exc:
        print(f"rtgate: {exc.oneline()}", file=sys.stderr)
        return int(exc.code)
    except KeyboardInterrupt as exc:
        print(f"rtgate: interrupted{f' by {exc}' if str(exc) else ''}", file=sys.stderr)
        return int(Exit.INCOMPLETE)
    except Exception as exc:  # noqa: BLE001 - Python's own exit 1 would read as "budget exceeded"
        traceback.print_exc()
        print(f"rtgate: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return int(Exit.INCOMPLETE)
    finally:
        signal.signal(signal.SIGTERM, previous)
