"""What a crashed test boot leaves to read: the board's serial console as the controller saw it,
and the previous boot's kernel log the board kept (pstore, the persistent journal).

A test kernel that panics, hangs with its watchdog fed, or loses the network reads otherwise as
"did not come back": the console (``console_command`` in the board file, e.g. a debug probe's
UART read on the controller) is captured from the tryboot on, and after a fallback to the
known-good kernel the driver pulls the previous boot's log and names its first panic line in
the failure, which the infra record and the PR comment carry.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
from pathlib import Path

PANIC = re.compile(r"(Kernel panic - not syncing.*|Internal error: .*|Unable to handle kernel .*|"
                   r"BUG: .*|watchdog: .*|Oops.*|hung_task.*|rcu: INFO: .*stall.*)")
_STAMP = re.compile(r"^(<\d+>)?\s*(\[\s*\d+\.\d+\]\s*)?")
SAID_CHARS = 200


def first_panic(files: list[Path]) -> str | None:
    """The first line that says why a kernel died, in file order, without its timestamp."""
    for path in files:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for line in text.splitlines():
            if m := PANIC.search(_STAMP.sub("", line)):
                return m.group(0).strip()[:SAID_CHARS]
    return None


class ConsoleCapture:
    """``command`` run on the controller in its own session, its output appended to ``log``
    until stopped (a serial line never ends by itself)."""

    def __init__(self, command: str, log: Path) -> None:
        self.command = command
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        if self.proc is not None:
            return
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(self.command, shell=True, stdout=out,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         start_new_session=True)

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=10)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
