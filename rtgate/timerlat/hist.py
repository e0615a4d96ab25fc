"""``rtla timerlat hist`` (and ``rtla osnoise hist``) output -> the normalized result.

rtla prints, after the run::

    # RTLA timerlat histogram
    # Time unit is microseconds (us)
    # Duration:   0 00:00:20
    Index   IRQ-000   Thr-000   IRQ-001   Thr-001
    3            12         0        40         0      one row per non-empty bin: its lower edge,
    ...                                                then a count per series
    over:         0         0         0         0      samples at or above the limit (-E × -b)
    count:    19998     19998     19999     19999
    min:          3        10         3         9      (per series; '-' where it has no sample)
    avg:          5        15         5        14      (cut toward zero: sum / count)
    max:         80       120        71       133
    ALL:        IRQ       Thr                           the same four lines over all CPUs
                                                       (rtla 6.10 on; before, none)
    count: ...

A series is one context on one CPU: ``IRQ`` (the timer interrupt's latency), ``Thr`` (the
timerlat thread it wakes), ``Usr`` (a user-space thread's return, ``-u``). They are kept apart:
one :class:`~rtgate.result.Thread` per CPU and context, with ``context`` saying which, and
``Result.contexts`` holding each context's series and totals. ``threads`` and ``totals`` are the
**thread** context's: the latency a real-time task sees, and the one comparable to cyclictest's.
A thread activation's latency is measured from the same timer expiry as its IRQ's and includes
it, so a budget the thread series meets bounds the IRQ series too; mixing the two into one total
would instead dilute the thread's tail with the shorter IRQ samples.

With ``-n``/``--nano`` (``# Time unit is nanoseconds (ns)``; kernel
``tools/tracing/rtla/src/timerlat_hist.c``, 6.12: ``output_divisor`` 1 instead of 1000) every
number is in ns, and so are ``-b`` and the row indexes: min, avg and max keep every digit in µs
(``Result.resolution_us`` 0.001), rows of 1 ns bins go into the log-linear ns bins
(``Histogram.log_linear``, as cyclictest -N's) under a limit in whole µs (rows from the last whole
µs below a limit that is none go to the overflows), rows of whole-µs bins stay such bins.

The histogram's limit and bin width are not in the output, and rtla omits empty rows, so the
rows cannot tell them: they come from the command line (rtgate's own runs, ``--timerlat-limit``),
else the rtla command in a pasted file's prompt (rtla's defaults for what it leaves out), else
the limit is unknown (``Histogram.limit_known``: the lowest limit the file allows is kept, and a
percentile among the overflows is only a lower bound at it) and the bin width is 1 µs only when
the rows prove it. A known limit a row contradicts is refused rather than misread. Everything is
cross-checked (counts against the histogram, min/max against its bins, the ALL lines against the
per-CPU ones): a file cut short or edited is an InputError naming the file and line. With 1 µs
bins and no overflow the average is the histogram's exact mean; otherwise it is rtla's integer
average (``avg_truncated``). ``rtla osnoise hist`` has the same shape (``CPU-000`` columns, no
ALL): its series are context ``noise`` of the tool ``osnoise``, never wake-up latencies. Its
whole-number averages are never used (``UNWEIGHTED_NOTE``); its two-decimal ones (rtla 6.3 on)
postdate the fix and are.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rtgate.errors import InputError
from rtgate.result import (
    NSEC_US,
    RESOLUTION_US,
    Board,
    Context,
    Histogram,
    Kernel,
    Result,
    Series,
    SourceFile,
    Thread,
    Tool,
    Totals,
    default_run_id,
)
from rtgate.stats.histogram import Sparse, percentiles, stddev
from rtgate.timerlat import pasted
from rtgate.timerlat.command import TOOL

DEFAULT_ENTRIES, DEFAULT_BUCKET = 256, 1
"""rtla's own -E and -b (-b in the file's unit: µs, or ns with -n)."""
UNWEIGHTED_NOTE = (
    "rtla osnoise hist's whole-number averages are not used: rtla 5.17 to 6.2 (6.1 stable "
    "before the 2023-03 backport) summed each noise duration once per bucket update, unweighted "
    "by its count (fixed by kernel commit fe137a4fe0e7, 'tools/tracing/rtla: osnoise_hist: use "
    "total duration for average calculation'), and the file does not say which rtla printed it; "
    "the average comes from the histogram where its 1 µs bins hold every sample, else it is "
    "unknown")
TITLE = "# RTLA timerlat histogram"
OSNOISE_TITLE = "# RTLA osnoise histogram"
_UNIT = re.compile(r"^# Time unit is (microseconds \(us\)|nanoseconds \(ns\))$")
_DURATION = re.compile(r"^# Duration: +\d+ \d\d:\d\d:\d\d$")
_COLUMN = re.compile(r"^(IRQ|Thr|Usr|CPU)-(\d{3,})$")
INDEX_HEADER = re.compile(r"^Index(?:\s+(?:IRQ|Thr|Usr|CPU)-\d{3,})+$")
"""The column header: where a histogram pasted without rtla's three title lines starts."""
_CONTEXTS: dict[str, Context] = {"IRQ": "irq", "Thr": "thread", "Usr": "user", "CPU": "noise"}
_LABELS: dict[Context, str] = {"irq": "IRQ", "thread": "thread", "user": "user",
                               "noise": "noise"}
# rtla osnoise hist prints its averages with two decimals (6.3 on), before as whole numbers.
_DECIMAL = re.compile(r"^[0-9]{1,20}\.[0-9]{2}$")
_SUMMARY = ("count", "min", "avg", "max")
# Each context's totals under 'ALL:', with what rtla prints there.
_ALL = re.compile(r"^ALL:((?:\s+(?:IRQ|Thr|Usr))+)\s*$")
_UNSET_MIN = 2**64 - 1
# rtla prints unsigned long longs: at most 20 ASCII digits (str.isdigit would take '²').
_NUMBER = re.compile(r"^[0-9]{1,20}$")



@dataclass
class _Column:
    context: Context
    cpu: int
    bins: dict[int, int] = field(default_factory=dict)
    summary: dict[str, int | float | None] = field(default_factory=dict)
    """count, min, avg, max as printed (the file's unit); None for '-'."""
    total: int | None = None
    """The exact sum of its samples, where its bins are the file's unit and none overflowed."""


@dataclass(frozen=True)
class _Given:
    """What the caller and the prompt say of the run's histogram; its limit and bin width in
    the file's unit are known once its unit is (``in_unit``)."""

    limit_us: int | None
    bucket_us: int | None
    bucket_ns: int | None
    """The run's -b where rtla ran with -n (it counts ns): 1 ns, or a whole µs such as the
    harness's ``bucket_us`` × 1000; given, the file must be in ns."""
    typed: pasted.Typed | None

    @property
    def nano(self) -> bool:
        """The caller's -b or the prompt's -n says the file is in ns."""
        return self.bucket_ns is not None or bool(self.typed and self.typed.nanoseconds)

    @property
    def nano_refusal(self) -> str:
        return ("the prompt's rtla command has -n (nanoseconds), but its output says "
                "microseconds" if self.typed and self.typed.nanoseconds else
                "rtla was run with -n (nanoseconds), but its output says microseconds")

    def in_unit(self, scale: int) -> tuple[int | None, int | None]:
        """(limit, bin width) in the file's unit: ``scale`` ns each (1000: µs, 1: ns)."""
        bucket = (self.bucket_ns if scale == 1 and self.bucket_ns is not None else
                  None if self.bucket_us is None else self.bucket_us * 1000 // scale)
        if bucket is None and self.typed:
            bucket = self.typed.bucket or DEFAULT_BUCKET
        limit = None if self.limit_us is None else self.limit_us * 1000 // scale
        if limit is None and self.typed:
            limit = (self.typed.entries or DEFAULT_ENTRIES) * (bucket or DEFAULT_BUCKET)
        return limit, bucket


class _HistReader:
    def __init__(self, path: Path, title: str, given: _Given, lenient: bool) -> None:
        self.path, self.title, self.given = path, title, given
        self.scale = 1000
        """ns per unit of the file: 1000 (µs), or 1 (rtla -n)."""
        self.limit, self.bucket = given.in_unit(self.scale)
        self.lenient = lenient
        self.line_no = 0
        self.lines: dict[str, int] = {}
        """The line of each summary line ('over', 'count' ..., 'ALL count' ...), for errors
        found once every line is read."""
        self.rows: list[int] = []

    def error(self, problem: str, at: str | None = None) -> InputError:
        line = self.lines[at] if at else self.line_no
        return InputError(f"line {line}: {problem}", path=self.path)

    def read(self, lines: list[tuple[int, str]]) -> tuple[
            list[_Column], dict[Context, dict[str, int | float | None]], list[tuple[int, str]]]:
        """The columns, the ALL section (empty before rtla 6.10, which has none) and the lines
        after the output."""
        it = iter(lines)

        def next_line(what: str) -> str:
            for self.line_no, line in it:
                return line.rstrip()
            raise self.error(f"the output ends before {what} (cut short?)")

        first = next_line("its title")
        if self.lenient and INDEX_HEADER.match(first.strip()):
            # Pasted from its Index row on: the unit is ns where the prompt has -n or the
            # caller's -b counts ns (bucket_ns), else rtla's µs.
            if self.given.bucket_ns is not None and self.given.typed and not (
                    self.given.typed.nanoseconds):
                raise self.error("rtla was run with -n (nanoseconds), but the prompt's rtla "
                                 "command has no -n (microseconds)")
            self._unit(self.given.nano)
            return self._body(first.split(), it, next_line)
        if first != self.title:
            raise self.error(f"not rtla output: expected {self.title!r}")
        unit = _UNIT.match(next_line("the time unit"))
        if not unit:
            raise self.error("expected '# Time unit is microseconds (us)' (or nanoseconds "
                             "(ns), rtla -n)")
        nano = unit[1].startswith("nano")
        if self.given.nano and not nano:
            raise self.error(self.given.nano_refusal)
        self._unit(nano)
        if not _DURATION.match(next_line("the duration")):
            raise self.error("expected '# Duration: D HH:MM:SS'")
        return self._body(next_line("the header").split(), it, next_line)

    def _unit(self, nano: bool) -> None:
        self.scale = 1 if nano else 1000
        self.limit, self.bucket = self.given.in_unit(self.scale)

    @property
    def unit(self) -> str:
        return "ns" if self.scale == 1 else "µs"

    def _body(self, header: list[str], it: Iterator[tuple[int, str]],
              next_line: Callable[[str], str]) -> tuple[
            list[_Column], dict[Context, dict[str, int | float | None]], list[tuple[int, str]]]:
        """From the header line ('Index IRQ-000 ...') on."""
        if not header or header[0] != "Index":
            example = "CPU-000 CPU-001" if self.title == OSNOISE_TITLE else "IRQ-000 Thr-000"
            raise self.error(f"expected the header 'Index {example} ...' (--no-index and "
                             "--no-header output are not read)")
        columns = []
        for name in header[1:]:
            m = _COLUMN.match(name)
            if not m:
                raise self.error(f"unknown column {name!r} in the header")
            if (m[1] == "CPU") != (self.title == OSNOISE_TITLE):
                raise self.error(f"column {name!r} in {self.title[2:]!r}")
            columns.append(_Column(_CONTEXTS[m[1]], int(m[2])))
        if len({(c.context, c.cpu) for c in columns}) != len(columns):
            raise self.error("a column appears twice in the header")
        last = -1
        while True:
            words = next_line("'over:'").split()
            if words[:1] == ["over:"]:
                break
            values = self._ints(words, len(columns) + 1, "a histogram row")
            index = values[0]
            if index <= last or (self.bucket and index % self.bucket) or (
                    self.limit is not None and index >= self.limit):
                raise self.error(
                    f"bin {index} is out of order or off the histogram's grid (limit "
                    f"{self.limit} {self.unit}, bins of {self.bucket} {self.unit}: pass the "
                    "run's -E and -b)")
            last = index
            self.rows.append(index)
            for col, count in zip(columns, values[1:], strict=True):
                if count:
                    col.bins[index] = count
        overflows = self._ints(words[1:], len(columns), "'over:'")
        self.lines["over"] = self.line_no
        for name in _SUMMARY:
            words = next_line(f"'{name}:'").split()
            if words[:1] != [f"{name}:"]:
                raise self.error(f"expected '{name}:' after the histogram")
            self.lines[name] = self.line_no
            for col, value in zip(columns, self._values(words[1:], len(columns), name),
                                  strict=True):
                col.summary[name] = value
        for col, over in zip(columns, overflows, strict=True):
            col.summary["over"] = over
        rest = list(it)
        m = _ALL.match(rest[0][1].strip()) if rest else None
        if not m:
            if not self.lenient:
                raise self.error("expected 'ALL:' and its contexts after the per-CPU summary")
            return columns, {}, rest  # rtla before 6.10: no ALL section
        after_all = iter(rest[1:])
        self.line_no = rest[0][0]
        contexts: list[Context] = [_CONTEXTS[w] for w in m[1].split()]
        if len(set(contexts)) != len(contexts):
            raise self.error("a context appears twice after 'ALL:'")
        every: dict[Context, dict[str, int | float | None]] = {c: {} for c in contexts}
        for name in _SUMMARY:
            if (found := next(after_all, None)) is None:
                raise self.error(f"the output ends before '{name}:' of ALL (cut short?)")
            self.line_no, text = found
            words = text.split()
            if words[:1] != [f"{name}:"]:
                raise self.error(f"expected '{name}:' of ALL")
            self.lines[f"ALL {name}"] = self.line_no
            for context, value in zip(contexts, self._values(words[1:], len(contexts), name),
                                      strict=True):
                every[context][name] = value
        return columns, every, list(after_all)

    def _ints(self, words: list[str], n: int, what: str) -> list[int]:
        if len(words) != n or not all(_NUMBER.match(w) for w in words):
            raise self.error(f"{what}: expected {n} whole numbers, got {' '.join(words)[:80]!r}")
        return [int(w) for w in words]

    def _values(self, words: list[str], n: int, what: str) -> list[int | float | None]:
        decimals = what == "avg" and self.title == OSNOISE_TITLE
        if len(words) != n or not all(_NUMBER.match(w) or (w == "-" and what != "count")
                                      or (decimals and _DECIMAL.match(w)) for w in words):
            raise self.error(f"'{what}:' expected {n} values, got {' '.join(words)[:80]!r}")
        return [None if w == "-" else float(w) if "." in w else int(w) for w in words]


def parse(path: Path, *, limit_us: int | None = None, bucket_us: int | None = None,
          bucket_ns: int | None = None, period_us: int | None = None, board: str = "unknown",
          virtual: bool = False, scenario: str = "unknown", flavor: str | None = None,
          run_id: str | None = None, lenient: bool = False) -> Result:
    """Normalize one ``rtla timerlat hist`` output file. ``limit_us``/``bucket_us``: the run's
    ``-E × -b`` and ``-b`` in µs (``bucket_ns``: the ``-b`` of a run with ``-n``, where it
    counts ns: the file must then be in ns); not given, they come from the rtla command in the
    file's prompt (rtla's defaults for what it does not say), else the limit is unknown (see
    ``Histogram.limit_known``). ``lenient``: a file a user hands over (``pasted``)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=path) from exc
    lines = pasted.decode(path, data, "rtla hist")
    titled = any(line.strip() in (TITLE, OSNOISE_TITLE) for line in lines)
    out = pasted.split(path, lines, lambda line: line in (TITLE, OSNOISE_TITLE) or (
        lenient and not titled and bool(INDEX_HEADER.match(line))), lenient=lenient,
                       tool="rtla hist")
    title = out.lines[0][1].strip()
    typed = out.typed if out.typed and " hist" in f" {out.typed.cmdline}" else None
    given = _Given(limit_us, bucket_us, bucket_ns, typed)
    if INDEX_HEADER.match(title):
        title = OSNOISE_TITLE if " CPU-" in f" {title}" else TITLE
        unit = "ns, as rtla -n prints" if given.nano else "rtla's default, µs"
        out.notes.append(f"{path.name}: pasted from the histogram's Index row on, without "
                         f"{title!r}, its time unit and duration: the unit is taken as {unit}, "
                         "and the duration is unknown")
    tool, main = ("osnoise", "noise") if title == OSNOISE_TITLE else (TOOL, "thread")
    what = f"rtla {tool} hist"
    reader = _HistReader(path, title, given, lenient)
    columns, every, rest = reader.read(out.lines)
    if unset := [c for c in columns if c.summary["count"] == 0 and (
            c.summary["min"], c.summary["avg"], c.summary["max"]) == (_UNSET_MIN, None, 0)]:
        # rtla before kernel commit 01b05fc0e5f3 printed a series without a sample with its
        # initial values: no sample, as its count says.
        for c in unset:
            c.summary.update(min=None, max=None)
        out.notes.append(f"{path.name}: " + ", ".join(
            f"{_LABELS[c.context]} CPU {c.cpu}" for c in unset) + ": no sample, printed by an "
            "older rtla as min 18446744073709551615 (its initial ~0), avg -, max 0")
    pasted.after(out, rest, lenient=lenient, tool=what,
                 looks_like_output=_looks_like_output)
    bucket = reader.bucket or _bucket_from_rows(reader.rows)
    known = reader.limit is not None
    limit = reader.limit if reader.limit is not None else _lowest_limit(reader, columns, bucket)
    overflowed = any(c.summary["over"] for c in columns)
    grid = _Grid(limit, known, bucket, reader.scale, overflowed)
    series = [_series(reader, grid, i, col, period_us) for i, col in enumerate(columns)]
    contexts: dict[Context, Series] = {}
    for context in dict.fromkeys(c.context for c in columns):
        members = [t for t in series if t.context == context]
        totals = _totals(members)
        if every:
            if context not in every:
                raise reader.error("'ALL:' leaves out a context the histogram has", "ALL count")
            _agree(reader, context, [c for c in columns if c.context == context],
                   every[context])
        contexts[context] = Series(threads=members, totals=totals)
    if set(every) - set(contexts):
        raise reader.error("'ALL:' names a context the histogram has not", "ALL count")
    sources = [SourceFile(path=str(path), sha256=hashlib.sha256(data).hexdigest(),
                          format="osnoise-hist" if tool == "osnoise" else "timerlat-hist")]
    thread = contexts.get(main)
    reasons = []
    if thread is None and tool == "osnoise":
        reasons.append("no CPU column: rtla osnoise hist prints only CPUs that saw noise, and "
                       "this one printed none: the result has no totals to judge")
    elif thread is None:
        reasons.append("no thread context (rtla --no-thread): the result has no totals to judge")
    elif not thread.totals.samples:
        reasons.append(f"no samples in the {main} context: rtla stopped before its first")
    notes = out.notes + _limit_notes(path, grid, reader.bucket, overflowed, out.stopped)
    if any(c.context == "noise" and isinstance(c.summary["avg"], int) for c in columns):
        notes.append(f"{path.name}: {UNWEIGHTED_NOTE}")
    return Result(
        run_id=run_id or default_run_id(board, scenario, None, sources),
        board=Board(name=board, virtual=virtual), kernel=Kernel(flavor=flavor),
        scenario=scenario, tool=Tool(name=tool, cmdline=typed.cmdline if typed else None),
        sources=sources, threads=thread.threads if thread else [],
        totals=thread.totals if thread else Totals(samples=0),
        contexts=contexts, resolution_us=NSEC_US if reader.scale == 1 else RESOLUTION_US,
        status="partial" if reasons else "complete", reasons=reasons, notes=notes)


def _looks_like_output(line: str) -> bool:
    """A line of a second rtla output (another run pasted after the first): never a note."""
    return line == TITLE or line.split()[0] in (*(f"{n}:" for n in _SUMMARY), "over:", "ALL:")


@dataclass(frozen=True)
class _Grid:
    """The histogram as rtla counted it, in the file's unit (``scale`` ns each)."""

    limit: int
    """The run's limit, or (not ``known``) the lowest the file allows."""
    known: bool
    bucket: int | None
    """None: neither given nor provable from the rows; no histogram is kept."""
    scale: int
    overflowed: bool

    @property
    def unit(self) -> str:
        return "ns" if self.scale == 1 else "µs"

    @property
    def limit_us(self) -> int:
        """The limit a result states, in whole µs: an ns limit that is none is cut down to
        one (the rows above go to the overflows, which stay "at or above" it); an unknown one
        without overflows is raised to one (any limit above the rows says the same)."""
        whole, part = divmod(self.limit * self.scale, 1000)
        return whole + 1 if part and not (self.known or self.overflowed) else whole

    @property
    def kept(self) -> bool:
        """Whether a result can hold the bins: µs ones, ns ones of 1 ns (log-linear) or of
        whole µs, under a limit of at least 1 µs."""
        return self.bucket is not None and self.limit_us >= 1 and (
            self.scale == 1000 or self.bucket == 1 or self.bucket % 1000 == 0)


def _bucket_from_rows(rows: list[int]) -> int | None:
    """Rows are multiples of the bin width: when they have no common divisor above 1, or two
    follow each other at 1 µs, the width is 1 µs. Otherwise it is unknown."""
    divisor = 0
    for row in rows:
        divisor = math.gcd(divisor, row)
    return 1 if divisor == 1 else None


def _lowest_limit(reader: _HistReader, columns: list[_Column], bucket: int | None) -> int:
    """The lowest -E × -b the file allows: above every row, and above every maximum of a series
    that did not overflow; a multiple of the bin width. Every overflow lies at or above it."""
    edge = bucket or 1
    floor = reader.rows[-1] + edge if reader.rows else edge
    for col in columns:
        if not col.summary["over"] and col.summary["max"] is not None:
            floor = max(floor, col.summary["max"] + 1)
    floor = -(-floor // edge) * edge
    for col in columns:
        high = col.summary["max"]
        if col.summary["over"] and high is not None and high < floor:
            label = f"{_LABELS[col.context]} CPU {col.cpu}"
            raise reader.error(f"{label}: {col.summary['over']} over the histogram's limit, "
                               f"but max {high} {reader.unit} lies below its rows or another "
                               "series' maximum", "max")
    return floor


def _limit_notes(path: Path, grid: _Grid, bucket_given: int | None, overflowed: bool,
                 stopped: bool) -> list[str]:
    notes = []
    if grid.bucket is None and bucket_given is None:
        notes.append(f"{path.name}: the bin width (-b) is not in the file and its rows do not "
                     f"prove 1 {grid.unit}: no histogram is kept, so no percentile (pass "
                     f"--timerlat-bucket{'-ns' if grid.scale == 1 else ''})")
    elif not grid.kept:
        notes.append(f"{path.name}: rtla -n counted bins of {grid.bucket} ns under a limit of "
                     f"{grid.limit} ns: a result keeps 1 ns bins or whole-µs ones under a limit "
                     "of at least 1 µs, so no histogram is kept, and no percentile")
    elif not grid.known and overflowed:
        notes.append(f"{path.name}: the histogram's limit (-E × -b) is not in the file: every "
                     f"overflow lies at or above {grid.limit_us} µs, and a percentile among "
                     "them is only that lower bound (pass --timerlat-limit)")
    elif grid.scale == 1 and grid.known and grid.limit % 1000:
        notes.append(f"{path.name}: the histogram's limit of {grid.limit} ns is no whole µs: "
                     f"its rows from {grid.limit_us} µs up are counted as overflows, at or "
                     "above that limit")
    if stopped:
        notes.append(f"{path.name}: rtla hit stop tracing: the run ended at its threshold, "
                     "before its duration")
    return notes


def _series(reader: _HistReader, grid: _Grid, index: int, col: _Column,
            period_us: int | None) -> Thread:
    """One column, checked against itself: its count, minimum and maximum against its bins."""
    s = col.summary
    count, over = s["count"] or 0, s["over"] or 0
    label = f"{_LABELS[col.context]} CPU {col.cpu}"
    unit = grid.unit
    in_bins = sum(col.bins.values())
    if in_bins + over != count:
        raise reader.error(f"{label}: count {count}, but its histogram holds {in_bins} + "
                           f"{over} over", "count")
    edge = grid.bucket
    histogram = _histogram(grid, col.bins, over)
    if not count:
        if any(s[k] is not None for k in ("min", "avg", "max")):
            raise reader.error(f"{label}: min/avg/max without a sample", "min")
        return Thread(thread=index, context=col.context, cpu=col.cpu, interval_us=period_us,
                      samples=0, histogram=histogram)
    low, avg, high = s["min"], s["avg"], s["max"]
    # osnoise's whole-number averages may be rtla's unweighted sum (see UNWEIGHTED_NOTE):
    # not even between min and max, so never checked or used.
    unweighted = col.context == "noise" and isinstance(avg, int)
    if low is None or avg is None or high is None or not (
            low <= avg <= high or (unweighted and low <= high)):
        raise reader.error(f"{label}: min/avg/max {low}/{avg}/{high} do not fit {count} "
                           "samples", "avg")
    if over and high < grid.limit:
        raise reader.error(f"{label}: {over} over the limit of {grid.limit} {unit}, but max "
                           f"{high} {unit}", "max")
    if edge is not None:
        if low < grid.limit and (not col.bins or min(col.bins) != low // edge * edge):
            raise reader.error(f"{label}: min {low} {unit} is not in its lowest bin", "min")
        if not over and max(col.bins) != high // edge * edge:
            raise reader.error(f"{label}: max {high} {unit} is not in its highest bin", "max")
    # A whole-number average is cut toward zero: the mean lies in [avg, avg + 1 unit). osnoise's
    # two decimals are rounded: [avg - 0.005, avg + 0.005], kept as the wider [avg - 0.005, +1).
    rounded = isinstance(avg, float)
    mean: float | None = None if unweighted else avg - 0.005 if rounded else float(avg)
    truncated = not unweighted
    if edge == 1 and not over:
        total = sum(v * n for v, n in col.bins.items())
        if not unweighted and ((abs(total / count - avg) > 0.005 + 1e-9) if rounded
                               else total // count != avg):
            raise reader.error(f"{label}: avg {avg} {unit}, but its histogram's mean is "
                               f"{total / count:.2f} {unit}", "avg")
        mean, truncated, col.total = total / count, False, total
    return Thread(thread=index, context=col.context, cpu=col.cpu, interval_us=period_us,
                  samples=count, min_us=_us(low, grid), avg_us=_us(mean, grid),
                  avg_truncated=truncated, max_us=_us(high, grid), histogram=histogram)


def _us(value: float | None, grid: _Grid) -> float | None:
    """A value of the file in µs: as printed, or ns to their last digit."""
    return value if value is None or grid.scale == 1000 else value / 1000


def _histogram(grid: _Grid, bins: dict[int, int], over: int) -> Histogram | None:
    """The column's bins as a result holds them: µs bins as printed; ns rows of 1 ns in
    log-linear bins (``Sparse.from_ns``), of whole µs as µs bins; None where it cannot."""
    if grid.bucket is None or not grid.kept:
        return None
    common = {"limit_us": grid.limit_us, "limit_known": grid.known}
    if grid.scale == 1000:
        return Histogram(bucket_us=grid.bucket, buckets=sorted(bins.items()), overflows=over,
                         **common)
    if grid.bucket == 1:
        values = np.fromiter(bins, np.int64, len(bins))
        counts = np.fromiter(bins.values(), np.int64, len(bins))
        kept, above = Sparse.from_ns(values, counts).below(grid.limit_us)
        return Histogram(log_linear=True, buckets=kept.pairs(), overflows=over + above,
                         **common)
    return Histogram(bucket_us=grid.bucket // 1000, overflows=over,
                     buckets=[(v // 1000, n) for v, n in sorted(bins.items())], **common)


def _totals(threads: list[Thread]) -> Totals:
    measured = [t for t in threads if t.samples]
    samples = sum(t.samples for t in measured)
    totals = Totals(samples=samples)
    if not measured:
        return totals
    totals.min_us = min(t.min_us for t in measured if t.min_us is not None)
    totals.max_us = max(t.max_us for t in measured if t.max_us is not None)
    if all(t.avg_us is not None for t in measured):
        totals.avg_us = sum((t.avg_us or 0) * t.samples for t in measured) / samples
        totals.avg_truncated = any(t.avg_truncated for t in measured)
    hists = [t.histogram for t in measured if t.histogram is not None]
    if len(hists) == len(measured) and all(h.bucket_us == 1 for h in hists):
        unit_ns = 1 if hists[0].log_linear else 1000
        merged = Sparse.from_pairs((pair for h in hists for pair in h.buckets), unit_ns)
        overflows = sum(h.overflows for h in hists)
        totals.stddev_us = stddev(merged, overflows)
        for name, value in percentiles(merged, overflows, hists[0].limit_us).items():
            setattr(totals, name, value)
    return totals


def _agree(reader: _HistReader, context: Context, columns: list[_Column],
           printed: dict[str, int | float | None]) -> None:
    """rtla's ALL lines against the per-CPU series, in the file's unit: an edited or spliced
    file rarely keeps both."""
    measured = [c.summary for c in columns if c.summary["count"]]
    count = sum(int(s["count"] or 0) for s in measured)
    mine: dict[str, int | float | None] = {
        "count": count,
        "min": min((s["min"] for s in measured if s["min"] is not None), default=None),
        "max": max((s["max"] for s in measured if s["max"] is not None), default=None)}
    exact = [c.total for c in columns if c.summary["count"]]
    if exact and all(t is not None for t in exact):
        mine["avg"] = sum(t or 0 for t in exact) // count  # rtla's: the sum over the count, cut
    for name, value in mine.items():
        if printed[name] != value:
            raise reader.error(f"ALL {context} {name} {printed[name]}, but the CPUs' series give "
                               f"{value}", f"ALL {name}")
