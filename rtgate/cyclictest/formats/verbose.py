"""Verbose output (``-v``): one ``thread: cycle: latency`` line per sample.

The paper's method yields ~10^8 such lines, so the file is read in large binary blocks and each
block is decoded by numpy in one go. cyclictest prints every value line with ``%8d:%8lu:%8ld``,
so all lines of a block normally have the same width: the block is validated with a few counts
over its bytes and each wanted field is decoded as one 64-bit word per line. Blocks that do not
fit that shape (the header, wider numbers, a bad line) fall back to a line-by-line reader,
which is also the one that names the line of an error. Each thread's 1 µs histogram is exact:
no upper limit, no overflows.

Each thread's samples are also reduced, in the order printed, to the maxima of blocks of one
second's cycles, as ``blockmaxima.awk`` reduces the stream behind ``rtgate bench``: the log's
view carries them as the reducer's (``ReducedStream``), and the merge checks them against the
run's histogram with the same ``blockcheck`` as a bench run's. The block is one second at the
thread's interval, which the ``Thread N Interval: P`` header lines give: cyclictest prints P
after adding the distance -d to the interval unless it keeps a histogram, so thread i's interval
is P_i - (P_1 - P_0) when there are two threads or more. With one thread (P is the interval or
the interval plus an unknown -d) or no header, the block size must be given.
"""

from __future__ import annotations

import hashlib
import re
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt

from rtgate.cyclictest.command import one_second_of_cycles
from rtgate.cyclictest.formats.blocks import BLOCK_BYTES, Progress, line_blocks, no_progress
from rtgate.cyclictest.formats.text import read_text, summary_line
from rtgate.cyclictest.formats.view import (
    MESSAGE,
    ReducedStream,
    RunView,
    Surroundings,
    ThreadView,
    from_nsecs,
    says_nsecs,
)
from rtgate.errors import InputError
from rtgate.pastedtext import note, quoted
from rtgate.result import NSEC_US
from rtgate.stats.histogram import Ints, Sparse, mean

# Latencies below this many µs are counted in a dense array (8 MiB per thread).
DENSE_US = 1 << 20

_VALUE = re.compile(rb"^ *(\d+): *(\d+): *(\d+)$")
_LATENCY_WIDTH = 8  # cyclictest: printf("%8d:%8lu:%8ld\n", ...)
_INTERVAL = re.compile(rb"^Thread (\d+) Interval: (\d+)$")
_USING_CPU = re.compile(rb"^Thread (\d+) using cpu (\d+)\.$")
# Printed before the samples; they carry nothing the result needs ("Using N cpus." with -a).
_IGNORED = re.compile(rb"^(Max CPUs = \d+|Online CPUs = \d+|Using \d+ cpus\.)$")
_DIGIT0, _SPACE, _COLON, _NEWLINE = b"0"[0], b" "[0], b":"[0], b"\n"[0]
# Without "Thread N Interval" header lines, thread numbers are still bounded: a garbage number
# must not size a per-thread table.
MAX_THREADS = 4096


def looks_verbose(head: bytes) -> bool:
    lines = head.splitlines()[:-1] or head.splitlines()
    return any(_VALUE.match(line) or _INTERVAL.match(line) for line in lines)


@dataclass
class _Blocks:
    """The maxima of consecutive blocks of ``cycles`` samples, fed in the order printed (the last
    block may be short): blockmaxima.awk's reduction, a block's worth of numpy at a time."""

    cycles: int
    done: list[Ints] = field(default_factory=list)
    count: int = 0  # samples in the unfinished block
    top: int = 0  # its maximum so far

    def add(self, latencies: Ints) -> None:
        taken = 0
        if self.count and len(latencies):
            taken = min(self.cycles - self.count, len(latencies))
            self.top = max(self.top, int(latencies[:taken].max()))
            self.count += taken
            if self.count == self.cycles:
                self.done.append(np.array([self.top], dtype=np.int64))
                self.count = 0
        rest = latencies[taken:]
        whole = len(rest) // self.cycles * self.cycles
        if whole:
            self.done.append(rest[:whole].reshape(-1, self.cycles).max(axis=1))
        if whole < len(rest):
            self.count, self.top = len(rest) - whole, int(rest[whole:].max())

    def maxima(self) -> list[int]:
        out = [int(v) for block in self.done for v in block]
        return [*out, self.top] if self.count else out


@dataclass
class _VerboseThread:
    """Dense counts for the common range; the rare huge latencies are kept sparse."""

    dense: Ints = field(default_factory=lambda: np.zeros(DENSE_US, dtype=np.int64))
    tail: list[Sparse] = field(default_factory=list)
    cpu: int | None = None
    sampled: bool = False
    blocks: _Blocks | None = None  # None until the first sample, or when the block is unknown
    gap: tuple[int, int] | None = None
    """The first cycle number that skipped: (expected, printed), as the reducer records it."""

    def add(self, latencies: Ints) -> None:
        if self.blocks is not None:
            self.blocks.add(latencies)
        big = latencies >= DENSE_US
        small = latencies[~big] if big.any() else latencies
        binned = np.bincount(small)
        self.dense[: len(binned)] += binned
        if small is latencies:
            return
        values, counts = np.unique(latencies[big], return_counts=True)
        self.tail.append(Sparse(values, counts.astype(np.int64)))

    def histogram(self) -> Sparse:
        return Sparse.merge([Sparse.from_dense(self.dense), *self.tail])


class _Hasher:
    """SHA-256 of the blocks on a second thread: hashlib releases the GIL, so hashing a
    500 MB log overlaps with decoding it instead of adding a second pass."""

    def __init__(self) -> None:
        self._sha = hashlib.sha256()
        self._pool = ThreadPoolExecutor(max_workers=1)
        self._last: Future[None] | None = None

    def __enter__(self) -> _Hasher:
        return self

    def __exit__(self, *exc: object) -> None:
        self._pool.shutdown(wait=True)

    def update(self, chunk: bytes) -> None:
        self._wait()  # keep the order of the blocks
        self._last = self._pool.submit(self._sha.update, chunk)

    def hexdigest(self) -> str:
        self._wait()
        return self._sha.hexdigest()

    def _wait(self) -> None:
        if self._last is not None:
            self._last.result()


class _HistogramFollows(Exception):
    def __init__(self, offset: int, lines_before: int) -> None:
        super().__init__()
        self.offset, self.lines_before = offset, lines_before


class _Reader:
    def __init__(self, path: Path, *, lenient: bool = False,
                 block_cycles: int | None = None) -> None:
        self.path = path
        self.threads: dict[int, _VerboseThread] = {}
        self.declared: int | None = None  # from the "Thread N Interval" header lines
        self.printed_interval: dict[int, int] = {}  # from the same lines: see the module's doc
        self.block_cycles = block_cycles  # given by the user: every thread's block
        self.line_no = 0
        self.offset = 0  # file offset of the next byte to decode
        self.last_cycle: dict[int, int] = {}
        self.missing: dict[int, int] = {}  # samples lost in gaps of the cycle numbers
        self.notes: list[str] = []
        # -v with -q: each thread's 'T:' line, printed once at exit after the samples.
        self.summaries: dict[int, ThreadView] = {}
        self.units: set[float | None] = set()
        self.given_unit: float | None = None  # by the run's other files
        # A user's file: lines around the output are notes (formats.view).
        self.around = Surroundings(path, self.notes, lenient=lenient)

    def fail(self, line_no: int, problem: str) -> InputError:
        return InputError(f"line {line_no}: {problem}", path=self.path)

    def thread(self, number: int, line_no: int) -> _VerboseThread:
        if self.declared is not None and number >= self.declared:
            raise self.fail(line_no, f"thread {number} but the header declares only "
                                     f"{self.declared} threads (0..{self.declared - 1})")
        if number >= MAX_THREADS:
            raise self.fail(line_no, f"thread {number}: cyclictest runs at most "
                                     f"{MAX_THREADS} threads")
        if number not in self.threads:
            self.threads[number] = _VerboseThread()
        return self.threads[number]

    def samples(self, number: int, latencies: Ints) -> None:
        """A thread's next samples in printed order (the thread is known to ``thread()``)."""
        t = self.threads[number]
        if not t.sampled:
            # The header lines are all read before the first sample.
            t.sampled = True
            cycles = self.block_cycles or self._one_second(number)
            if cycles is None:
                self.notes.append(
                    f"{self.path.name}: thread {number}: no block maxima: the log does not tell "
                    "its interval (one thread, or no 'Thread N Interval' line: cyclictest prints "
                    "the interval plus -d); give the block size (rtgate parse --block-cycles)")
            else:
                t.blocks = _Blocks(cycles)
        t.add(latencies)

    def _one_second(self, number: int) -> int | None:
        printed = self.printed_interval
        if len(printed) < 2 or sorted(printed) != list(range(len(printed))):
            return None
        steps = {printed[i + 1] - printed[i] for i in range(len(printed) - 1)}
        distance = steps.pop()
        if steps or distance < 0 or number not in printed or printed[number] - distance < 1:
            return None
        return one_second_of_cycles(printed[number] - distance)

    def _first_gap(self, number: int, cycles: Ints) -> None:
        """Where this thread's cycle numbers first skip, if in ``cycles`` (its next ones)."""
        t = self.threads[number]
        if t.gap is not None:
            return
        expected = self.last_cycle.get(number, -1) + 1
        if int(cycles[-1]) - expected + 1 == len(cycles):
            return  # strictly increasing (checked) and none skipped
        skipped = np.flatnonzero(cycles != np.arange(expected, expected + len(cycles)))
        if len(skipped):
            t.gap = (expected + int(skipped[0]), int(cycles[skipped[0]]))

    def block(self, data: bytes) -> None:
        """Decode ``data``, which holds whole lines only."""
        while data:
            rows = _fixed_width(data)
            if rows is not None and self._take_rows(rows, data):
                return
            data = self._slow(data)

    def _take_rows(self, rows: Ints, data: bytes) -> bool:
        numbers, cycles, latencies = rows[:, 0], rows[:, 1], rows[:, 2]
        if int(numbers.max()) >= (self.declared or MAX_THREADS):
            return False  # the line-by-line reader names the offending line
        present = [int(n) for n in np.flatnonzero(np.bincount(numbers))]
        masks = {n: numbers == n for n in present} if len(present) > 1 else {}
        per_thread = {n: cycles[masks[n]] if masks else cycles for n in present}
        for n, cyc in per_thread.items():
            if cyc[0] <= self.last_cycle.get(n, -1) or (len(cyc) > 1 and
                                                        (np.diff(cyc) <= 0).any()):
                return False  # cycle numbers going back: the line reader names the line
        for n, cyc in per_thread.items():
            self.thread(n, self.line_no)
            self._first_gap(n, cyc)
            self._count_gap(n, int(cyc[-1]), len(cyc))
            self.samples(n, latencies[masks[n]] if masks else latencies)
        self.line_no += len(rows)
        self.offset += len(data)
        self.around.seen_output = True
        return True

    def _count_gap(self, number: int, last: int, taken: int) -> None:
        """``taken`` samples up to cycle ``last``: any cycle number skipped is a lost sample."""
        lost = last - self.last_cycle.get(number, -1) - taken
        if lost:
            self.missing[number] = self.missing.get(number, 0) + lost
        self.last_cycle[number] = last

    def _slow(self, data: bytes) -> bytes:
        """Read lines one by one: header lines up to the first sample (then hand the rest back
        to the fast decoder), or a whole block the fast decoder refused."""
        in_header = not _VALUE.match(data[: data.index(b"\n")])
        pending: dict[int, list[int]] = {}
        pos = 0
        while pos < len(data):
            nl = data.index(b"\n", pos)
            line = data[pos:nl].rstrip(b"\r")  # a log that went through a CRLF editor
            if line == b"# Histogram":
                # -v with -h: the histogram section follows the samples (text grammar).
                self._flush(pending)
                raise _HistogramFollows(self.offset + pos, self.line_no)
            pos = nl + 1
            self.line_no += 1
            if m := _VALUE.match(line):
                if self.around.prompt_line is not None:
                    raise self.fail(self.line_no, f"a sample after the shell prompt on line "
                                                  f"{self.around.prompt_line}: not the log of "
                                                  "one run")
                number, cycle = int(m[1]), int(m[2])
                self.thread(number, self.line_no)  # names this line if the number is bad
                before = self.last_cycle.get(number, -1)
                if cycle <= before:
                    raise self.fail(self.line_no, f"thread {number} cycle {cycle} after cycle "
                                                  f"{before}: not the log of one run")
                self._first_gap(number, np.array([cycle]))
                self._count_gap(number, cycle, 1)
                self.around.seen_output = True
                pending.setdefault(number, []).append(int(m[3]))
            else:
                self._header(line)
                if in_header and _VALUE.match(data[pos : data.find(b"\n", pos)]):
                    break
        self._flush(pending)
        self.offset += pos
        return data[pos:]

    def _flush(self, pending: dict[int, list[int]]) -> None:
        for number, latencies in pending.items():
            self.samples(number, np.array(latencies, dtype=np.int64))

    def _header(self, line: bytes) -> None:
        if m := _INTERVAL.match(line):
            # The printed interval is not the thread's: cyclictest prints it after adding the
            # per-thread distance (-d) when no histogram is kept, so it is not recorded; the
            # block size is worked out from all of them (the module's doc).
            number = int(m[1])
            self.declared = max(self.declared or 0, number + 1)
            self.thread(number, self.line_no)
            self.printed_interval[number] = int(m[2])
        elif m := _USING_CPU.match(line):
            # With -a it comes before the thread's Interval line: it declares the thread too.
            number = int(m[1])
            if number < MAX_THREADS:
                self.declared = max(self.declared or 0, number + 1)
            self.thread(number, self.line_no).cpu = int(m[2])
        elif (line.startswith(b"T:")
              and (found := summary_line(line.decode("ascii", "backslashreplace")))):
            view, unit = found
            self.thread(view.thread, self.line_no)
            self.summaries[view.thread] = view
            self.units.add(unit)
        elif MESSAGE.match(text := line.decode("ascii", "backslashreplace")):
            self.notes.append(note(self.path, self.line_no, "cyclictest's message, skipped", text))
        elif not _IGNORED.match(line):
            problem = self.fail(self.line_no,
                                f"expected 'thread: cycle: latency', got {quoted(text)}")
            self.around.take(text, self.line_no, problem)
            return
        self.around.seen_output = True


def _fixed_width(data: bytes) -> Ints | None:
    """Decode a block of equal-width ``%Nd:%Nd:%Nd`` lines into ``(thread, cycle, latency)``.

    Returns None when the block has any other shape; the line reader then takes over. The checks
    are counts over the flat bytes; the fields are then decoded eight ASCII digits at a time as
    one 64-bit word each (SWAR), which needs no per-character work at all.
    """
    width = data.find(b"\n") + 1
    # At least 8 bytes per line, so that every field's 64-bit word lies inside its line.
    if width < 9 or len(data) % width:
        return None
    c1 = data.find(b":")
    c2 = data.find(b":", c1 + 1)
    if not (0 < c1 <= 8 and 0 < c2 - c1 - 1 <= 16 and 0 < width - 2 - c2 <= 8):
        return None
    flat = np.frombuffer(data, dtype=np.uint8)
    n = len(flat) // width
    digit = (flat - _DIGIT0) < 10  # uint8 wrap-around: one compare tells digits apart
    space = flat == _SPACE
    # Only digits, spaces, two colons and a newline per line ...
    if (np.count_nonzero(flat == _COLON) != 2 * n or np.count_nonzero(flat == _NEWLINE) != n
            or np.count_nonzero(digit) + np.count_nonzero(space) != len(flat) - 3 * n):
        return None
    # ... in the same columns on every line, each field right-aligned: it ends in a digit and
    # no space follows a digit anywhere.
    grid = flat.reshape(n, width)
    if not ((grid[:, c1] == _COLON).all() and (grid[:, c2] == _COLON).all()
            and (grid[:, -1] == _NEWLINE).all()):
        return None
    if (digit[:-1] & space[1:]).any():
        return None
    digits = digit.reshape(n, width)
    if not (digits[:, c1 - 1].all() and digits[:, c2 - 1].all() and digits[:, -2].all()):
        return None
    cycle = [(c1 + 1, c2)] if c2 - c1 - 1 <= 8 else [(c1 + 1, c2 - 8), (c2 - 8, c2)]
    words = _swar(grid, [(0, c1), *cycle, (c2 + 1, width - 1)])
    if len(cycle) == 1:
        return words
    # Cycle numbers past 10^8 span two words: high digits, then the low eight.
    return np.stack([words[:, 0], words[:, 1] * 10**8 + words[:, 2], words[:, 3]], axis=1)


def _swar(grid: npt.NDArray[np.uint8], fields: list[tuple[int, int]]) -> Ints:
    """Decode right-aligned fields ``grid[:, lo:hi]`` of at most 8 characters, all at once.

    Each field is read as the 64-bit word of the 8 bytes ending at its end (an unaligned strided
    view, no per-byte copy); bytes of the word before a shorter field are forced to "0".
    """
    n, width = grid.shape
    words = np.empty((n, len(fields)), dtype=np.uint64)
    keep = np.empty(len(fields), dtype=np.uint64)
    for j, (lo, hi) in enumerate(fields):
        foreign = 8 - (hi - lo)  # leading bytes that are not part of the field
        if hi >= 8:
            words[:, j] = np.ndarray((n,), dtype="<u8", buffer=grid, offset=hi - 8,
                                     strides=(width,))
        else:  # a field ending in the first 8 bytes: read those, shift it to the word's end
            words[:, j] = np.ndarray((n,), dtype="<u8", buffer=grid, offset=0,
                                     strides=(width,)) << np.uint64(8 * (8 - hi))
        keep[j] = ((1 << 64) - 1) ^ ((1 << (8 * foreign)) - 1)
    if (keep != np.uint64((1 << 64) - 1)).any():
        words &= keep
        words |= np.uint64(0x3030303030303030) & ~keep
    # Spaces become "0" (0x20 | 0x10 = 0x30), digits stay; then ASCII -> digit values. The first
    # character sits in the lowest byte, so pairs, quads and halves fold from there. In place:
    # these arrays are a block's worth of words, allocating each step would double the time.
    words |= np.uint64(0x1010101010101010)
    words -= np.uint64(0x3030303030303030)
    for shift, scale, mask in ((8, 10, 0x00FF00FF00FF00FF), (16, 100, 0x0000FFFF0000FFFF),
                               (32, 10000, 0x00000000FFFFFFFF)):
        high = words >> np.uint64(shift)
        words *= np.uint64(scale)
        words += high
        words &= np.uint64(mask)
    return words.view(np.int64)  # below 10^8: the same bits


def read_verbose(path: Path, progress: Progress = no_progress, *,
                 lenient: bool = False, block_cycles: int | None = None,
                 unit: float | None = None) -> list[RunView]:
    """The samples' view, plus the histogram's when ``-v`` ran with ``-h`` (``lenient``: a
    user's file may end in a shell prompt after it). ``block_cycles``: the block of the block
    maxima; None: one second at each thread's interval, where the header tells it. ``unit``:
    what the run's other files say of it, for a log that does not say it itself."""
    reader = _Reader(path, lenient=lenient, block_cycles=block_cycles)
    reader.given_unit = unit
    histogram: RunView | None = None
    cut_line: int | None = None
    with path.open("rb") as fh, _Hasher() as sha:
        blocks = line_blocks(fh, path, sha, BLOCK_BYTES, progress)
        for block in blocks:
            if not block.endswith(b"\n"):
                if not _whole_sample(block):
                    cut_line = reader.line_no + 1
                    break
                # A snippet copied without its final newline: the sample is whole.
                reader.notes.append(f"{path.name} line {reader.line_no + 1}: the last line "
                                    "lacks its newline; its latency fills cyclictest's "
                                    "padded field, so it is whole and read")
                block += b"\n"
            try:
                reader.block(block)
            except _HistogramFollows as found:
                for _ in blocks:
                    pass  # hash the rest; the text reader reads the histogram section
                histogram = read_text(path, offset=found.offset, lines_before=found.lines_before,
                                      lenient=lenient, foreign=reader.around.foreign)
        digest = sha.hexdigest()
    view = RunView(path=path, format="verbose", sha256=digest, notes=reader.notes,
                   typed_cmdline=reader.around.typed_cmdline)
    if cut_line is not None:
        # A run killed while writing leaves half a line: the value is unknown, the rest holds.
        view.partial_reasons.append(
            f"{path.name}: last line {cut_line} is cut off; it was dropped")
    for number, lost in sorted(reader.missing.items()):
        # cyclictest's buffer of unprinted values overran: the lost ones may hold the maximum.
        view.partial_reasons.append(
            f"{path.name}: thread {number}: {lost} samples missing (cycle numbers skip)")
    if not any(t.dense.any() or t.tail for t in reader.threads.values()):
        raise InputError("verbose output without any 'thread: cycle: latency' line", path=path)
    if reader.around.foreign is not None and view.partial_reasons:
        # Lines around output that is not whole: not a file to guess about.
        raise reader.around.foreign
    view.resolution_us = _unit(reader)
    if view.resolution_us is None and min(
            int(t.histogram().values[0]) for t in reader.threads.values()
            if t.dense.any() or t.tail) >= 1000:
        # A -N log without its 'T:' lines reads as µs 1000 times too large.
        view.partial_reasons.append(
            f"{path.name}: every latency is 1000 or more: a log of cyclictest -N (ns) cannot "
            "be told from one in µs without its 'T:' lines (-q) or the command line")
    for number, t in sorted(reader.threads.items()):
        view.threads[number] = _thread_view(number, t, view.resolution_us == NSEC_US)
    views = [view]
    if reader.summaries:
        views.append(_summaries(reader, view))
    return views if histogram is None else [*views, histogram]


def _unit(reader: _Reader) -> float | None:
    """What the 'T:' lines' widths say of the unit, else the run's other files, else -N in the
    typed command line."""
    said = reader.units - {None}
    if len(said) > 1:
        raise InputError("'T:' lines printed both in µs and in ns (-N): not the output of one "
                         "run", path=reader.path)
    if said:
        return said.pop()
    if reader.given_unit is not None:
        return reader.given_unit
    return NSEC_US if says_nsecs(reader.around.typed_cmdline) else None


def _summaries(reader: _Reader, samples: RunView) -> RunView:
    """The 'T:' lines printed at exit (-q): the run's final statistics, a view of their own."""
    view = RunView(path=reader.path, format="summary", sha256=samples.sha256,
                   resolution_us=samples.resolution_us)
    for number in samples.threads:
        if number not in reader.summaries:
            raise InputError(f"thread {number} has samples but no 'T:' line at exit",
                             path=reader.path)
    for number, thread in sorted(reader.summaries.items()):
        if samples.resolution_us == NSEC_US:
            from_nsecs(thread)
        view.threads[number] = thread
    return view


def _whole_sample(line: bytes) -> bool:
    """A last line without its newline that cannot have been cut: cyclictest prints the latency
    as ``%8ld``, so a padded field of 8 characters holds every digit (a cut one is shorter,
    an unpadded one may have lost digits)."""
    field = line.rsplit(b":", 1)[-1]
    return bool(_VALUE.match(line)) and len(field) == _LATENCY_WIDTH and field[:1] == b" "


def _thread_view(number: int, t: _VerboseThread, nsecs: bool) -> ThreadView:
    """The thread's samples; printed in ns (``nsecs``) they keep their digits in min, avg, max
    and the block maxima, and fall into log-linear bins (``Sparse.from_ns``)."""
    hist = t.histogram()
    # Snapshot: cyclictest exits without printing the samples still in its ring buffer.
    view = ThreadView(thread=number, finality="snapshot", cpu=t.cpu, samples=hist.total)
    if not hist.total:
        return view
    view.min_us, view.max_us = float(hist.values[0]), float(hist.values[-1])
    view.avg_us = mean(hist)
    maxima = t.blocks.maxima() if t.blocks is not None else None
    if nsecs:
        from_nsecs(view)
        hist = Sparse.from_ns(hist.values, hist.counts)
        maxima = None if maxima is None else [m / 1000 for m in maxima]
    view.hist = hist
    if t.blocks is not None and maxima is not None:
        view.stream = ReducedStream(block_cycles=t.blocks.cycles, maxima=maxima, seen=hist,
                                    gap=t.gap)
    return view
