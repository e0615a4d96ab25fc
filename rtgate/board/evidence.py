"""What a crashed test boot leaves to read: the board's serial console as the controller saw it,
the panic records pstore kept, and the test boot's own kernel log in the board's journal.

A test kernel that panics, oopses, hangs (the watchdog resets the board) or reboots by itself
comes back on the known-good kernel. The console (``console_command`` in the board file, e.g.
a debug probe's UART read on the controller) is captured from the tryboot on; after a fallback
the driver pulls pstore (``/sys/fs/pstore``, and what systemd-pstore archived from it since the
tryboot), and the journal of the test boot itself, selected by boot id. The first line that
says the kernel died decides: with one, the run is that kernel's failure (KernelCrash, exit 1);
without, the lab's (InfraError, exit 3). Readers of an artifact check that line against the
file it names (``confirmed``), so the claim never rests on the record alone.
"""

from __future__ import annotations

import contextlib
import os
import pty
import re
import signal
import subprocess
import threading
from pathlib import Path

from rtgate.inputfile import MiB

PANIC = re.compile(r"(Kernel panic - not syncing.*|Internal error: .*|Unable to handle kernel .*|"
                   r"BUG: .*|watchdog: .*|Oops.*|hung_task.*|rcu: INFO: .*stall.*|"
                   r"INFO: task .* blocked for more than .*|"
                   # A reboot nobody asked for: rtgate never reboots a test kernel before it
                   # has read the evidence (the restore comes after).
                   r"reboot: (?:Restarting system|Power down).*)")
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


PSTORE_ARCHIVE = "/var/lib/systemd/pstore"
"""Where systemd-pstore moves what it finds in /sys/fs/pstore at boot. Its defaults are
``Storage=external`` and ``Unlink=yes`` (systemd src/pstore/pstore.c: ``arg_storage =
PSTORE_STORAGE_EXTERNAL``, ``arg_unlink = true``, ``arg_archivedir``; pstore.conf(5)): on Debian
and Raspberry Pi OS a crash record is gone from /sys/fs/pstore by the time the board answers
again, copied (under a new mtime) into this directory."""
PSTORE_DROPIN = ("/etc/systemd/pstore.conf.d/50-rtgate.conf", "[PStore]\nUnlink=no\n")
"""The drop-in that keeps /sys/fs/pstore for rtgate (pstore.conf(5): drop-ins in
/etc/systemd/pstore.conf.d/ override /etc/systemd/pstore.conf); rtgate empties it before each
tryboot itself. The lab's Pi role writes it; the doctor checks it."""

PSTORE_CLEAR = r"""
pstore=$1 archive=$2
# Older panic records out of pstore: what is there after a fallback is the test boot's.
if [ -d "$pstore" ]; then for f in "$pstore"/*; do [ -f "$f" ] && rm -f "$f"; done; fi
# What systemd-pstore archived so far, to tell its next copies apart (same names, new content).
if [ -d "$archive" ]; then cd "$archive" && find . -type f -exec sha256sum {} +; fi
true
"""
"""Run as root before a tryboot; prints the archive's ``sha256  ./path`` lines (PSTORE_PULL)."""

PSTORE_PULL = r"""
pstore=$1 archive=$2 stage=$3
rm -rf "$stage" && mkdir -p "$stage/pstore" "$stage/pstore-archive" || exit 1
if [ -d "$pstore" ]; then for f in "$pstore"/*; do [ -f "$f" ] && cp "$f" "$stage/pstore/"; done; fi
# Only what systemd-pstore archived since the tryboot: a line not in $KNOWN is new.
if [ -d "$archive" ]; then
  cd "$archive" && find . -type f -exec sha256sum {} + | while read -r sum path; do
    printf '%s
' "$KNOWN" | grep -qxF "$sum  $path" && continue
    mkdir -p "$stage/pstore-archive/${path%/*}" && cp "$path" "$stage/pstore-archive/$path"
  done
fi
true
"""
"""Run as root after a fallback, with KNOWN set to PSTORE_CLEAR's lines: stages the test boot's
pstore records in $3 (``pstore/``, ``pstore-archive/``) for the controller to pull."""

JOURNAL = r"""
before=$(printf %s "$1" | tr -d -) test=$(printf %s "$2" | tr -d -) now=$(printf %s "$3" | tr -d -)
cap=$4
if [ -n "$test" ]; then ids=$test
else
  # The boots after the one rtgate left for the tryboot, before the one answering now.
  ids=$(BOOTS | awk -v b="$before" -v n="$now" \
    '{ id = $2; gsub(/-/, "", id) } seen && id != n { print id } id == b { seen = 1 }')
fi
for id in $ids; do printf '%s %s\n' '-- rtgate: the test boot' "$id"; LOG "$id"; done |
  tail -c "$cap"
"""


def journal_script(boots_command: str, boot_log_command: str) -> str:
    """The test boot's kernel log: the boot whose id rtgate recorded (``$2``), or, when the test
    kernel never answered, every boot the journal lists after ``$1`` (the boot rtgate left for
    the tryboot) and before ``$3`` (the one answering now); its last ``$4`` bytes. Never
    ``-b -1``: one more reboot and that is another boot."""
    log = boot_log_command.replace("{boot}", '"$1"')
    return f"BOOTS() {{ {boots_command}; }}\nLOG() {{ {log}; }}\n" + JOURNAL


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


def first_panic_in(files: list[Path]) -> tuple[str, Path] | None:
    """The first line that says why a kernel died and the file it is in, None without one."""
    for path in files:
        if (said := first_panic([path])) is not None:
            return said, path
    return None


def confirmed(home: Path, said: str, evidence: str) -> bool:
    """Whether ``evidence`` (relative to a run's directory ``home``, as a record names it) is
    a regular file inside ``home`` whose first dying line is ``said``: the check that turns a
    record's claim of a crash into a crash, for any reader of an artifact."""
    rel = Path(evidence)
    if rel.is_absolute() or ".." in rel.parts or not rel.parts:
        return False
    path = home
    for part in rel.parts:  # never through a link the artifact's writer planted
        path = path / part
        if path.is_symlink():
            return False
    return path.is_file() and first_panic([path]) == said


def console_files(log: Path) -> list[Path]:
    """The console a ConsoleCapture kept in ``log``, oldest first."""
    return [p for p in (log.with_name(log.name + ".1"), log) if p.is_file()]


class ConsoleCapture:
    """``command`` run on the controller in its own session, its output appended to ``log``
    until stopped (a serial line never ends by itself); only its last one or two
    CONSOLE_SEGMENTs are kept, ``log`` and ``log.1`` (console_files).

    Its stdin is a pseudo-terminal nobody types into: a terminal program such as picocom reads
    its keyboard from stdin and, given /dev/null, ends at once having captured nothing
    (picocom 3.1 exits 0 on the end of its input)."""

    def __init__(self, command: str, log: Path) -> None:
        self.command = command
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None
        self._pump: threading.Thread | None = None
        self._keyboard: int | None = None

    def start(self) -> None:
        if self.proc is not None:
            return
        self.log.parent.mkdir(parents=True, exist_ok=True)
        self._keyboard, terminal = pty.openpty()
        try:
            self.proc = subprocess.Popen(self.command, shell=True, stdout=subprocess.PIPE,
                                         stderr=subprocess.STDOUT, stdin=terminal,
                                         start_new_session=True)
        finally:
            os.close(terminal)
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
        keyboard, self._keyboard = self._keyboard, None
        if keyboard is not None:
            os.close(keyboard)
