"""`rtgate board list` and `rtgate board run`: the boards, and one deploy→boot→run→restore."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from rtgate.board.doctor import DoctorSettings, Finding, examine, ready
from rtgate.board.run import BoardRunSettings, board_run, validate
from rtgate.board.spec import BoardSpec, kind_of, list_boards, load_board
from rtgate.ciout import escape, printable
from rtgate.cli.args import add_scale_option, duration
from rtgate.errors import Exit

EPILOG = """\
`board run` deploys the kernel build (rtgate kernel build --out DIR), boots it, checks that the
running `uname -r` is the built release, measures the scenario, writes OUT/result.json with the
raw files in OUT/raw/ (and OUT/console.log for a virtual board), and restores the board's
known-good kernel, also after a failure.

exit codes:
  0  complete measurement
  2  usage or input error (unknown board or scenario, --kernel without a metadata.json)
  3  partial or degraded measurement, or an infrastructure failure (no boot, wrong release,
     timeout, kernel panic, lost board): the console/session log is kept; never a pass; or a
     kernel directory that is no usable build (its metadata.json unreadable, naming a file
     outside the directory, no image), named
"""


def _virtual(spec: BoardSpec) -> str:
    return "auto" if spec.virtual == "auto" else "yes" if spec.virtual else "no"


def list_command(args: argparse.Namespace) -> int:
    boards = list_boards()
    if args.json:
        # What the gate workflow routes by (jq), read as rtgate reads the board files.
        print(json.dumps([{"name": b.name, "kind": kind_of(b), "driver": b.driver,
                           "kernel_target": b.kernel_target} for b in boards]))
        return int(Exit.OK)
    if args.plain:
        for b in boards:
            print(f"{b.name}\t{b.driver}\t{_virtual(b)}\t{' '.join(b.description.split())}")
        return int(Exit.OK)
    table = Table("board", "driver", "virtual", "description", show_lines=False)
    for b in boards:
        table.add_row(b.name, b.driver, _virtual(b), " ".join(b.description.split()))
    Console().print(table)
    return int(Exit.OK)


def run_command(args: argparse.Namespace) -> int:
    settings = BoardRunSettings(board=args.board, kernel=args.kernel, scenario=args.scenario,
                                duration_s=args.duration, out=args.out, flavor=args.flavor,
                                scale=args.scale)
    plan = validate(settings)
    if args.dry_run:
        print(plan.describe(settings), end="")
        return int(Exit.OK)
    spec = plan.spec
    m = board_run(settings, plan)
    t = m.result.totals
    summary = (f"{t.samples} samples, max {t.max_us:g} us, avg {t.avg_us:.2f} us"
               if t.max_us is not None and t.avg_us is not None else f"{t.samples} samples")
    print(f"rtgate board run: {spec.name}: {m.result.status}: {summary} -> {m.result_path}",
          file=sys.stderr)
    for reason in m.result.reasons:
        print(f"rtgate board run:   {escape(reason)}", file=sys.stderr)
    return int(Exit.OK if m.result.status == "complete" else Exit.INCOMPLETE)


DOCTOR_EPILOG = """\
Checks a board before its first run, as a run reads it (the board file's SSH options, sudo,
PATH and paths): SSH and sudo, cyclictest's real-time privileges, the tools and their pins,
firmware and EEPROM versions (against bench/firmware/KIND.yml only), autoboot.txt and tryboot,
the slot and its overlays, the known-good kernel, free space, temperature, throttling and
under-voltage, the governor, time sync, the iperf3 peer's reach; for QEMU and LAVA boards what
applies. Prints one row per check: ok, warn (measures, but worth fixing), fail, n/a.

exit codes:
  0  ready (no check failed)
  2  usage or input error (unknown board, unreadable board or firmware file)
  3  not ready: a check failed (the table says what to do); or the board was lost midway
"""


def doctor_lines(checks: list[Finding]) -> list[str]:
    """--plain: one tab-separated line a check; what the board said, printable (no tab,
    newline or escape sequence of its own)."""
    return ["\t".join(printable(v) for v in (c.state, c.item, c.found, c.todo)) for c in checks]


def doctor_table(name: str, checks: list[Finding]) -> Table:
    """The table, its cells plain text: a board's `uname -r` is never console markup."""
    table = Table("check", "state", "found", "to do", title=f"rtgate board doctor {name}")
    style = {"ok": "green", "warn": "yellow", "fail": "bold red", "n/a": "dim"}
    for c in checks:
        table.add_row(Text(printable(c.item)), Text(c.state, style=style[c.state]),
                      Text(printable(c.found)), Text(printable(c.todo)))
    return table


def doctor_command(args: argparse.Namespace) -> int:
    spec = load_board(args.board)
    with tempfile.TemporaryDirectory(prefix="rtgate-doctor-") as tmp:
        workdir = args.out or Path(tmp)
        checks = examine(DoctorSettings(spec=spec, workdir=workdir))
    if args.plain:
        for line in doctor_lines(checks):
            print(line)
    else:
        Console().print(doctor_table(spec.name, checks))
    ok = ready(checks)
    print(f"rtgate board doctor: {spec.name}: "
          f"{'ready' if ok else 'NOT ready'}", file=sys.stderr)
    return int(Exit.OK if ok else Exit.INCOMPLETE)


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser("board", help="list boards; measure a kernel on one",
                              description="Boards: bench/boards/*.yml.", epilog=EPILOG,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="board_command", required=True, metavar="ACTION")
    ls = sub.add_parser("list", help="the boards: name, driver, virtual, description")
    shape = ls.add_mutually_exclusive_group()
    shape.add_argument("--plain", action="store_true", help="tab-separated, one board a line")
    shape.add_argument("--json", action="store_true",
                       help="a JSON list of {name, kind, driver, kernel_target} (the gate "
                            "workflow's routing)")
    ls.set_defaults(func=list_command)
    r = sub.add_parser("run", help="deploy a kernel build, boot, measure, restore",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    r.add_argument("--board", required=True, help="board name from bench/boards/")
    r.add_argument("--kernel", type=Path,
                   help="kernel build directory (rtgate kernel build --out); none: the board's "
                        "own kernel (local board)")
    r.add_argument("--scenario", required=True, help="scenario name or .yml path")
    r.add_argument("--duration", type=duration, required=True, help="e.g. 10s, 5m, 1h")
    r.add_argument("--out", type=Path, required=True, help="output directory")
    r.add_argument("--flavor", help="kernel flavor label (default: from the kernel build)")
    add_scale_option(r)
    r.add_argument("--dry-run", action="store_true",
                   help="resolve the board, the kernel build and the scenario and print them as "
                        "YAML: the board is not touched")
    r.set_defaults(func=run_command)
    d = sub.add_parser("doctor", help="check a board before its first run: what is ready, what "
                                      "to do", epilog=DOCTOR_EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    d.add_argument("board", help="board name from bench/boards/")
    d.add_argument("--plain", action="store_true",
                   help="tab-separated rows: state, check, found, to do")
    d.add_argument("--out", type=Path, help="keep the SSH session log here")
    d.set_defaults(func=doctor_command)
