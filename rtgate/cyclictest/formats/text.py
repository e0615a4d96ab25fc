"""cyclictest's text output: ``T:`` summary lines and the ``-h``/``-H`` histogram.

One grammar covers what cyclictest prints on stdout or into ``--histfile``, in rt-tests 1.x and
2.x alike: the live screen (refreshed ``T:`` lines behind terminal escape codes; the last line
per thread wins), the ``-q`` summary printed once at exit, and the histogram section — one row per
1 µs bin, a column per thread plus a sum column with ``-H``, then the footer (``# Total``,
min/avg/max, overflows, overflow cycle numbers).

cyclictest's own messages (``WARN:`` lines on stderr captured with 2>&1, ``# /dev/cpu_dma_latency
set to``) are skipped wherever they appear and kept as notes. Only for files a user hands over
(``lenient``) are lines around the output accepted, as notes too: lines before it (a file name,
the shell prompt with the command, which gives the command line) and shell prompts after it, and
only when the output between them is complete. Raw files of rtgate's own harness hold nothing but
cyclictest's stdout: there any foreign line is an error.

A live screen left running for a day holds ~10^8 refreshed lines, so the file is read in blocks:
a block made only of screen lines is checked with a few C-level regex scans and only the last
``T:`` line per thread is kept; any other block (the histogram, a bad line) is read line by line,
which names the line of an error.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rtgate.cyclictest.formats.blocks import BLOCK_BYTES, Progress, line_blocks, no_progress
from rtgate.cyclictest.formats.view import (
    MESSAGE,
    Finality,
    RunView,
    Surroundings,
    ThreadView,
    from_ns_bins,
    from_nsecs,
    says_nsecs,
)
from rtgate.errors import InputError
from rtgate.pastedtext import ELISION, note, quoted
from rtgate.result import NSEC_US, RESOLUTION_US
from rtgate.stats.histogram import Sparse

_ESCAPE = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]")
# Act and Avg are kept as printed, padding and all: their width tells the unit (summary_unit).
_SUMMARY_TEXT = (
    r"T: *(\d+) +\( *(\d+)\) +P: *(\d+) +I: *(\d+) +C: *(\d+) +Min: *(\d+)"
    r" +Act:( *\d+)( +)Avg:( *\d+)( +)Max: *(\d+)(?: +SMI: *\d+)?[ \t]*")
_SUMMARY = re.compile(f"^{_SUMMARY_TEXT}$")


def _cut_summary() -> re.Pattern[str]:
    """A 'T:' line cut anywhere (a live screen copied mid-update): a proper prefix of one."""
    def prefixes(word: str) -> str:
        return "|".join(re.escape(word[:k]) for k in range(len(word), 0, -1))

    tail = ""
    for label in ("Max:", "Avg:", "Act:", "Min:", "C:", "I:", "P:"):
        tail = rf"(?: +(?:{re.escape(label)} *\d*{tail}|{prefixes(label)}))?"
    return re.compile(rf"^T:(?: *\d+(?: +\((?: *\d+(?:\){tail})?)?)?)? *$")


_CUT_SUMMARY = _cut_summary()
# The same lines found all at once in a block of a refreshed screen.
_SCREEN_SUMMARY = re.compile(f"^{_SUMMARY_TEXT}\n".encode(), re.M)
# The screen's other lines: cyclictest writes nothing else into them, so a prefix tells them.
_SCREEN_OTHER = (b"policy: ", b"\n", b"# /dev/cpu_dma_latency set to ")
_ROW = re.compile(r"^(\d+)((?:\s+\S+)+)$")
_FOOTER = re.compile(r"^# (Total|Min Latencies|Avg Latencies|Max Latencies|Histogram Overflows):"
                     r"((?:\s+\S+)*)$")
_OUTLIERS = re.compile(r"^# Thread (\d+):((?:\s+\d+)*)(?:\s+#\s+(\d+) others)?$")
_IGNORED = re.compile(r"^(policy: .*|)$")
_SCREEN_MESSAGE = re.compile(rb"^# /dev/cpu_dma_latency set to .*$", re.M)
# A footer that says everything a histogram's footer says: only then is output complete.
_FULL_FOOTER = ("Total", "Min Latencies", "Avg Latencies", "Max Latencies", "Histogram Overflows")
# With the rows, '# Total:' (which older files lack) only repeats their sums.
_ROWS_FOOTER = _FULL_FOOTER[1:]
# A footer line with a user's comment beside its values (lenient only).
_COMMENTED_FOOTER = re.compile(r"^(# [A-Z][A-Za-z ]+:(?:\s+\d+)*)\s+#\s*(.*)$")
# A histogram row with a user's comment after its counts: "000045 000001   -- the spike".
_COMMENTED_ROW = re.compile(r"^(\d+(?:[ \t]+\d+)+)[ \t]+(?:--+|#|//|<-+)[ \t]*(.*)$")
_CONTROL = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]")
_OUTPUT_LIKE = re.compile(r"^(T:|#\s*(Histogram|Total|Min|Avg|Max|Thread)|\d+\s+\d+$)")
_NO_SAMPLE_MIN = 1000000  # cyclictest's initial minimum, printed before a thread's first sample


@dataclass
class _State:
    path: Path
    around: Surroundings
    line_no: int = 0
    live: bool = False  # "policy:" lines: the refreshed screen, not the -q summary at exit
    summaries: dict[int, ThreadView] = field(default_factory=dict)
    in_histogram: bool = False
    rows: list[list[int]] = field(default_factory=list)
    bins: list[int] = field(default_factory=list)
    footer: dict[str, list[int]] = field(default_factory=dict)
    outliers: dict[int, list[int]] = field(default_factory=dict)
    cut_at: int | None = None
    """The first line where a user's file elides histogram rows ('...')."""
    units: set[float | None] = field(default_factory=set)
    """What the kept 'T:' lines' widths say of the unit (summary_unit)."""
    cut_summaries: list[int] = field(default_factory=list)
    """Lines of 'T:' lines a user's file holds cut off (dropped)."""
    note_at: int | None = None
    """The line of an author's note between the 'T:' lines and '# Histogram': no 'T:' line may
    follow it (two runs pasted one under the other would read as one)."""

    def fail(self, problem: str) -> InputError:
        return InputError(f"line {self.line_no}: {problem}", path=self.path)

    @property
    def notes(self) -> list[str]:
        return self.around.notes


def read_text(path: Path, *, offset: int = 0, lines_before: int = 0,
              progress: Progress = no_progress, lenient: bool = False,
              foreign: InputError | None = None, unit: float | None = None) -> RunView:
    """Read from byte ``offset`` on (after ``lines_before`` lines another reader took, which
    found ``foreign``: a line around the output, allowed only if this section is complete).
    ``unit``: the run's other files' (a -h histogram file does not say it was written in ns)."""
    around = Surroundings(path, [], lenient=lenient, seen_output=lines_before > 0,
                          foreign=foreign)
    state = _State(path, around, line_no=lines_before)
    sha = hashlib.sha256()
    with path.open("rb") as fh:
        fh.seek(offset)
        for block in line_blocks(fh, path, sha, BLOCK_BYTES, progress):
            if block.endswith(b"\n"):
                _block(state, block)
            elif not (state.rows and not state.footer):
                _block(state, block + b"\n")  # the last line merely lacks its newline
            # else: output cut inside the histogram rows: that row's count is unknown, and the
            # missing footer makes the result partial below.
    view = RunView(path=path, format="histogram" if state.in_histogram else "summary",
                   sha256=sha.hexdigest(), typed_cmdline=around.typed_cmdline, notes=state.notes)
    if state.in_histogram:
        _histogram_threads(state, view)
    elif state.summaries:
        view.threads = dict(sorted(state.summaries.items()))
    else:
        raise around.foreign or InputError(
            "no cyclictest output found (no 'T:' summary, no '# Histogram')", path=path)
    view.resolution_us = _unit(state) or unit
    if view.resolution_us == NSEC_US:
        for thread in view.threads.values():
            from_nsecs(thread)
            from_ns_bins(thread, path)
    elif view.resolution_us is None and state.units and not state.in_histogram and _all_ms(view):
        # 'T:' lines whose blanks were squeezed: -N output read as µs would be 1000 times large.
        view.partial_reasons.append(
            f"{path.name}: the 'T:' lines' spacing is not cyclictest's, which tells ns (-N) from "
            "µs, and every minimum is 1000 or more: the unit is unknown")
    elif view.resolution_us is None and state.in_histogram and _all_ms(view):
        # A -h file of a -N run has 1 ns rows and nothing else that says so.
        view.partial_reasons.append(
            f"{path.name}: every minimum is 1000 or more: a histogram of cyclictest -N (1 ns "
            "rows) cannot be told from one in µs without the run's --json or 'T:' lines")
    view.partial_reasons += [f"{path.name}: line {n}: a 'T:' line cut off (a screen copied "
                             "mid-update); it was dropped" for n in state.cut_summaries]
    complete = not view.partial_reasons and (not state.in_histogram or all(
        k in state.footer for k in (_ROWS_FOOTER if state.rows else _FULL_FOOTER)))
    if around.foreign is not None and not complete:
        raise around.foreign  # lines around output that is not whole: not a file to guess about
    return view


def _all_ms(view: RunView) -> bool:
    return all(t.min_us is not None and t.min_us >= 1000 for t in view.threads.values())


def _unit(state: _State) -> float | None:
    """The unit of the file's 'T:' lines: their widths, else -N in the command typed."""
    said = state.units - {None}
    if len(said) > 1:
        raise InputError("'T:' lines printed both in µs and in ns (-N): not the output of one "
                         "run", path=state.path)
    if said:
        return said.pop()
    return NSEC_US if says_nsecs(state.around.typed_cmdline) else None


def _block(state: _State, data: bytes) -> None:
    """Read whole lines: all at once when they are screen lines only, else one by one."""
    if data.isascii():
        data = _ESCAPE.sub(b"", data)
        if not state.in_histogram and state.around.prompt_line is None and _screen(state, data):
            return
    for raw in data.split(b"\n")[:-1]:
        state.line_no += 1
        try:
            line = _ESCAPE.sub(b"", raw).decode("ascii")
        except UnicodeDecodeError:
            problem = state.fail("binary data, not cyclictest output")
            text = _text(raw) if state.around.lenient and state.around.seen_output else None
            if text is not None:
                # A user's comment in any script or legacy encoding (GBK, Latin-1: kept escaped):
                # beside a footer's values, or after or inside the output.
                _line(state, text.rstrip())
                continue
            if not (state.around.lenient and not state.around.seen_output):
                raise problem from None
            # A line before the output may hold a fancy prompt's symbols.
            state.around.foreign = state.around.foreign or problem
            state.notes.append(note(state.path, state.line_no, "before cyclictest's output",
                                    raw.decode("ascii", "backslashreplace")))
            continue
        _line(state, line.rstrip())


def _screen(state: _State, data: bytes) -> bool:
    """Take a block of screen lines (``T:``, ``policy:``, blank) in one go, if that is all it
    holds: only the last ``T:`` line per thread matters."""
    lines = data.count(b"\n")
    others = [data.count(b"\n" + p) + data.startswith(p) for p in _SCREEN_OTHER]
    if _SCREEN_SUMMARY.subn(b"", data)[1] + sum(others) != lines:
        return False
    state.live = state.live or others[0] > 0
    state.around.seen_output = state.around.seen_output or lines > others[1]
    if others[2]:
        for m in _SCREEN_MESSAGE.finditer(data):
            state.notes.append(note(state.path, state.line_no + data.count(b"\n", 0, m.start()) + 1,
                                    "cyclictest's message, skipped", m[0].decode("ascii")))
    # Every screen prints every thread: the last full screen and what follows it suffice.
    last = data.rfind(b"\npolicy: ", 0, max(data.rfind(b"\npolicy: "), 0))
    for groups in {g[0]: g for g in _SCREEN_SUMMARY.findall(data, max(last, 0))}.values():
        _summary_groups(state, [x.decode("ascii") for x in groups])
    state.line_no += lines
    return True


def _text(raw: bytes) -> str | None:
    """A line of text in any script: UTF-8, else a legacy 8-bit encoding kept with its bytes
    escaped; None for a NUL or a control byte, which text does not hold."""
    if _CONTROL.search(raw):
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("ascii", "backslashreplace")


def _line(state: _State, line: str) -> None:
    if state.around.lenient and (m := _COMMENTED_FOOTER.match(line)):
        state.notes.append(note(state.path, state.line_no, "a comment beside the footer",
                                m[2]))
        line = m[1]
    elif (state.around.lenient and state.in_histogram and not state.footer
          and (m := _COMMENTED_ROW.match(line))):
        state.notes.append(note(state.path, state.line_no, "a comment beside a histogram row",
                                m[2]))
        line = m[1]
    if state.around.prompt_line is None and _cyclictest_line(state, line):
        state.around.seen_output = state.around.seen_output or bool(line)
        state.around.output_complete = state.around.output_complete or all(
            k in state.footer for k in _ROWS_FOOTER)
    elif (state.around.lenient and state.in_histogram and state.rows and not state.footer
          and ELISION.search(line)):
        # "...", "More histogram entries ...": the author cut rows; the footer has the totals.
        state.cut_at = state.cut_at or state.line_no
        state.notes.append(note(state.path, state.line_no, "rows cut by the file's author", line))
    elif state.around.output_complete and state.around.prompt_line is None and (
            _OUTPUT_LIKE.match(line)):
        raise state.fail(f"not cyclictest output: {quoted(line)}")
    elif line:
        kept = len(state.notes)
        state.around.take(line, state.line_no, state.fail(f"not cyclictest output: {quoted(line)}"),
                          between_sections=not state.in_histogram)
        if (len(state.notes) > kept and state.around.seen_output and not state.in_histogram
                and state.around.prompt_line is None):
            state.note_at = state.note_at or state.line_no


def _cyclictest_line(state: _State, line: str) -> bool:
    """Read a line of cyclictest's output; False when it is none."""
    if state.around.lenient and not state.around.seen_output and (
            (_ROW.match(line) and not state.in_histogram)
            or (line.startswith("T:") and not _SUMMARY.match(line))):
        return False  # a user's line before the output, shaped like a row or a summary
    if line.startswith("T:"):
        _summary(state, line)
    elif line == "# Histogram":
        if state.in_histogram:
            raise state.fail("a second '# Histogram' section")
        state.in_histogram = True
    elif m := _ROW.match(line):
        _row(state, int(m[1]), m[2].split())
    elif m := _FOOTER.match(line):
        _footer(state, m[1], m[2].split())
    elif line == "# Histogram Overflow at cycle number:":
        pass
    elif m := _OUTLIERS.match(line):
        state.outliers[int(m[1])] = [int(x) for x in m[2].split()]
    elif MESSAGE.match(line):
        state.notes.append(note(state.path, state.line_no, "cyclictest's message, skipped", line))
    elif _IGNORED.match(line):
        state.live = state.live or line.startswith("policy:")
    else:
        return False
    return True


def _summary(state: _State, line: str) -> None:
    if state.note_at is not None and not state.in_histogram:
        raise state.fail(f"a 'T:' line after the note on line {state.note_at}: notes go after "
                         "the 'T:' lines (two runs pasted together?)")
    m = _SUMMARY.match(line)
    if not m and state.around.lenient and state.live and _CUT_SUMMARY.match(line):
        # A live screen copied mid-update: like a cut -v line, the value is unknown and the rest
        # holds; the thread keeps an earlier screen's line, if any. (A -q summary printed once
        # at exit and cut loses a thread's only line: still refused.)
        state.cut_summaries.append(state.line_no)
        state.notes.append(note(state.path, state.line_no, "'T:' line cut off, dropped", line))
        return
    if not m:
        raise state.fail(f"summary line cut off or malformed: {quoted(line, 80)}")
    _summary_groups(state, list(m.groups()))


def summary_unit(act: str, between: str, avg: str, after: str) -> float | None:
    """The unit of a 'T:' line, from how wide cyclictest printed Act and Avg: ``%5ld`` in µs,
    ``%8ld`` with -N in ns (rt-tests src/cyclictest/cyclictest.c, print_stat(): "Min:%7ld
    Act:%8ld Avg:%8ld Max:%8ld" if use_nsecs, else "Min:%7ld Act:%5ld Avg:%5ld Max:%8ld").
    None: the spacing is not cyclictest's own (a pasted line whose blanks were squeezed)."""
    if between != " " or after != " ":
        return None
    said = {_field_unit(act), _field_unit(avg)} - {"either"}
    if not said:
        # Both unpadded and 8 digits or more: 10 ms in ns, or a mean wake-up of over 10 s.
        return NSEC_US
    return said.pop() if len(said) == 1 else None


def _field_unit(printed: str) -> float | str | None:
    digits = len(printed.lstrip(" "))
    if len(printed) > digits:  # padded: the width is the format's
        return {5: RESOLUTION_US, 8: NSEC_US}.get(len(printed))
    return RESOLUTION_US if digits < 8 else "either"


def _summary_groups(state: _State, printed: list[str]) -> None:
    view, unit = summary_view(printed, live=state.live)
    state.units.add(unit)
    state.summaries[view.thread] = view  # refreshed screens: the last line per thread wins


def summary_line(line: str) -> tuple[ThreadView, float | None] | None:
    """A 'T:' line's thread, as printed (see ``summary_view``); None when it is none."""
    m = _SUMMARY.match(line)
    return summary_view(list(m.groups())) if m else None


def summary_view(printed: list[str], *, live: bool = False) -> tuple[ThreadView, float | None]:
    """A 'T:' line's thread, its latencies as printed (no unit applied), and the unit its
    widths say (``summary_unit``)."""
    number, tid, prio, interval, cycles, lo, avg, hi = (
        int(printed[i]) for i in (0, 1, 2, 3, 4, 5, 8, 10))
    view = ThreadView(thread=number, finality="snapshot" if live else "final", tid=tid,
                      priority=prio, interval_us=interval, samples=cycles)
    if cycles and lo != _NO_SAMPLE_MIN:
        view.min_us, view.avg_us, view.max_us = float(lo), float(avg), float(hi)
        view.avg_truncated = True  # printed as (long)(sum / cycles)
    return view, summary_unit(*printed[6:10])


def _row(state: _State, latency: int, cells: list[str]) -> None:
    if not state.in_histogram or state.footer:
        raise state.fail("histogram row outside the '# Histogram' section")
    counts = []
    for cell in cells:
        if cell.startswith("-") and cell[1:].isdigit():
            raise state.fail(f"negative count {cell} in the row of {latency} us")
        if not cell.isdigit():
            raise state.fail(f"count {cell!r} in the row of {latency} us is not a number")
        counts.append(int(cell))
    if state.rows and len(counts) != len(state.rows[0]):
        raise state.fail(f"row of {latency} us has {len(counts)} columns, the rows before "
                         f"have {len(state.rows[0])}")
    if state.bins and latency <= state.bins[-1]:
        raise state.fail(f"row of {latency} us after the row of {state.bins[-1]} us: rows out "
                         "of order")
    state.bins.append(latency)
    state.rows.append(counts)


def _footer(state: _State, key: str, cells: list[str]) -> None:
    if not state.in_histogram:
        # Lines grep'd out of a histogram's footer: min/avg/max without the count they cover.
        raise state.fail(f"'# {key}' without the '# Histogram' section it ends (footer lines "
                         "cut out of a longer file?): no sample count, and without one no "
                         "budget can judge min, avg or max")
    if key in state.footer:
        raise state.fail(f"'# {key}' given twice")
    if not all(c.isdigit() for c in cells):
        raise state.fail(f"'# {key}' holds a value that is not a count: {' '.join(cells)!r}")
    state.footer[key] = [int(c) for c in cells]


def _histogram_threads(state: _State, view: RunView) -> None:
    if not state.rows:
        _footer_only_threads(state, view)
        return
    if state.around.lenient and (why := _rows_cut(state)):
        if any(k not in state.footer for k in _FULL_FOOTER):
            raise InputError(f"{why}, and the footer does not hold every total to fall back "
                             "on", path=state.path)
        view.notes.append(f"{state.path.name}: {why}: each thread's samples, min, avg and max "
                          "come from the footer; without every row there is no histogram and no "
                          "percentile")
        _footer_only_threads(state, view)
        return
    columns = np.array(state.rows, dtype=np.int64).reshape(len(state.rows), -1)
    mins = state.footer.get("Min Latencies")
    if mins is None:
        view.partial_reasons.append(
            f"{state.path.name}: the histogram footer is missing: the output was cut off")
        nthreads = columns.shape[1] - int(_has_sum_column(columns))
    else:
        nthreads = len(mins)
    if columns.shape[1] not in (nthreads, nthreads + 1) or (
            columns.shape[1] == nthreads + 1 and nthreads < 2):
        raise InputError(f"the histogram has {columns.shape[1]} columns but '# Min "
                         f"Latencies' lists {nthreads} threads", path=state.path)
    _check_footer(state, nthreads, columns.shape[1])
    for said, total in zip(state.footer.get("Total", []), columns.sum(axis=0), strict=False):
        if said != total:
            raise InputError(f"'# Total' says {said} but the rows of its column sum to {total}",
                             path=state.path)
    bins = np.array(state.bins, dtype=np.int64)
    # Every bin below the limit gets a row, zero or not; the last row is limit - 1.
    limit = int(bins[-1]) + 1 if len(bins) else 1
    for n in range(nthreads):
        view.threads[n] = _thread_from_histogram(state, n, bins, columns[:, n], limit)
    _fill_from_summaries(state, view)


def _rows_cut(state: _State) -> str | None:
    """Why a user's histogram lacks rows its footer counts, or None: a line eliding them, or
    a footer's minimum before the first row or maximum beyond the last without an overflow.
    (Rows that merely sum to another '# Total:' stay an error: nothing shows them cut.)"""
    if state.cut_at is not None:
        return f"rows elided at line {state.cut_at}"
    overflows = state.footer.get("Histogram Overflows", [])
    for n, low in enumerate(state.footer.get("Min Latencies", [])):
        if low < state.bins[0]:
            return (f"thread {n}: min {low} µs before the first row ({state.bins[0]} µs): rows "
                    "were cut")
    for n, high in enumerate(state.footer.get("Max Latencies", [])):
        if high > state.bins[-1] and n < len(overflows) and not overflows[n]:
            return (f"thread {n}: max {high} µs beyond the last row ({state.bins[-1]} µs) and "
                    "no overflow: rows were cut")
    return None


def _footer_only_threads(state: _State, view: RunView) -> None:
    """The footer without the rows: ``sed -n '/^#/p'`` of a -h output, as OSADL's mklatencyplot
    recipe and ROS 2's real-time benchmark results keep it. It states each thread's samples (in
    range plus overflows), min, avg and max; without the rows there is no histogram, and no
    percentile is made up."""
    missing = [key for key in _FULL_FOOTER if key not in state.footer]
    if missing:
        raise InputError(f"'# Histogram' without any row, and no footer-only histogram either: "
                         f"'# {missing[0]}' is missing", path=state.path)
    nthreads = len(state.footer["Min Latencies"])
    # -H adds a column for all threads (from 2 threads on) to some lines.
    _check_footer(state, nthreads, nthreads + 1 if nthreads >= 2 else nthreads)
    for n in range(nthreads):
        overflows = state.footer["Histogram Overflows"][n]
        _check_outliers(state, n, overflows)
        thread = ThreadView(thread=n, finality="final",
                            samples=state.footer["Total"][n] + overflows)
        _footer_stats(state, thread, n)
        view.threads[n] = thread
    _fill_from_summaries(state, view)


def _check_footer(state: _State, nthreads: int, columns: int) -> None:
    for key, values in state.footer.items():
        if len(values) not in (nthreads, columns):
            raise InputError(f"'# {key}' has {len(values)} values for {nthreads} threads",
                             path=state.path)
    strays = sorted(set(state.outliers) - set(range(nthreads)))
    if strays:
        raise InputError(f"overflow cycle numbers for thread {strays[0]} of {nthreads} threads",
                         path=state.path)


def _check_outliers(state: _State, n: int, overflows: int) -> list[int]:
    cycles = state.outliers.get(n, [])
    if len(cycles) > overflows:
        raise InputError(f"thread {n}: {len(cycles)} overflow cycle numbers for {overflows} "
                         "overflows", path=state.path)
    return cycles


def _footer_stats(state: _State, view: ThreadView, n: int) -> None:
    if not view.samples:
        return
    for attr, key in (("min_us", "Min Latencies"), ("avg_us", "Avg Latencies"),
                      ("max_us", "Max Latencies")):
        if key in state.footer:
            setattr(view, attr, float(state.footer[key][n]))
    # Printed as (long)(sum / cycles); the merge replaces it by the bins' exact mean when every
    # sample is in them.
    view.avg_truncated = "Avg Latencies" in state.footer


def _has_sum_column(columns: np.ndarray) -> bool:
    return columns.shape[1] >= 3 and bool(
        (columns[:, -1] == columns[:, :-1].sum(axis=1)).all())


def _thread_from_histogram(state: _State, n: int, bins: np.ndarray, counts: np.ndarray,
                           limit: int) -> ThreadView:
    keep = counts > 0
    hist = Sparse(bins[keep], counts[keep])
    overflows = state.footer.get("Histogram Overflows", [0] * (n + 1))[n]
    cycles = _check_outliers(state, n, overflows)
    finality: Finality = "final" if "Min Latencies" in state.footer else "snapshot"
    view = ThreadView(thread=n, finality=finality, samples=hist.total + overflows, hist=hist,
                      limit=limit, overflows=overflows, overflow_cycles=cycles)
    _footer_stats(state, view, n)
    return view


def _fill_from_summaries(state: _State, view: RunView) -> None:
    """Without -q the screen shows ``T:`` lines before the histogram: keep their tid, priority
    and interval, which the histogram does not carry."""
    unknown = set(state.summaries) - set(view.threads)
    if unknown:
        raise InputError(f"'T:' lines for thread(s) {sorted(unknown)} missing from the "
                         "histogram", path=state.path)
    for number, summary in state.summaries.items():
        thread = view.threads[number]
        thread.tid, thread.priority = summary.tid, summary.priority
        thread.interval_us = summary.interval_us
