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
from typing import Any

from rtgate.errors import InputError
from rtgate.result import (
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

DEFAULT_ENTRIES, DEFAULT_BUCKET_US = 256, 1
"""rtla's own -E, -b and -p."""
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
    """count, min, avg, max as printed; None for '-'."""


class _HistReader:
    def __init__(self, path: Path, title: str, limit_us: int | None, bucket_us: int | None,
                 lenient: bool) -> None:
        self.path, self.title, self.limit_us, self.bucket_us = path, title, limit_us, bucket_us
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
            return self._body(first.split(), it, next_line)  # pasted from its Index row on
        if first != self.title:
            raise self.error(f"not rtla output: expected {self.title!r}")
        unit = _UNIT.match(next_line("the time unit"))
        if not unit:
            raise self.error("expected '# Time unit is microseconds (us)'")
        if unit[1].startswith("nano"):
            raise self.error("rtla timerlat hist -n (nanoseconds) output is not read: rtgate's "
                             "budgets and histograms are in µs")
        if not _DURATION.match(next_line("the duration")):
            raise self.error("expected '# Duration: D HH:MM:SS'")
        return self._body(next_line("the header").split(), it, next_line)

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
            if index <= last or (self.bucket_us and index % self.bucket_us) or (
                    self.limit_us is not None and index >= self.limit_us):
                raise self.error(
                    f"bin {index} is out of order or off the histogram's grid (limit "
                    f"{self.limit_us} µs, bins of {self.bucket_us} µs: pass the run's -E and -b)")
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
          period_us: int | None = None, board: str = "unknown", virtual: bool = False,
          scenario: str = "unknown", flavor: str | None = None,
          run_id: str | None = None, lenient: bool = False) -> Result:
    """Normalize one ``rtla timerlat hist`` output file. ``limit_us``/``bucket_us``: the run's
    ``-E × -b`` and ``-b``; not given, they come from the rtla command in the file's prompt
    (rtla's defaults for what it does not say), else the limit is unknown (see
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
    if INDEX_HEADER.match(title):
        title = OSNOISE_TITLE if " CPU-" in f" {title}" else TITLE
        out.notes.append(f"{path.name}: pasted from the histogram's Index row on, without "
                         f"{title!r}, its time unit and duration: the unit is taken as rtla's "
                         "default, µs, and the duration is unknown")
    tool, main = ("osnoise", "noise") if title == OSNOISE_TITLE else (TOOL, "thread")
    what = f"rtla {tool} hist"
    typed = out.typed if out.typed and " hist" in f" {out.typed.cmdline}" else None
    if typed and typed.nanoseconds:
        raise InputError(f"{what} -n (nanoseconds) output is not read: rtgate's budgets and "
                         "histograms are in µs", path=path)
    if bucket_us is None and typed:
        bucket_us = typed.bucket_us or DEFAULT_BUCKET_US
    if limit_us is None and typed:
        limit_us = (typed.entries or DEFAULT_ENTRIES) * (bucket_us or DEFAULT_BUCKET_US)
    reader = _HistReader(path, title, limit_us, bucket_us, lenient)
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
    bucket = bucket_us or _bucket_from_rows(reader.rows)
    limit = limit_us if limit_us is not None else _lowest_limit(reader, columns, bucket)
    grid = _Grid(limit, limit_us is not None, bucket)
    series = [_series(reader, grid, i, col, period_us) for i, col in enumerate(columns)]
    contexts: dict[Context, Series] = {}
    for context in dict.fromkeys(c.context for c in columns):
        members = [t for t in series if t.context == context]
        totals = _totals(members)
        if every:
            if context not in every:
                raise reader.error("'ALL:' leaves out a context the histogram has", "ALL count")
            _agree(reader, context, totals, every[context])
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
    overflowed = any(c.summary["over"] for c in columns)
    notes = out.notes + _limit_notes(path, grid, bucket_us, overflowed, out.stopped)
    if any(c.context == "noise" and isinstance(c.summary["avg"], int) for c in columns):
        notes.append(f"{path.name}: {UNWEIGHTED_NOTE}")
    return Result(
        run_id=run_id or default_run_id(board, scenario, None, sources),
        board=Board(name=board, virtual=virtual), kernel=Kernel(flavor=flavor),
        scenario=scenario, tool=Tool(name=tool, cmdline=typed.cmdline if typed else None),
        sources=sources, threads=thread.threads if thread else [],
        totals=thread.totals if thread else Totals(samples=0),
        contexts=contexts, status="partial" if reasons else "complete", reasons=reasons,
        notes=notes)


def _looks_like_output(line: str) -> bool:
    """A line of a second rtla output (another run pasted after the first): never a note."""
    return line == TITLE or line.split()[0] in (*(f"{n}:" for n in _SUMMARY), "over:", "ALL:")


@dataclass(frozen=True)
class _Grid:
    limit_us: int
    """The run's limit, or (not ``known``) the lowest the file allows."""
    known: bool
    bucket_us: int | None
    """None: neither given nor provable from the rows; no histogram is kept."""


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
                               f"but max {high} µs lies below its rows or another series' "
                               "maximum", "max")
    return floor


def _limit_notes(path: Path, grid: _Grid, bucket_given: int | None, overflowed: bool,
                 stopped: bool) -> list[str]:
    notes = []
    if not grid.known and overflowed:
        notes.append(f"{path.name}: the histogram's limit (-E × -b) is not in the file: every "
                     f"overflow lies at or above {grid.limit_us} µs, and a percentile among "
                     "them is only that lower bound (pass --timerlat-limit)")
    if grid.bucket_us is None and bucket_given is None:
        notes.append(f"{path.name}: the bin width (-b) is not in the file and its rows do not "
                     "prove 1 µs: no histogram is kept, so no percentile (pass "
                     "--timerlat-bucket)")
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
    in_bins = sum(col.bins.values())
    if in_bins + over != count:
        raise reader.error(f"{label}: count {count}, but its histogram holds {in_bins} + "
                           f"{over} over", "count")
    edge = grid.bucket_us

    def histogram(**kw: Any) -> Histogram | None:
        return None if edge is None else Histogram(
            limit_us=grid.limit_us, limit_known=grid.known, bucket_us=edge, **kw)

    if not count:
        if any(s[k] is not None for k in ("min", "avg", "max")):
            raise reader.error(f"{label}: min/avg/max without a sample", "min")
        return Thread(thread=index, context=col.context, cpu=col.cpu, interval_us=period_us,
                      samples=0, histogram=histogram())
    low, avg, high = s["min"], s["avg"], s["max"]
    # osnoise's whole-number averages may be rtla's unweighted sum (see UNWEIGHTED_NOTE):
    # not even between min and max, so never checked or used.
    unweighted = col.context == "noise" and isinstance(avg, int)
    if low is None or avg is None or high is None or not (
            low <= avg <= high or (unweighted and low <= high)):
        raise reader.error(f"{label}: min/avg/max {low}/{avg}/{high} do not fit {count} "
                           "samples", "avg")
    if over and high < grid.limit_us:
        raise reader.error(f"{label}: {over} over the limit of {grid.limit_us} µs, but max "
                           f"{high} µs", "max")
    if edge is not None:
        if low < grid.limit_us and (not col.bins or min(col.bins) != low // edge * edge):
            raise reader.error(f"{label}: min {low} µs is not in its lowest bin", "min")
        if not over and max(col.bins) != high // edge * edge:
            raise reader.error(f"{label}: max {high} µs is not in its highest bin", "max")
    # A whole-number average is cut toward zero: the mean lies in [avg, avg + 1). osnoise's
    # two decimals are rounded: [avg - 0.005, avg + 0.005], kept as the wider [avg - 0.005, +1).
    rounded = isinstance(avg, float)
    mean: float | None = None if unweighted else avg - 0.005 if rounded else float(avg)
    truncated = not unweighted
    if edge == 1 and not over:
        total = sum(v * n for v, n in col.bins.items())
        if not unweighted and ((abs(total / count - avg) > 0.005 + 1e-9) if rounded
                               else total // count != avg):
            raise reader.error(f"{label}: avg {avg} µs, but its histogram's mean is "
                               f"{total / count:.2f} µs", "avg")
        mean, truncated = total / count, False
    return Thread(thread=index, context=col.context, cpu=col.cpu, interval_us=period_us,
                  samples=count, min_us=low, avg_us=mean, avg_truncated=truncated, max_us=high,
                  histogram=histogram(buckets=sorted(col.bins.items()), overflows=over))


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
        merged = Sparse.from_pairs(pair for h in hists for pair in h.buckets)
        overflows = sum(h.overflows for h in hists)
        totals.stddev_us = stddev(merged, overflows)
        for name, value in percentiles(merged, overflows, hists[0].limit_us).items():
            setattr(totals, name, value)
    return totals


def _agree(reader: _HistReader, context: Context, totals: Totals,
           printed: dict[str, int | None]) -> None:
    """rtla's ALL lines against the totals of the per-CPU series: an edited or spliced file
    rarely keeps both."""
    mine = {"count": totals.samples, "min": totals.min_us, "max": totals.max_us}
    if totals.avg_us is not None and not totals.avg_truncated:
        mine["avg"] = math.floor(totals.avg_us)  # rtla's: the sum over the count, cut
    for name, value in mine.items():
        if printed[name] != (None if value is None else int(value)):
            raise reader.error(f"ALL {context} {name} {printed[name]}, but the CPUs' series give "
                               f"{value if value is None else int(value)}", f"ALL {name}")
