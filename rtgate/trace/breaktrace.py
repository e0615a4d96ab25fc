"""cyclictest's breaktrace, the breach tracer where the kernel has no timerlat: the follow-up run
on this machine, and what it leaves parsed into the result's trace section.

``cyclictest -b US --tracemark`` ends at the first latency above US µs: it writes a marker into
the ftrace buffer, turns tracing off and prints::

    # Thread Ids: 24340 24341
    # Break thread: 24341
    # Break value: 931

with, in the buffer (set up by rtgate.trace.ftrace), ``cyclictest-24341 [001] ...1.
12097.447331: tracing_mark_write: hit latency threshold (931 > 300)``. What led there is the
buffer's tail on the marker's CPU: the task that had the CPU while the woken thread waited (the
blocking task), the thread's wake-up (which splits the latency into before and after it), and
the last entries. Those entries are functions and events in time order — a trace tail, not a
call stack, and named so.
"""

from __future__ import annotations

import math
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from rtgate.cyclictest.version import detect
from rtgate.errors import InfraError, InputError
from rtgate.harness.runner import execute, planned
from rtgate.harness.scenario import load_scenario
from rtgate.layout import RAW
from rtgate.result import Trace, TraceBreach, TraceComponent
from rtgate.textfmt import fmt
from rtgate.trace import ftrace

TOOL = "cyclictest breaktrace"
TAIL_ENTRIES = 24
"""Entries of the breach's CPU kept in the result; the raw tail has thousands."""
RC_FILE = "cyclictest-rc"

_BREAK_THREAD = re.compile(r"^# Break thread: (\d+)$", re.M)
_BREAK_VALUE = re.compile(r"^# Break value: (\d+)$", re.M)
# comm-pid, an optional (tgid) column, [cpu], the irq-info flags, timestamp: what.
_ENTRY = re.compile(r"^\s*(?P<comm>.+)-(?P<pid>\d+)\s+(?:\(\s*[\d-]+\)\s+)?\[(?P<cpu>\d+)\]"
                    r"(?:\s+[^\s\[]{4,5})?\s+(?P<ts>\d+\.\d+):\s+(?P<what>.*)$")
_LOST = re.compile(r"^CPU:\d+ \[LOST \d+ EVENTS\]$")
_MARK = re.compile(r"^tracing_mark_write: hit latency threshold \(\d+ > \d+\)$")
_WOKEN = re.compile(r"^sched_wak(?:ing|eup): comm=.* pid=(?P<pid>\d+) ")
_SWITCH = re.compile(r"^sched_switch: prev_comm=(?P<comm>.*) prev_pid=(?P<pid>\d+) .*"
                     r"==> next_comm=.* next_pid=(?P<next>\d+) ")


@dataclass(frozen=True)
class Entry:
    """One line of the ftrace buffer."""

    comm: str
    pid: int
    cpu: int
    ts: str
    what: str

    @property
    def seconds(self) -> float:
        return float(self.ts)

    def text(self) -> str:
        return f"{self.ts} {self.comm}-{self.pid}: {self.what}"


def arm(argv: list[str], threshold_us: float) -> list[str]:
    """The measurement's cyclictest command with the trigger armed, in whole µs: cyclictest
    compares -b with each latency in its own unit, and its break report prints that unit, so a
    -N measurement is traced without -N (the trace wants the breach, not its last ns; its -h
    then counts µs rows, to /dev/null). A breach is a maximum above the threshold and
    cyclictest breaks on a latency above -b: the floor."""
    kept = [a for a in argv if a not in ("-N", "--nsecs")]
    return [*kept, "-b", str(max(1, math.floor(threshold_us))), "--tracemark"]


def broke(stdout: str, path: Path) -> tuple[int, float] | None:
    """The thread and latency cyclictest broke at, None when it did not break."""
    thread, value = _BREAK_THREAD.search(stdout), _BREAK_VALUE.search(stdout)
    if thread is None and value is None:
        return None
    if thread is None or value is None:
        raise InputError("cyclictest's break report is cut: '# Break thread' and "
                         "'# Break value' must both be there", path=path)
    return int(thread[1]), float(value[1])


def entries(text: str, path: Path) -> list[Entry]:
    """The buffer's entries in order; comments and lost-event notices left out."""
    found: list[Entry] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.startswith("#") or _LOST.match(line):
            continue
        m = _ENTRY.match(line)
        if m is None:
            raise InputError(f"line {number}: not an ftrace entry: {line[:80]!r}", path=path)
        found.append(Entry(m["comm"].strip(), int(m["pid"]), int(m["cpu"]), m["ts"], m["what"]))
    return found


def breach(stdout: Path, tail: Path) -> TraceBreach | None:
    """What cyclictest's stdout and the trace tail say about its break; None without one."""
    stop = broke(_read(stdout), stdout)
    if stop is None:
        return None
    tid, total_us = stop
    found = entries(_read(tail), tail)
    marks = [i for i, e in enumerate(found) if e.pid == tid and _MARK.match(e.what)]
    if not marks:
        raise InputError(f"no tracemark of cyclictest thread {tid} in the trace tail (the "
                         "capture ends before the breach)", path=tail)
    mark = found[marks[-1]]
    before = found[:marks[-1]]
    woken = _last(before, lambda e: bool((m := _WOKEN.match(e.what)) and int(m["pid"]) == tid))
    # Without its wake-up in the trace, the wait began when the thread last went to sleep.
    slept = _last(before, lambda e: bool((m := _SWITCH.match(e.what)) and int(m["pid"]) == tid))
    start = woken if woken is not None else slept
    return TraceBreach(
        cpu=mark.cpu, kind="thread", total_us=total_us,
        components=_split(total_us, mark, before[woken] if woken is not None else None),
        blocking_task=_blocking(tid, mark.cpu, before[start or 0:]),
        tail=[e.text() for e in before if e.cpu == mark.cpu][-TAIL_ENTRIES:])


def _last(found: list[Entry], test: Callable[[Entry], bool]) -> int | None:
    return next((i for i in range(len(found) - 1, -1, -1) if test(found[i])), None)


def _split(total_us: float, mark: Entry, woken: Entry | None) -> list[TraceComponent]:
    """The latency before the thread's wake-up (its timer fired late) and after it (it waited
    for the CPU), when the trace holds a wake-up that fits inside the latency."""
    if woken is None:
        return []
    after = (mark.seconds - woken.seconds) * 1e6
    if not 0 <= after <= total_us:
        return []
    return [TraceComponent(name=name, us=round(us, 3), share=round(100 * us / total_us, 2))
            for name, us in (("Timer expiry to wake-up", total_us - after),
                             ("Wake-up to tracemark", after))]


def _blocking(tid: int, cpu: int, waiting: list[Entry]) -> str | None:
    """comm:pid of the task that had the CPU while the thread waited: the one it was switched
    in from, else (its switch-in not traced) the last other task seen on that CPU."""
    on_cpu = [e for e in waiting if e.cpu == cpu]
    for e in reversed(on_cpu):
        if (m := _SWITCH.match(e.what)) and int(m["next"]) == tid:
            return f"{m['comm']}:{m['pid']}"
    others = [e for e in on_cpu if e.pid not in (tid, 0)]
    return f"{others[-1].comm}:{others[-1].pid}" if others else None


def trace(stdout: Path, stderr: Path, tail: Path, rc: int | None, *, threshold_us: float,
          cap_s: int, version: str | None, raw: list[str]) -> Trace:
    """The result's trace section from a breaktrace run's files (``raw``: their names as the
    result refers to them)."""
    base = {"tool": TOOL, "version": version, "threshold_us": threshold_us, "cap_s": cap_s,
            "raw": raw}
    try:
        found = breach(stdout, tail)
    except InputError as exc:
        return Trace(**base, breached=_BREAK_THREAD.search(_text(stdout)) is not None,
                     note=f"cyclictest's breaktrace cannot be read: {exc.oneline()}")
    if found is not None:
        return Trace(**base, breached=True, breaches=[found])
    if rc != 0:
        said = " | ".join(_text(stderr).strip().splitlines()[-3:])
        return Trace(**base, breached=False,
                     note=f"cyclictest ended with status {rc} and no break: {said or 'no output'}")
    return Trace(**base, breached=False,
                 note=f"no latency above {fmt(threshold_us)} µs in the {cap_s} s follow-up run: "
                      "the breach did not recur under the tracer")


def run(scenario: str, threshold_us: float, cap_s: int, out: Path, *,
        scale: float | None) -> Trace:
    """The follow-up run here: the scenario's loads and its cyclictest as measured, armed with
    ``-b``/``--tracemark``, ftrace set up around it and put back; ends at the first breach or
    after ``cap_s``. Its files land in ``out/raw/trace-*`` beside the measurement's."""
    if why := ftrace.missing():
        return Trace(tool=TOOL, threshold_us=threshold_us, cap_s=cap_s, breached=False,
                     note=why)
    caps = detect()
    if not caps.supports("--tracemark"):
        raise InfraError(f"cyclictest {caps.version} has no --tracemark: no breaktrace")
    spec, source = load_scenario(scenario)
    rawdir = (out / RAW).resolve()
    rawdir.mkdir(parents=True, exist_ok=True)
    names: list[str] = []
    with tempfile.TemporaryDirectory(prefix="rtgate-breaktrace-") as tmp:
        staging = Path(tmp) / RAW
        staging.mkdir()
        try:
            with planned(spec, source, caps, duration_s=cap_s, rawdir=staging,
                                   scale=scale) as (plan, scratch):
                # cyclictest traces whatever tool the scenario measures with: breaktrace is its
                # trigger.
                armed = replace(plan, tool="cyclictest", measure=None, cyclictest=replace(
                    plan.cyclictest, argv=arm(plan.cyclictest.argv, threshold_us),
                    nsecs=False))
                with ftrace.Session() as session:
                    run_log = execute(armed, staging, scratch)
                    session.stop()
                    session.tail(staging / "ftrace.txt")
                # A raw file, so whoever reads the others (a controller too) has it.
                (staging / RC_FILE).write_text(f"{run_log.cyclictest_rc}\n", encoding="utf-8")
                (staging / "ftrace-setup.txt").write_text("\n".join(session.setup) + "\n",
                                                          encoding="utf-8")
        finally:
            # A run that failed keeps what it wrote, too.
            for path in sorted(staging.iterdir()):
                shutil.move(path, rawdir / f"trace-{path.name}")
                names.append(f"raw/trace-{path.name}")
    return parsed(rawdir, names, threshold_us=threshold_us, cap_s=cap_s, version=caps.version)


def parsed(rawdir: Path, raw: list[str], *, threshold_us: float, cap_s: int,
           version: str | None) -> Trace:
    """The trace section from the ``trace-*`` files a follow-up run left in ``rawdir``, here
    or (fetched from a board) on the controller."""
    rc = _text(rawdir / f"trace-{RC_FILE}").strip()
    return trace(rawdir / "trace-cyclictest.stdout", rawdir / "trace-cyclictest.stderr",
                 rawdir / "trace-ftrace.txt", int(rc) if re.fullmatch(r"-?\d+", rc) else None,
                 threshold_us=threshold_us, cap_s=cap_s, version=version, raw=raw)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=path) from exc


def _text(path: Path) -> str:
    """What a file holds, "" when it is missing (an output the run never wrote)."""
    try:
        return _read(path)
    except InputError:
        return ""
