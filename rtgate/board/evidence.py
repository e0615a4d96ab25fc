"""What a crashed test boot leaves to read: the board's serial console as the controller saw it,
and the previous boot's kernel log the board kept (pstore, the persistent journal).

A test kernel that panics, hangs with its watchdog fed, or loses the network reads otherwise as
"did not come back": the console (``console_command`` in the board file, e.g. a debug probe's
UART read on the controller) is captured from the tryboot on, and after a fallback to the
known-good kernel the driver pulls the previous boot's log and names its first panic line in
the failure, which the infra record and the PR comment carry.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import threading
from pathlib import Path

from rtgate.inputfile import MiB

PANIC = re.compile(r"(Kernel panic - not syncing.*|Internal error: .*|Unable to handle kernel .*|"
                   r"BUG: .*|watchdog: .*|Oops.*|hung_task.*|rcu: INFO: .*stall.*)")
_STAMP = re.compile(r"^(<\d+>)?\s*(\[\s*\d+\.\d+\]\s*)?")
SAID_CHARS = 200
# A serial line at 115200 baud writes ~40 MiB an hour; a panic is in the last minutes of it.
CONSOLE_SEGMENT = 16 * MiB
"""The console is kept as its last one or two segments: ``console.log`` and ``console.log.1``."""
LOG_CAP = 32 * MiB
"""The most of one evidence file read for a panic line, and of the previous boot's journal kept
(its last LOG_CAP bytes)."""
_CHUNK = 1 * MiB
_LINE_CAP = 64 * 1024


def _lines(path: Path) -> list[str] | None:
    """The lines of the first LOG_CAP bytes of ``path``, read a chunk at a time and each cut
    at _LINE_CAP (a line without an end is not kept whole); None when it cannot be read."""
    try:
        with open(path, "rb") as fh:
            lines: list[str] = []
            rest = b""
            for _ in range(LOG_CAP // _CHUNK):
                if not (chunk := fh.read(_CHUNK)):
                    break
                *whole, rest = (rest + chunk).split(b"\n")
                lines += [line[:_LINE_CAP].decode("utf-8", "replace") for line in whole]
                rest = rest[:_LINE_CAP]
            return [*lines, rest.decode("utf-8", "replace")]
    except OSError:
        return None


def first_panic(files: list[Path]) -> str | None:
    """The first line that says why a kernel died, in file order, without its timestamp."""
    for path in files:
        for line in _lines(path) or []:
            if m := PANIC.search(_STAMP.sub("", line)):
                return m.group(0).strip()[:SAID_CHARS]
    return None


def console_files(log: Path) -> list[Path]:
    """The console a ConsoleCapture kept in ``log``, oldest first."""
    return [p for p in (log.with_name(log.name + ".1"), log) if p.is_file()]


class ConsoleCapture:
    """``command`` run on the controller in its own session, its output appended to ``log``
    until stopped (a serial line never ends by itself); only its last one or two
    CONSOLE_SEGMENTs are kept, ``log`` and ``log.1`` (console_files)."""

    def __init__(self, command: str, log: Path) -> None:
        self.command = command
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None
        self._pump: threading.Thread | None = None

    def start(self) -> None:
        if self.proc is not None:
            return
        self.log.parent.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(self.command, shell=True, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     start_new_session=True)
        assert self.proc.stdout is not None
        self._pump = threading.Thread(target=self._keep, args=(self.proc.stdout.fileno(),),
                                      daemon=True)
        self._pump.start()

    def _keep(self, fd: int) -> None:
        """Copy the console into ``log`` until it ends, a full segment moved to ``log.1``."""
        out = open(self.log, "ab")
        try:
            while chunk := os.read(fd, 64 * 1024):
                while chunk:
                    # A segment never grows past its size: the rest goes to the next one.
                    room = CONSOLE_SEGMENT - out.tell()
                    out.write(chunk[:room])
                    out.flush()
                    chunk = chunk[room:]
                    if out.tell() >= CONSOLE_SEGMENT:
                        out.close()
                        os.replace(self.log, self.log.with_name(self.log.name + ".1"))
                        out = open(self.log, "wb")
        finally:
            out.close()

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        pump, self._pump = self._pump, None
        if proc is None:
            return
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=10)
            except ProcessLookupError:
                # Its session ended between the poll and the signal.
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        if pump is not None:
            # A child that left the session may hold the pipe open: the log is kept as it is.
            pump.join(timeout=10)
        if proc.stdout is not None and (pump is None or not pump.is_alive()):
            proc.stdout.close()
