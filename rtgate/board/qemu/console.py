"""A guest's serial console as the only channel: markers out, scripts in, files back as base64.

Every byte the guest prints is appended to the console log as it arrives, so whatever happens
(panic, hang, timeout) the log is there to read. Protocol lines start with ``RTGATE-``; a kernel
panic ends any wait with a KernelCrash (the kernel's failure, exit 1), the emulator exiting with
an InfraError, each naming the log.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import queue
import subprocess
import threading
import time
from pathlib import Path

from rtgate.board.evidence import first_panic
from rtgate.errors import InfraError, KernelCrash

MARKER = "RTGATE-"
PANIC = "Kernel panic"
_EOF = None
_B64_LINE = 76
# A console line longer than this is split: a guest printing without newlines must not grow one
# line without bound (protocol lines are short, base64 lines 76 characters).
LINE_CAP = 64 << 10


class SerialConsole:
    def __init__(self, argv: list[str], log: Path) -> None:
        self.log = log
        log.parent.mkdir(parents=True, exist_ok=True)
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._logfile = open(log, "ab")
        try:
            self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        except OSError as exc:
            self._logfile.close()
            raise InfraError(f"cannot start {argv[0]}: {exc.strerror} (scripts/deps.sh qemu)") \
                from exc
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        stdout = self.proc.stdout
        assert stdout is not None
        for raw in iter(lambda: stdout.readline(LINE_CAP), b""):
            self._logfile.write(raw)
            self._logfile.flush()
            self._lines.put(raw.decode("utf-8", "replace").rstrip("\r\n").replace("\r", ""))
        self._lines.put(_EOF)

    def next_marker(self, deadline: float, waiting_for: str) -> str:
        """The next protocol line, before the monotonic ``deadline``."""
        while True:
            try:
                line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise InfraError(f"timed out waiting for {waiting_for}; console log kept",
                                 path=self.log) from None
            if line is _EOF:
                rc = self.proc.wait()
                raise InfraError(f"the emulator exited ({rc}) while waiting for {waiting_for}; "
                                 "console log kept", path=self.log)
            if PANIC in line:
                self._drain()
                # The kernel under test died: its failure, with the console as the evidence.
                said = first_panic([self.log]) or line.strip()
                raise KernelCrash(f"guest kernel panic while waiting for {waiting_for}: "
                                  f"{said}", said=said, evidence=self.log, path=self.log)
            start = line.find(MARKER)
            if start >= 0:
                return line[start:]

    def _drain(self, grace_s: float = 5.0) -> None:
        """Let a panicking guest finish its report (panic=-1 then ends the emulator)."""
        try:
            self.proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            return
        self._reader.join(timeout=grace_s)

    def expect(self, prefix: str, deadline: float) -> str:
        """Skip to the protocol line starting with ``prefix``."""
        while not (line := self.next_marker(deadline, prefix)).startswith(prefix):
            pass
        return line

    def payload(self, deadline: float, cap: int) -> bytes:
        """The base64 block after ``RTGATE-BEGIN`` (already read), checked against its sha256;
        more than ``cap`` bytes decoded is refused as it arrives."""
        chunks: list[str] = []
        size = 0
        while True:
            try:
                line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise InfraError("timed out receiving the results; console log kept",
                                 path=self.log) from None
            if line is _EOF:
                raise InfraError("the emulator exited while sending the results", path=self.log)
            if line.startswith(f"{MARKER}END"):
                break
            chunks.append(line.strip())
            size += len(chunks[-1])
            if size * 3 // 4 > cap:
                raise InfraError(f"the guest's reply exceeds {cap >> 20} MiB: refused; console "
                                 "log kept", path=self.log)
        try:
            data = base64.b64decode("".join(chunks), validate=False)
        except binascii.Error as exc:
            raise InfraError(f"the guest's reply is not base64 ({exc}); console log kept",
                             path=self.log) from exc
        want = line.split()[-1] if len(line.split()) > 1 else ""
        if hashlib.sha256(data).hexdigest() != want:
            raise InfraError("results corrupted on the console (sha256 mismatch); console log "
                             "kept", path=self.log)
        return data

    def send_script(self, script: str) -> None:
        """Send a shell script for the guest's init to run (base64: no quoting, no echo)."""
        encoded = base64.b64encode(script.encode()).decode()
        lines = [encoded[i:i + _B64_LINE] for i in range(0, len(encoded), _B64_LINE)]
        self.send("\n".join([*lines, f"{MARKER}GO"]) + "\n")

    def send(self, text: str) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(text.encode())
            self.proc.stdin.flush()
        except BrokenPipeError as exc:
            raise InfraError("the emulator is gone; console log kept", path=self.log) from exc

    def close(self, grace_s: float = 5.0) -> int | None:
        """Wait briefly for the emulator to exit on its own, then kill it."""
        try:
            self.proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._reader.join(timeout=5)
        self._logfile.close()
        return self.proc.returncode
