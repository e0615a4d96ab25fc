"""``rtla timerlat top``'s final screen (any rtla since 5.17) -> the normalized result.

rtla prints, refreshed each second (behind ``ESC c``) or once at the end with ``-q`` (here cut
after the thread context; ``tests/data/rtla/guest-top-q.stdout`` is the whole)::

                                         Timer Latency
      0 00:00:06   |          IRQ Timer Latency (us)        |         Thread Timer Latency (us)
    CPU COUNT      |      cur       min       avg       max |      cur       min       avg       max
      0 #3599      |      170         4       292      2259 |      200        70       656      3384
      1 #4030      |      429         4       244     29892 |      825        33       531     30963
    ---------------|----------------------------------------|----------------------------------------
    ALL #7629   e0 |                  4       267     29892 |                 33       590     30963

The third group is the user context (``-u``, and rtla 6.12's default where the kernel offers
it); the ``ALL`` line (count × 10^e, cut to six digits) is rtla 6.10's. Only the last screen
counts: it holds the whole run.

With ``-n``/``--nano`` the groups say ``(ns)`` and every value is in ns (kernel
``tools/tracing/rtla/src/timerlat_top.c``, 6.12: each value divided by ``output_divisor``, 1
instead of 1000): min, avg and max keep every digit in µs (``Result.resolution_us`` 0.001).

What a screen allows is less than a histogram: ``COUNT`` is each CPU's IRQ count, and a thread
(or user) context has at most that many activations (``samples_relation`` ``<=``); ``avg`` is
``sum / count`` cut toward zero to the unit printed (``avg_truncated``); there is no histogram,
so no percentile — p99 and pWCET budgets and A/B on a top screen are incomplete. ``min`` and
``max`` are exact.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rtgate.errors import InputError
from rtgate.pastedtext import ELISION, note
from rtgate.result import (
    NSEC_US,
    RESOLUTION_US,
    Board,
    Context,
    Kernel,
    Result,
    Series,
    SourceFile,
    Thread,
    Tool,
    Totals,
    default_run_id,
)
from rtgate.timerlat import pasted
from rtgate.timerlat.command import TOOL

TITLE = "Timer Latency"
_GROUP = r"\s+\|\s+{} Timer Latency \((us|ns)\)"
_DURATION = re.compile(r"^\d+ \d\d:\d\d:\d\d" + _GROUP.format("IRQ") + _GROUP.format("Thread")
                       + f"(?:{_GROUP.format('Ret user')})?$")
COLUMNS = re.compile(r"^CPU COUNT(\s+\|\s+cur\s+min\s+avg\s+max){2,3}$")
_VALUE = r"\s+(?:\d{1,20}|-)"
_CPU = re.compile(r"^(\d+) #(\d{1,20})\s+((?:\|(?:" + _VALUE + r"){4}\s*){2,3})$")
_RULE = re.compile(r"^-+(\|-+){2,3}$")
# rtla (6.10-6.12) ends a context without samples with " |" and no newline: its next line
# ("rtla timerlat hit stop tracing") then follows on the ALL line.
_ALL = re.compile(r"^ALL #(\d{1,20})\s+e(\d+)\s+((?:\|(?:" + _VALUE + r"){3}\s*){2,3})"
                  r"(?:\|(.*))?$")
_NAMES: dict[Context, str] = {"irq": "IRQ", "thread": "thread", "user": "user"}


@dataclass
class _Cpu:
    cpu: int
    count: int
    groups: list[list[float | None]]
    """cur, min, avg, max per context, µs; None for '-'."""



def parse(path: Path, *, board: str = "unknown", virtual: bool = False,
          scenario: str = "unknown", flavor: str | None = None, run_id: str | None = None,
          lenient: bool = True) -> Result:
    """Normalize the last screen of an ``rtla timerlat top`` output file."""
    try:
        out, data = pasted.last_screen(path, TITLE, lenient=lenient, tool="rtla timerlat top",
                                       missing="no 'Timer Latency' screen")
    except InputError:
        if not lenient:
            raise
        out, data = _untitled(path)
    nano = bool(out.typed and out.typed.nanoseconds)
    contexts, cpus, every, rest, gaps, nano = _read(path, out.lines, lenient=lenient, nano=nano)
    pasted.after(out, rest, lenient=lenient, tool="rtla timerlat top",
                 looks_like_output=lambda line: line.strip() == TITLE or bool(_CPU.match(line)))
    series = {c: _series(c, k, cpus) for k, c in enumerate(contexts)}
    result_contexts: dict[Context, Series] = {}
    notes = list(out.notes)
    for k, (context, threads) in enumerate(series.items()):
        totals = _totals(context, threads, every, k, path, notes,
                         elided=any(ELISION.search(line) for _, line in gaps))
        result_contexts[context] = Series(threads=threads, totals=totals)
    if out.stopped:
        notes.append(f"{path.name}: rtla hit stop tracing: the run ended at its threshold, "
                     "before its duration")
    sources = [SourceFile(path=str(path), sha256=hashlib.sha256(data).hexdigest(),
                          format="timerlat-top")]
    thread = result_contexts["thread"]
    reasons = [] if thread.totals.samples else [
        "no samples in the thread context: rtla stopped before its first"]
    for n, line in gaps:
        elided = ELISION.search(line)
        notes.append(note(path, n, "CPUs elided by the file's author" if elided
                          else "the author's line inside the screen", line))
        if elided:
            reasons.append(f"{path.name}: line {n}: CPUs elided by the file's author: the "
                           "screen's CPUs are not all there, nor in its totals")
    return Result(
        run_id=run_id or default_run_id(board, scenario, None, sources),
        board=Board(name=board, virtual=virtual), kernel=Kernel(flavor=flavor),
        scenario=scenario,
        tool=Tool(name=TOOL, cmdline=out.typed.cmdline if out.typed else None),
        sources=sources, threads=thread.threads, totals=thread.totals,
        contexts=result_contexts, resolution_us=NSEC_US if nano else RESOLUTION_US,
        status="partial" if reasons else "complete", reasons=reasons, notes=notes)


def _untitled(path: Path) -> tuple[pasted.Output, bytes]:
    """A screen pasted without its title line (from the duration line or the column header
    on) in a user's file; the last such screen."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=path) from exc
    lines = pasted.decode(path, data, "rtla timerlat top")

    def starts(line: str) -> bool:
        return bool(_DURATION.match(line) or COLUMNS.match(line))

    tops = [i for i, line in enumerate(lines) if starts(line.strip())
            and not (i and _DURATION.match(lines[i - 1].strip()))]
    if not tops:
        raise InputError("not rtla timerlat top output: no 'Timer Latency' screen, nor its "
                         "column header 'CPU COUNT | cur min avg max | …'", path=path)
    out = pasted.split(path, lines[:tops[0]] + lines[tops[-1]:], starts, lenient=True,
                       tool="rtla timerlat top")
    shift = tops[-1] - tops[0]
    out.lines = [(n + shift, line) for n, line in out.lines]
    out.notes.append(f"{path.name}: the screen is pasted without its title line")
    return out, data


def _read(path: Path, lines: list[tuple[int, str]], *, lenient: bool, nano: bool) -> tuple[
        list[Context], list[_Cpu], tuple[int, int, list[list[float | None]]] | None,
        list[tuple[int, str]], list[tuple[int, str]], bool]:
    """The contexts, the CPU lines, the ALL line (count, e, groups), the lines after, (in
    a user's file) the lines inside the screen that are not rtla's, and whether rtla printed
    ns (``nano``: the prompt's -n says so where the screen cannot). Values are in µs."""
    def fail(n: int, problem: str) -> InputError:
        return InputError(f"line {n}: {problem}", path=path)

    if lines and lines[0][1].strip() == TITLE:
        lines = lines[1:]
        if len(lines) < 2:
            raise fail(lines[-1][0] if lines else 1,
                       "the output ends inside the screen's header (cut short?)")
    if lines and COLUMNS.match(lines[0][1].strip()):
        # Pasted from the column header on: the contexts from its groups; rtla's unit is µs
        # unless -n, which a top screen without its duration line cannot show (the prompt can).
        (m, columns), i = lines[0], 1
        contexts: list[Context] = ["irq", "thread", "user"][:columns.count("|")]
    else:
        (n, duration), (m, columns), i = lines[0], lines[1], 2
        found = _DURATION.match(duration.strip())
        if not found:
            raise fail(n, "expected the duration and 'IRQ Timer Latency (us) | Thread Timer "
                          "Latency (us)' under the title")
        units = {u for u in found.groups() if u is not None}
        if len(units) > 1:
            raise fail(n, "the contexts' units differ: rtla prints all in µs, or all in ns (-n)")
        if nano and units == {"us"}:
            raise fail(n, "the prompt's rtla command has -n (nanoseconds), but the screen says "
                          "µs")
        nano = units == {"ns"}
        contexts = ["irq", "thread"] + (["user"] if found[3] else [])
    if not COLUMNS.match(columns.strip()) or columns.count("|") != len(contexts):
        raise fail(m, "expected 'CPU COUNT | cur min avg max | …' for each context")
    cpus: list[_Cpu] = []
    gaps: list[tuple[int, str]] = []
    while i < len(lines):
        cpu = _CPU.match(lines[i][1].strip())
        if not cpu:
            text = lines[i][1].strip()
            # A user's '...' or comment between CPU lines, or before the rule, when rtla's
            # lines follow it.
            if lenient and text and cpus and any(
                    _CPU.match(line.strip()) or _RULE.match(line.strip())
                    for _, line in lines[i + 1:]) and not _RULE.match(text):
                gaps.append((lines[i][0], text))
                i += 1
                continue
            break
        groups = _groups(cpu[3])
        if len(groups) != len(contexts):
            raise fail(lines[i][0], f"{len(groups)} groups of values for {len(contexts)} "
                                    "contexts")
        if cpus and int(cpu[1]) <= cpus[-1].cpu:
            raise fail(lines[i][0], f"CPU {cpu[1]} after CPU {cpus[-1].cpu}")
        cpus.append(_Cpu(int(cpu[1]), int(cpu[2]), groups))
        _check(fail, lines[i][0], cpus[-1], contexts)
        cpus[-1].groups = _in_us(groups, nano)
        i += 1
    if not cpus:
        raise fail(lines[i - 1][0] if i >= len(lines) else lines[i][0],
                   "no CPU line on the screen (cut short?)")
    every = None
    if lenient and i < len(lines) and not lines[i][1].strip() and i + 2 < len(lines) and (
            _RULE.match(lines[i + 1][1].strip())):
        i += 1  # rtla <= 6.12 printed an extra blank line before the rule with kernel threads
    if i + 1 < len(lines) and _RULE.match(lines[i][1].strip()):
        n, text = lines[i + 1]
        total = _ALL.match(text.strip())
        if not total:
            raise fail(n, "expected 'ALL #count eN | min avg max | …' under the rule")
        groups = _groups(total[3])
        if len(groups) != len(contexts):
            raise fail(n, f"{len(groups)} groups of values for {len(contexts)} contexts")
        every = (int(total[1]), int(total[2]), _in_us(groups, nano))
        i += 2
        if total[4] and total[4].strip():
            return contexts, cpus, every, [(n, total[4]), *lines[i:]], gaps, nano
    return contexts, cpus, every, lines[i:], gaps, nano


def _groups(text: str) -> list[list[float | None]]:
    """The values of each '|' group (the regexes admit only whole groups)."""
    return [[None if w == "-" else int(w) for w in group.split()]
            for group in text.split("|")[1:]]


def _in_us(groups: list[list[float | None]], nano: bool) -> list[list[float | None]]:
    """Values printed in ns (-n) in µs to their last digit; µs ones as printed."""
    return [[v if v is None or not nano else v / 1000 for v in group] for group in groups]


def _check(fail: Callable[[int, str], InputError], n: int, cpu: _Cpu,
           contexts: list[Context]) -> None:
    for context, (_cur, low, avg, high) in zip(contexts, cpu.groups, strict=True):
        if low is None or avg is None or high is None:
            if (low, avg, high) != (None, None, None):
                raise fail(n, f"CPU {cpu.cpu} {_NAMES[context]}: '-' beside a value")
        elif not low <= avg <= high:
            raise fail(n, f"CPU {cpu.cpu} {_NAMES[context]}: min/avg/max {low}/{avg}/{high} "
                          "are out of order")


def _series(context: Context, k: int, cpus: list[_Cpu]) -> list[Thread]:
    threads = []
    for cpu in cpus:
        _cur, low, avg, high = cpu.groups[k]
        measured = low is not None and cpu.count > 0
        threads.append(Thread(
            thread=len(threads), context=context, cpu=cpu.cpu,
            samples=cpu.count if measured else 0,
            samples_relation="=" if context == "irq" or not measured else "<=",
            min_us=low if measured else None, avg_us=avg if measured else None,
            avg_truncated=measured, max_us=high if measured else None))
    return threads


def _totals(context: Context, threads: list[Thread],
            every: tuple[int, int, list[list[float | None]]] | None, k: int, path: Path,
            notes: list[str], *, elided: bool = False) -> Totals:
    measured = [t for t in threads if t.samples]
    totals = Totals(samples=sum(t.samples for t in measured),
                    samples_relation="<=" if any(t.samples_relation == "<=" for t in measured)
                    else "=")
    if not measured:
        return totals
    totals.min_us = min(t.min_us for t in measured if t.min_us is not None)
    totals.max_us = max(t.max_us for t in measured if t.max_us is not None)
    totals.avg_truncated = True
    if elided:
        # The shown CPUs' totals only (the result is partial); the ALL line, over CPUs not
        # shown, can only be checked to hold them.
        low, _avg, high = every[2][k] if every is not None else (None, None, None)
        if low is not None and high is not None and not (
                low <= totals.min_us and high >= totals.max_us):
            raise InputError(f"ALL {_NAMES[context]} min/max {low}/{high}, but the CPUs shown "
                             f"give {totals.min_us:g}/{totals.max_us:g}", path=path)
        if context == "irq" or len(measured) == 1:
            totals.avg_us = sum((t.avg_us or 0) * t.samples for t in measured) / totals.samples
        return totals
    if every is not None:
        count, exponent, groups = every
        low, avg, high = groups[k]
        if (low, high) != (totals.min_us, totals.max_us):
            raise InputError(f"ALL {_NAMES[context]} min/max {low}/{high}, but the CPUs give "
                             f"{totals.min_us:g}/{totals.max_us:g}", path=path)
        if context == "irq" and (totals.samples // 10 ** exponent != count):
            raise InputError(f"ALL count {count}e{exponent}, but the CPUs' IRQ counts sum to "
                             f"{totals.samples}", path=path)
        # rtla's own sum / count over every CPU: the total's average, cut toward zero; outside
        # min..max it is rtla's overflowed int count (before kernel commit 4eba4723c525).
        if avg is not None and low <= avg <= high:
            totals.avg_us = avg
        else:
            notes.append(f"{path.name}: ALL {_NAMES[context]} average {avg} lies outside its "
                         f"min..max {low}..{high} (rtla's count overflowed, fixed by kernel "
                         "commit 4eba4723c525): not used")
    elif len(measured) == 1 or context == "irq":
        # Exact weights (IRQ counts, or one CPU): the weighted mean of averages each in
        # [avg, avg + 1) lies in [mean, mean + 1) as well.
        totals.avg_us = sum((t.avg_us or 0) * t.samples for t in measured) / totals.samples
    else:
        notes.append(f"{path.name}: no 'ALL' line (rtla before 6.10) and the {_NAMES[context]} "
                     "context's counts are not printed: its average over all CPUs is unknown")
    return totals
