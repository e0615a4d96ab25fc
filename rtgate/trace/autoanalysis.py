"""`rtla timerlat` as the breach tracer: its command line, and its auto-analysis parsed.

``rtla timerlat top -a US`` stops tracing at the first IRQ or thread latency of at least US µs,
saves the trace, and prints an auto-analysis per CPU that hit the threshold::

    ## CPU 1 hit stop tracing, analyzing it ##
      IRQ handler delay:                              300012.00 us (99.98 %)
      IRQ latency:                                    300061.00 us
      Blocking thread:
                           rtgate_planted:64
        Blocking thread stack trace
                    -> timerlat_irq
                    ...
    ------------------------------------------------------------------------
         IRQ latency:                                 300061.00 us (100%)

Parsing is strict about what it takes (the section's total must be there) and keeps every other
line out: the raw output is kept beside the result anyway.
"""

from __future__ import annotations

import re
from pathlib import Path

from rtgate.result import Trace, TraceBreach, TraceComponent
from rtgate.textfmt import fmt

TOOL = "rtla timerlat"
# Per CPU, in kB: the tail before the stop is what explains it, and the trace crosses a serial
# console on the virtual board.
BUFFER_KB = 1024

_HEADER = re.compile(r"^## CPU (\d+) hit stop tracing, analyzing it ##$")
_COMPONENT = re.compile(
    r"^  (?P<name>[A-Z][A-Za-z ]+?):?\s+(?:\(exit from idle\))?\s*(?P<us>\d+(?:\.\d+)?) us"
    r"(?: \((?P<share>\d+(?:\.\d+)?) %\))?$")
_TOTAL = re.compile(r"^\s+(?P<kind>IRQ|Thread) latency:\s+(?P<us>\d+(?:\.\d+)?) us \(100%\)$")
_TASK = re.compile(r"^\s+(?P<task>\S+:\d+)(?:\s+\d+(?:\.\d+)? us)?\s*$")
_FRAME = re.compile(r"^\s+-> (?P<function>\S+)$")
_CPU_TASK = re.compile(r"^\s+\[(?P<cpu>\d+)\]\s+(?P<comm>\S+):(?P<pid>\d+)")


def command(threshold_us: int, cap_s: int) -> list[str]:
    """rtla timerlat with its stop threshold and auto-analysis (``-a``: stop at US on IRQ or
    thread latency, save the stack above US, keep the trace in timerlat_trace.txt), quiet,
    ending after ``cap_s`` when nothing breaches; tasks per CPU listed at the stop."""
    return ["rtla", "timerlat", "top", "-q", "-a", str(threshold_us), "-d", f"{cap_s}s",
            "--dump-tasks", "--trace-buffer-size", str(BUFFER_KB)]


def hit(stdout: str) -> bool:
    return any(_HEADER.match(line) for line in stdout.splitlines())


def parse(stdout: str) -> list[TraceBreach]:
    """One TraceBreach per CPU section of the auto-analysis; none when nothing breached."""
    breaches: list[TraceBreach] = []
    cpu: int | None = None
    components: list[TraceComponent] = []
    task: str | None = None
    stack: list[str] = []
    want_task = False
    for line in stdout.splitlines():
        if m := _HEADER.match(line):
            cpu, components, task, stack, want_task = int(m[1]), [], None, [], False
        elif cpu is None:
            continue
        elif m := _TOTAL.match(line):
            breaches.append(TraceBreach(cpu=cpu, kind="irq" if m["kind"] == "IRQ" else "thread",
                                        total_us=float(m["us"]), components=components,
                                        blocking_task=task, stack=stack))
            cpu = None
        elif m := _FRAME.match(line):
            stack.append(m["function"])
        elif line.strip() == "Blocking thread:":
            want_task = True  # an IRQ breach: the task that had interrupts off is on the next line
        elif m := _COMPONENT.match(line):
            components.append(TraceComponent(
                name=m["name"], us=float(m["us"]),
                share=float(m["share"]) if m["share"] else None))
            want_task = m["name"] == "Blocking thread"
        elif want_task and (m := _TASK.match(line)):
            task, want_task = m["task"], False
    return [_named(b, tasks) for b in breaches] if (tasks := _cpu_tasks(stdout)) else breaches


def _cpu_tasks(stdout: str) -> dict[int, str]:
    """--dump-tasks' list: the task on each CPU when tracing stopped, as comm:pid."""
    tasks: dict[int, str] = {}
    for line in stdout.partition("Printing CPU tasks:")[2].splitlines():
        if m := _CPU_TASK.match(line):
            tasks[int(m["cpu"])] = f"{m['comm']}:{m['pid']}"
    return tasks


def _named(b: TraceBreach, tasks: dict[int, str]) -> TraceBreach:
    """The blocking task's name as the CPU's task list has it, when the pid is the same.

    The analysis names a task from the last sched_switch it saw, which can be stale: a kthread
    created before tracing began shows under its parent's name (the planted latency's
    rtgate_planted:39 as swapper/0:39), while --dump-tasks reads the task on the CPU at the stop.
    """
    found = tasks.get(b.cpu) if b.cpu is not None else None
    if b.blocking_task and found and found.rsplit(":", 1)[1] == b.blocking_task.rsplit(":", 1)[1]:
        return b.model_copy(update={"blocking_task": found})
    return b


def missing(tracefs: Path = Path("/sys/kernel/tracing"), tracer: str = "timerlat") -> str | None:
    """Why the running kernel cannot run ``tracer`` (rtla's), or None when it can."""
    try:
        tracers = (tracefs / "available_tracers").read_text().split()
    except OSError:
        return (f"the running kernel has no tracefs at {tracefs} (CONFIG_FTRACE off, or not "
                "mounted): neither rtla timerlat nor cyclictest's breaktrace can trace here")
    return lacking(" ".join(tracers), "the running kernel", tracer)


def lacking(tracers: str, kernel: str, tracer: str = "timerlat") -> str | None:
    """Why ``kernel`` with these available_tracers cannot run ``tracer``, or None when it can."""
    if tracer in tracers.split():
        return None
    return (f"{kernel} has no {tracer} tracer (available: {' '.join(tracers.split()) or 'none'})"
            f": CONFIG_{tracer.upper()}_TRACER is needed")


def trace(stdout: Path, stderr: Path, rc: int | None, *, threshold_us: float, cap_s: int,
          version: str | None, raw: list[str], tracers: str | None) -> Trace:
    """The result's trace section from a follow-up run's files (``raw``: their names as the
    result refers to them). ``tracers`` is the guest's available_tracers, None when unknown."""
    base = {"tool": TOOL, "version": version, "threshold_us": threshold_us, "cap_s": cap_s,
            "raw": raw}
    if tracers is not None and (why := lacking(tracers, "the guest kernel")):
        return Trace(**base, breached=False, note=why)
    text = _read(stdout)
    breaches = parse(text)
    if breaches:
        return Trace(**base, breached=True, breaches=breaches)
    if rc != 0 or hit(text):
        tail = " | ".join((_read(stderr) or text).strip().splitlines()[-3:])
        return Trace(**base, breached=hit(text),
                     note=f"rtla timerlat ended with status {rc} and no analysis: {tail}")
    return Trace(**base, breached=False,
                 note=f"no latency of {fmt(threshold_us)} µs or more in the {cap_s} s follow-up "
                      "run: the breach did not recur under the tracer")


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
