"""An ftrace session on this machine for a breaktrace run: armed from what the kernel has, its
trace tail kept, and the tracing settings put back as they were.

cyclictest's ``-b US --tracemark`` only writes a marker and turns ``tracing_on`` off at the
breach: what the buffer then holds is up to whoever set ftrace up. Nothing is assumed: the
tracer and events come from ``available_tracers``/``available_events``, and a tracer the kernel
lists but refuses (the function tracer under kernel lockdown, as on this development VM) falls
back to ``nop`` with the events, the refusal written down. The session is global to the machine
(cyclictest stops the top-level buffer, not an instance), so one rtgate session at a time holds
it, and ``__exit__`` restores the tracer, the enabled events, the buffer size and tracing_on (the
buffer's old contents are not kept: changing the tracer or size clears them anyway).
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections import deque
from contextlib import ExitStack
from pathlib import Path
from types import TracebackType

from rtgate.errors import InfraError
from rtgate.filelock import locked

TRACEFS = Path("/sys/kernel/tracing")
LOCK = Path(tempfile.gettempdir()) / "rtgate-tracefs.lock"
TRACER = "function"
"""Preferred: what every CPU executed. Costly, and refused under lockdown: then nop + events."""
EVENTS = (
    # Who ran and who was woken: the blocking task and the wake-up time.
    "sched:sched_switch", "sched:sched_waking", "sched:sched_wakeup",
    # What interrupted: handlers, softirqs, the timer that wakes cyclictest.
    "irq:irq_handler_entry", "irq:irq_handler_exit", "irq:softirq_entry", "irq:softirq_exit",
    "timer:hrtimer_expire_entry", "timer:hrtimer_expire_exit",
    "irq_vectors:local_timer_entry", "irq_vectors:local_timer_exit",
    "irq_vectors:reschedule_entry", "irq_vectors:reschedule_exit",
    "ipi:ipi_entry", "ipi:ipi_exit",
    "workqueue:workqueue_execute_start", "workqueue:workqueue_execute_end",
    # Interrupts-off sections with their callers, where CONFIG_PREEMPTIRQ_TRACEPOINTS is on.
    "preemptirq:irq_disable", "preemptirq:irq_enable",
)
BUFFER_KB = 2048
"""Per CPU: the breach's CPU keeps milliseconds of events (far less with the function tracer)."""
TAIL_LINES = 4000
"""Entries kept from the end of the buffer: what led to the stop, bounded in size."""


def missing(tracefs: Path = TRACEFS) -> str | None:
    """Why no ftrace session can be held here, or None when one can (tracefs mountable)."""
    if (tracefs / "trace_marker").exists():
        if not os.access(tracefs / "tracing_on", os.W_OK):
            return f"ftrace at {tracefs} is not writable by this user: breaktrace needs root"
        return None
    try:
        known = Path("/proc/filesystems").read_text()
    except OSError:
        known = ""
    if "tracefs" not in known.split():
        return "the running kernel has no tracefs (CONFIG_FTRACE off): no ftrace to stop"
    if os.geteuid() != 0:
        return f"tracefs is not mounted at {tracefs} and only root can mount it"
    return None


class Session:
    """``with Session() as s:`` arms ftrace (``s.setup`` says how), ``s.stop()`` ends it, and
    ``s.tail(path)`` keeps the end of the buffer; leaving the block restores the settings."""

    def __init__(self, tracefs: Path = TRACEFS) -> None:
        self.tracefs = tracefs
        self.setup: list[str] = []
        """What was set and what the kernel refused, one line each (kept as a raw file)."""
        self._stack = ExitStack()
        self._saved: dict[str, str] = {}
        self._events: list[str] = []

    def __enter__(self) -> Session:
        self._stack.enter_context(locked(LOCK))
        try:
            self._mount()
            self._save()
            self._arm()
        except BaseException as exc:
            self.__exit__(None, None, None)
            if isinstance(exc, OSError):
                raise InfraError(f"cannot set up ftrace: {exc}", path=self.tracefs) from exc
            raise
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stack.close()

    def _file(self, name: str) -> Path:
        return self.tracefs / name

    def _read(self, name: str) -> str:
        return self._file(name).read_text()

    def _write(self, name: str, value: str, *, append: bool = False) -> str | None:
        """Write one tracefs file (``append``: without truncating, which for set_event adds an
        event instead of replacing them); the kernel's refusal as text, or None."""
        # Not Python's "a": its seek to the end is refused by tracefs.
        flags = os.O_WRONLY | (0 if append else os.O_TRUNC)
        try:
            fd = os.open(self._file(name), flags)
            try:
                os.write(fd, value.encode())
            finally:
                os.close(fd)
        except OSError as exc:
            return exc.strerror or str(exc)
        return None

    def _mount(self) -> None:
        if self._file("trace_marker").exists():
            return
        proc = subprocess.run(["mount", "-t", "tracefs", "nodev", str(self.tracefs)],
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise InfraError(f"cannot mount tracefs: {proc.stderr.strip()}", path=self.tracefs)
        self.setup.append(f"mounted tracefs at {self.tracefs} (unmounted afterwards)")
        self._stack.callback(subprocess.run, ["umount", str(self.tracefs)], check=False)

    def _save(self) -> None:
        for name in ("current_tracer", "tracing_on", "buffer_size_kb"):
            # buffer_size_kb may read "7 (expanded: 1408)": the number is what was set.
            self._saved[name] = self._read(name).split()[0]
        self._events = self._read("set_event").split()
        self._stack.callback(self._restore)

    def _restore(self) -> None:
        """Old settings back, tracing_on last so nothing is recorded in between."""
        self._write("tracing_on", "0")
        self._write("current_tracer", self._saved["current_tracer"])
        self._write("set_event", "")
        for event in self._events:
            self._write("set_event", event + "\n", append=True)
        self._write("buffer_size_kb", self._saved["buffer_size_kb"])
        self._write("tracing_on", self._saved["tracing_on"])

    def _arm(self) -> None:
        self._write("tracing_on", "0")
        tracers = self._read("available_tracers").split()
        tracer = "nop"
        if TRACER in tracers:
            refused = self._write("current_tracer", TRACER)
            if refused is None:
                tracer = TRACER
            else:
                self.setup.append(f"tracer {TRACER}: refused by the kernel ({refused}); "
                                  "nop with events instead")
        if tracer == "nop":
            self._write("current_tracer", "nop")
        self.setup.append(f"tracer {tracer} (available: {' '.join(tracers)})")
        self._write("set_event", "")
        available = set(self._read("available_events").split())
        enabled = [e for e in EVENTS if e in available
                   and self._write("set_event", e + "\n", append=True) is None]
        self.setup.append(f"events {' '.join(enabled) or 'none'}")
        if absent := [e for e in EVENTS if e not in available]:
            self.setup.append(f"events this kernel lacks: {' '.join(absent)}")
        if refused := self._write("buffer_size_kb", str(BUFFER_KB)):
            self.setup.append(f"buffer_size_kb {BUFFER_KB}: refused ({refused})")
        self.setup.append(f"buffer_size_kb {self._read('buffer_size_kb').split()[0]} per CPU")
        self._write("trace", "")  # an old run's entries must not pass for this run's
        self._write("tracing_on", "1")

    def stop(self) -> None:
        """Freeze the buffer (a breach already did) so reading it loses nothing at its end."""
        self._write("tracing_on", "0")

    def tail(self, out: Path, lines: int = TAIL_LINES) -> None:
        """The buffer's header and its last ``lines`` entries into ``out``."""
        header: list[str] = []
        entries: deque[str] = deque(maxlen=lines)
        with open(self._file("trace"), encoding="utf-8", errors="replace") as f:
            for line in f:
                (header if line.startswith("#") and not entries else entries).append(line)
        out.write_text("".join(header) + "".join(entries), encoding="utf-8")
