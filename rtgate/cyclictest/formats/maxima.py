"""The block-maxima file (``blocks.txt``) that ``rtgate/cyclictest/blockmaxima.awk`` writes
while it reads cyclictest's -v stream.

Grammar, one record per line, numbers in decimal::

    rtgate-blocks 1 block_cycles N     header; "... N ns": cyclictest -N, numbers in ns
    b THREAD MAX                       a block's maximum, in order (the last block may be short)
    h THREAD LATENCY COUNT             histogram of the samples the reducer saw (in ns: each
                                       bin's lower edge, log-linear bins)
    n THREAD COUNT                     how many samples it saw
    g THREAD EXPECTED GOT              the first cycle number that skipped
    end                                the reducer finished: a file without it was cut

The file is read strictly: it is small (a line per second per thread) and written by rtgate's
own reducer, so anything else is an error naming the line. The file must also agree with itself
(its blocks, histogram and count describe the same samples). Whether it agrees with cyclictest's
own statistics of the run is ``rtgate.cyclictest.blockcheck``'s question.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rtgate.cyclictest.formats.view import ReducedStream, RunView, ThreadView
from rtgate.errors import InputError
from rtgate.result import NSEC_US, RESOLUTION_US
from rtgate.stats.histogram import Sparse, log_linear

HEADER = re.compile(r"^rtgate-blocks 1 block_cycles ([1-9]\d{0,17})( ns)?$")
_NUM = r"(0|[1-9]\d{0,17})"
RECORDS = {
    "b": re.compile(rf"^b {_NUM} {_NUM}$"),
    "h": re.compile(rf"^h {_NUM} {_NUM} ([1-9]\d{{0,17}})$"),
    "n": re.compile(rf"^n {_NUM} {_NUM}$"),
    "g": re.compile(rf"^g {_NUM} {_NUM} {_NUM}$"),
}
MAX_THREADS = 4096  # as the verbose reader: a garbage thread number must not size a table
MAX_BYTES = 256 << 20  # a line per block: a day at -i100 on 4096 threads is far below this


def looks_like_blocks(head: bytes) -> bool:
    return head.startswith(b"rtgate-blocks ")


@dataclass
class _MaximaThread:
    maxima: list[int] = field(default_factory=list)
    seen: dict[int, int] = field(default_factory=dict)
    count: int | None = None
    count_line: int = 0
    gap: tuple[int, int] | None = None


def read_blocks(path: Path) -> RunView:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=path) from exc
    if len(data) > MAX_BYTES:
        raise InputError(f"{len(data)} bytes: larger than any block-maxima file "
                         f"({MAX_BYTES} bytes at most)", path=path)
    try:
        lines = data.decode("ascii").split("\n")
    except UnicodeDecodeError as exc:
        raise InputError(f"not a block-maxima file: non-ASCII byte at offset {exc.start}",
                         path=path) from exc
    if lines[-1] != "":
        raise InputError(f"line {len(lines)}: cut off (no newline): the reducer did not finish",
                         path=path)
    lines.pop()

    def fail(line_no: int, problem: str) -> InputError:
        return InputError(f"line {line_no}: {problem}", path=path)

    head = HEADER.match(lines[0]) if lines else None
    if head is None:
        raise fail(1, "expected 'rtgate-blocks 1 block_cycles N', got "
                      f"{(lines or [''])[0][:60]!r}")
    block, nsecs = int(head[1]), head[2] is not None
    threads: dict[int, _MaximaThread] = {}
    ended = False
    for line_no, line in enumerate(lines[1:], start=2):
        if ended:
            raise fail(line_no, f"{line[:60]!r} after the 'end' line")
        if line == "end":
            ended = True
            continue
        pattern = RECORDS.get(line[:1])
        m = pattern.match(line) if pattern else None
        if m is None:
            raise fail(line_no, f"expected a 'b', 'h', 'n' or 'g' record or 'end', got "
                                f"{line[:60]!r}")
        number = int(m[1])
        if number >= MAX_THREADS:
            raise fail(line_no, f"thread {number}: cyclictest runs at most {MAX_THREADS} threads")
        t = threads.setdefault(number, _MaximaThread())
        kind = line[0]
        if t.count is not None and kind in "bh":
            raise fail(line_no, f"thread {number}: {kind!r} record after its count")
        if kind == "b":
            t.maxima.append(int(m[2]))
        elif kind == "h":
            latency = int(m[2])
            if latency in t.seen:
                raise fail(line_no, f"thread {number}: latency {latency} us counted twice")
            t.seen[latency] = int(m[3])
        elif kind == "n":
            if t.count is not None:
                raise fail(line_no, f"thread {number}: counted twice")
            t.count, t.count_line = int(m[2]), line_no
        elif t.gap is None:
            t.gap = (int(m[2]), int(m[3]))
        else:
            raise fail(line_no, f"thread {number}: a second 'g' record")
    if not ended:
        raise fail(len(lines) + 1, "no 'end' line: the reducer was stopped before it finished")
    view = RunView(path=path, format="blocks", sha256=hashlib.sha256(data).hexdigest(),
                   resolution_us=NSEC_US if nsecs else RESOLUTION_US)
    for number, t in sorted(threads.items()):
        view.threads[number] = _thread_view(number, t, block, nsecs, fail)
    if not view.threads:
        raise fail(len(lines) + 1, "no thread: the reducer saw no sample")
    return view


def _thread_view(number: int, t: _MaximaThread, block: int, nsecs: bool,
                 fail: Callable[[int, str], InputError]) -> ThreadView:
    if t.count is None:
        raise fail(len(t.maxima) + 1, f"thread {number}: blocks without an 'n' record")
    unit = "ns" if nsecs else "us"
    edges = np.array(sorted(t.seen), dtype=np.int64)
    seen = Sparse(edges, np.array([t.seen[e] for e in edges.tolist()], dtype=np.int64),
                  1 if nsecs else 1000)
    # Each maximum's bin: itself in µs, its log-linear bin's lower edge in ns.
    binned = log_linear(np.array(t.maxima, dtype=np.int64)).tolist() if nsecs else t.maxima
    # The reducer's three records describe the same samples, or the file was tampered with.
    problems = []
    if nsecs and (off := edges[log_linear(edges) != edges]).size:
        problems.append(f"latencies {off[:3].tolist()} ns are no bin's lower edge")
    if seen.total != t.count:
        problems.append(f"its histogram holds {seen.total} samples")
    if len(t.maxima) != -(-t.count // block):
        problems.append(f"{len(t.maxima)} blocks of {block}")
    top = int(edges[-1]) if seen.total else None
    if t.maxima and max(binned) != top:
        problems.append(f"the largest block maximum is {max(t.maxima)} {unit}, the histogram's "
                        f"highest bin {top} {unit}")
    if missing := sorted(set(binned) - set(t.seen)):
        problems.append(f"block maxima {missing[:3]} {unit} are not in its histogram")
    if problems:
        raise fail(t.count_line, f"thread {number}: {t.count} samples, but "
                                 + "; ".join(problems))
    view = ThreadView(thread=number, finality="snapshot", samples=t.count)
    if seen.total:
        # The largest maximum is exact; the lowest bin's edge is the minimum only where bins
        # are 1 ns wide (below 2048 ns), else just under it and left to cyclictest's own.
        if not nsecs or edges[0] < 2048:
            view.min_us = float(seen.us[0])
        view.max_us = max(t.maxima) / 1000 if nsecs else float(top or 0)
    maxima: list[float] = [m / 1000 for m in t.maxima] if nsecs else list(t.maxima)
    if nsecs:
        view.resolution_us = NSEC_US
    view.stream = ReducedStream(block_cycles=block, maxima=maxima, seen=seen, gap=t.gap)
    return view
