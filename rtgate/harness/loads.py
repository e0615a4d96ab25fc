"""Load processes on this machine: start them, notice one that dies, stop them all.

Each load runs in its own session, so a Ctrl-C in the terminal reaches rtgate alone and rtgate
decides the order of shutdown; stopping signals the whole process group because stress-ng and
iperf3 fork workers.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from rtgate.errors import InfraError
from rtgate.harness.plan import PlannedLoad

LISTEN_TIMEOUT_S = 10.0
STOP_GRACE_S = 5.0
TCP_LISTEN = "0A"


@dataclass(frozen=True)
class EndedLoad:
    """A load of this machine as the run recorded it, once it was stopped."""

    name: str
    argv: list[str]
    early_exit: int | None
    """Exit status of a load that ended on its own while it should have been running."""
    early_after_s: float | None


@dataclass
class RunningLoad:
    spec: PlannedLoad
    proc: subprocess.Popen[bytes]
    started: float
    logs: list[IO[bytes]] = field(default_factory=list)
    early_exit: int | None = None
    """Exit status of a load that ended on its own while it should have been running."""
    early_after_s: float | None = None

    def ended(self) -> EndedLoad:
        return EndedLoad(self.spec.name, self.spec.argv, self.early_exit, self.early_after_s)

    def check(self) -> bool:
        """True when the load has just been found dead (before rtgate stopped it)."""
        if self.early_exit is None and (rc := self.proc.poll()) is not None:
            self.early_exit, self.early_after_s = rc, time.monotonic() - self.started
            return True
        return False


def listening(port: int) -> bool:
    """Whether something listens on TCP ``port``, read from /proc (connecting would count as an
    iperf3 test attempt and make the server log an error)."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 3 and fields[3] == TCP_LISTEN \
                    and int(fields[1].rsplit(":", 1)[1], 16) == port:
                return True
    return False


def free_port() -> int:
    """A TCP port free on loopback now (the kernel picks it), for a server load to listen on."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(spec: PlannedLoad, rawdir: Path, cwd: Path) -> RunningLoad:
    # Open for the load's whole life, not a `with` block: stop() closes them.
    stdout = open(rawdir / f"{spec.name}.stdout", "wb")
    stderr = open(rawdir / f"{spec.name}.stderr", "wb")
    try:
        proc = subprocess.Popen(spec.argv, stdout=stdout, stderr=stderr, stdin=subprocess.DEVNULL,
                                cwd=cwd, start_new_session=True)
    except OSError as exc:
        stdout.close()
        stderr.close()
        raise InfraError(f"cannot start load {spec.name!r} ({spec.argv[0]}): {exc.strerror}") \
            from exc
    load = RunningLoad(spec, proc, time.monotonic(), [stdout, stderr])
    if spec.listens_on is not None:
        deadline = time.monotonic() + LISTEN_TIMEOUT_S
        while not listening(spec.listens_on) and not load.check():
            if time.monotonic() > deadline:
                stop(load)
                raise InfraError(f"load {spec.name!r} does not listen on port {spec.listens_on} "
                                 f"after {LISTEN_TIMEOUT_S:g} s")
            time.sleep(0.05)
    return load


def _signal_group(proc: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass


def stop(load: RunningLoad, grace_s: float = STOP_GRACE_S) -> None:
    """SIGTERM the load's process group, SIGKILL what is left after ``grace_s``."""
    _signal_group(load.proc, signal.SIGTERM)
    try:
        load.proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        _signal_group(load.proc, signal.SIGKILL)
        load.proc.wait()
    # Workers that outlived their parent are still in the group.
    _signal_group(load.proc, signal.SIGKILL)
    for log in load.logs:
        log.close()
