"""A tuning profile's run-time writes on the Pi (rtgate.board.tuning's shell snippets, sent over
SSH as root): the old values wait in ``options.tuning_state`` (a tmpfs: a reboot undoes the
writes and drops them) and are put back before the board reboots into the known-good kernel,
or at the next deploy when a crashed run left them behind. The profile's boot words and
firmware lines ride on the slot (rtgate.board.rpi5.slot)."""

from __future__ import annotations

import shlex

from rtgate.board.rpi5.session import Pi
from rtgate.board.rpi5.ssh import SSH_FAILED
from rtgate.board.tuning import Applied, parse_readback
from rtgate.errors import InfraError

BENCH_PID = "bench.pid"
"""The shell that runs bench_command on the board: the tasks checked for pinning descend from it."""


def as_root(pi: Pi, script: str) -> str:
    """A tuning script run by the board's sh as root; its stdout."""
    proc = pi.ssh.run(pi.ssh.root("sh -s"), stdin=script.encode(), check=False)
    if proc.returncode == SSH_FAILED:
        raise InfraError(f"lost {pi.name} while tuning it", path=pi.ssh.log)
    return proc.stdout.decode("utf-8", "replace")


def readback(pi: Pi, tuned: Applied) -> dict[str, list[str]]:
    return parse_readback(as_root(pi, tuned.readback_script(pi.opts.tuning_state)))


def undo(pi: Pi, leftover: bool = False) -> None:
    """Put back the values a profile's run-time writes replaced: this run's, or (at the
    next deploy) those a crashed run left in the state directory."""
    state = shlex.quote(pi.opts.tuning_state)
    said = as_root(pi, f"[ -d {state} ] && echo leftover\n"
                   + Applied.undo_script(pi.opts.tuning_state))
    if leftover and "leftover" in said.split():
        pi.say(f"rtgate: {pi.name}: putting back the run-time settings a previous run left in "
               f"{pi.opts.tuning_state}")
