"""`rtgate lab setup` and `rtgate lab runner`: a lab controller's board instances, their
directories and environment files, and one runner supervisor per board (rtgate.lab)."""

from __future__ import annotations

import argparse
import os
import sys
from importlib import resources
from pathlib import Path

from rtgate.errors import Exit, InputError
from rtgate.jsonfile import write_atomic
from rtgate.lab import config as labconfig
from rtgate.lab import state
from rtgate.lab.runner import Supervisor

UNIT = "rtgate-runner@.service"
UNIT_DIR = Path("/etc/systemd/system")

EPILOG = """\
The lab file (default /etc/rtgate/lab.yml, root-only) names the GitHub App (app_id,
installation_id, private_key), where runners register (owner, repo; no repo: the organisation,
with its runner_group_id), the runner (install_dir, user, state_dir, env_dir, python, builder)
and the board instances: see docs/lab.md.

exit codes:
  0  done (setup), or the supervisor stopped on SIGTERM (runner)
  2  usage or input error (lab file, unknown board, not root, no such runner user)
"""


def _root() -> None:
    if os.geteuid() != 0:
        raise InputError("run as root: it sets owners and drops to the runner user")


def setup_command(args: argparse.Namespace) -> int:
    _root()
    config = labconfig.load(args.config)
    boards = args.boards or list(config.boards)
    for board in boards:
        config.board(board, args.config)
    for board in boards:
        where = state.prepare(config, board)
        print(f"rtgate lab setup: {board}: {where.root} and {state.env_file(config, board)}",
              file=sys.stderr)
    unit = resources.files("rtgate.lab").joinpath(UNIT).read_text(encoding="utf-8")
    write_atomic(args.unit_dir / UNIT, unit).chmod(0o644)
    print(f"rtgate lab setup: {args.unit_dir / UNIT}: enable one per board with "
          "`systemctl enable --now rtgate-runner@BOARD`", file=sys.stderr)
    return int(Exit.OK)


def runner_command(args: argparse.Namespace) -> int:
    _root()
    config = labconfig.load(args.config)
    config.board(args.board, args.config)
    return Supervisor(config, args.board).run()


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    lab = sub.add_parser("lab", help="a lab controller: board state and runner supervisors",
                         description=__doc__)
    verbs = lab.add_subparsers(dest="verb", required=True, metavar="VERB")

    setup = verbs.add_parser(
        "setup", help="create each board's directories and runner environment file",
        description="Create or repair each board instance's jobs/, results/, cache-main/ and "
        "cache-pr/ under the state directory with their owners, write its runner environment "
        "file (KEY=value lines the runner reads as written), and install the systemd unit.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    setup.add_argument("boards", nargs="*", metavar="BOARD",
                       help="board instances of the lab file (default: all)")
    setup.add_argument("--config", type=Path, default=labconfig.DEFAULT_CONFIG)
    setup.add_argument("--unit-dir", type=Path, default=UNIT_DIR,
                       help=f"where {UNIT} goes (default {UNIT_DIR})")
    setup.set_defaults(func=setup_command)

    runner = verbs.add_parser(
        "runner", help="register and run one just-in-time runner after another for a board",
        description="The runner supervisor of one board instance, run by "
        "rtgate-runner@BOARD.service: a fresh App token and a uniquely named JIT runner per "
        "job, stale registrations of the board removed, capped backoff on errors, a clean "
        "stop on SIGTERM.", epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    runner.add_argument("board", metavar="BOARD")
    runner.add_argument("--config", type=Path, default=labconfig.DEFAULT_CONFIG)
    runner.set_defaults(func=runner_command)
