"""Block maxima from the reducer, checked against cyclictest's own histogram of the same run.

cyclictest prints -v samples from a ring of 16384 values per thread that its (non-real-time)
main thread empties every 10 ms. Two things keep the stream from being the whole run:

* At exit it never prints what is still in the ring: the last few milliseconds of samples are
  in the -h histogram and the JSON but not in the stream. They are the histogram minus what the
  reducer saw, and they are the run's last cycles, known as a group only: they join the last
  block (its maximum becomes the larger of the two). When they cross a block boundary, that
  last block is longer than ``block_cycles`` (by less than one block): splitting them would
  need their order. One of them beyond the histogram's limit (the run ended in a stall) is
  known only when it is the run's maximum: cyclictest's maximum covers every cycle, so when no
  printed sample reached it, the unprinted group holds it. Otherwise its length is unknown
  (between the limit and the maximum) and the blocks stop before the last block it spoils: a
  note says so, the run's own statistics (maximum, histogram) still count it, and a tail
  estimate that needs every block (``pwcet_us``) is incomplete. More than a block's worth is
  not an exit but a stream cut short: partial.
* A main thread starved for longer than the ring holds prints overwritten slots, later samples
  in place of the lost ones, with consecutive cycle numbers: silent in the stream itself. It
  shows as latencies the reducer saw more often than the histogram counted them, or as a
  largest block maximum below the histogram's maximum. A lost sample whose bin the unprinted
  last samples also fill cannot be told from them: it joins the last block.

Blocks that do not account for every cycle (but for a stall the run ended in), or whose largest
maximum is not the histogram's maximum, make the run partial, with the thread and the numbers in
the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rtgate.cyclictest.formats.view import ReducedStream, ThreadView
from rtgate.result import RESOLUTION_US, BlockMaxima
from rtgate.stats.histogram import Sparse, log_linear


@dataclass
class Reconciled:
    blocks: BlockMaxima
    reasons: list[str] = field(default_factory=list)
    """Why the blocks are not the run's: the run is partial."""
    notes: list[str] = field(default_factory=list)
    whole: Sparse | None = None
    """The run's histogram without a limit, when cyclictest's -N histogram overflowed (its limit
    is cut to 1 ms for memory) and the -v stream printed every overflow: what it printed plus
    what it did not, all below the limit."""


def reconcile(t: ThreadView, stream: ReducedStream) -> Reconciled:
    """The blocks of thread ``t`` (its final statistics merged from the other files), and why
    they are not the whole run, if they are not."""
    block, maxima = stream.block_cycles, list(stream.maxima)
    seen = stream.seen.total
    name = f"thread {t.thread}"
    reasons: list[str] = []
    if stream.gap is not None:
        reasons.append(f"{name}: the -v stream skipped from cycle {stream.gap[0]} to "
                       f"{stream.gap[1]}: samples lost")
    if t.hist is None or t.samples is None:
        reasons.append(f"{name}: no histogram of the run to check its block maxima against "
                       "(give cyclictest's --json or -h output with the blocks file)")
        return Reconciled(BlockMaxima(block_cycles=block, cycles=seen, maxima_us=maxima), reasons)
    total = t.samples
    below, above = (_split(stream.seen, t.hist, t.limit) if t.limit is not None
                    else (stream.seen, 0))
    unprinted = t.hist.minus(below)
    if unprinted is None or above > t.overflows:
        # Where, in numbers: a misread bin (CI's ns bin across the limit) once passed for this.
        where = (_excess(below, t.hist) if unprinted is None else
                 f"{above} printed at or above the {t.limit} us limit, {t.overflows} overflows "
                 "counted")
        reasons.append(f"{name}: the -v stream holds latencies that cyclictest's histogram does "
                       f"not count ({seen} of {total} samples seen; {where}), as when its ring "
                       "of 16384 samples overran while its main thread was starved and later "
                       "samples were printed in place of lost ones")
        return Reconciled(BlockMaxima(block_cycles=block, cycles=seen, maxima_us=maxima), reasons)
    tail, tail_overflows = total - seen, t.overflows - above
    # Unprinted samples in no bin: the run's only histogram is the -v log's own (a -v log given
    # with the run's --json but no -h), so like overflows their latencies are unknown.
    unbinned = tail - unprinted.total - tail_overflows
    cycles = seen
    room = -seen % block  # left in the last block; a full last block leaves none
    notes: list[str] = []
    last = (_unprinted_max(t, unprinted, maxima, tail_overflows + unbinned)
            if 0 < tail <= block else None)
    if last is not None:
        # The samples cyclictest measured but never printed: the run's last cycles.
        if room:
            maxima[-1] = max(maxima[-1], last)
        else:
            maxima.append(last)
        cycles = total
    elif 0 < tail <= block:
        # A stall the run ended in, of unknown length: the block it ends is left out, never
        # given a made-up maximum.
        if room:
            maxima.pop()
            cycles = seen - (block - room)
        bound = "" if t.max_us is None else f" up to cyclictest's maximum {t.max_us:.10g} us"
        if unbinned:
            notes.append(f"{name}: {tail} cycles measured but never printed, in no histogram "
                         f"(give the run's -h output), latency unknown{bound}: the block maxima "
                         f"stop at cycle {cycles} of {total}")
        else:
            notes.append(f"{name}: the run ended in a stall: {tail} cycles measured but never "
                         f"printed, {tail_overflows} of them at or above the histogram's "
                         f"{t.limit} us limit, length unknown{bound}: the block maxima stop at "
                         f"cycle {cycles} of {total}")
    elif tail > 0:
        reasons.append(f"{name}: the block maxima account for {seen} of {total} cycles: the "
                       f"other {tail} never reached the -v stream, more than a block ({block} "
                       "cycles)")
    top = max(maxima) if maxima else None
    run_max = t.max_us
    # Without the stall's block the largest maximum may be below cyclictest's: that is no loss.
    if run_max is not None and top is not None and (top > run_max if notes
                                                    else top != run_max):
        reasons.append(f"{name}: the largest block maximum is {top} us, cyclictest's maximum "
                       f"{t.max_us:.10g} us: samples of the -v stream were lost")
    whole = (Sparse.merge([stream.seen, unprinted])
             if unprinted.unit_ns == 1 and above and not (tail_overflows or unbinned or reasons)
             else None)
    return Reconciled(BlockMaxima(block_cycles=block, cycles=cycles, maxima_us=maxima),
                      reasons, notes, whole)


def _split(seen: Sparse, hist: Sparse, limit_us: int) -> tuple[Sparse, int]:
    """The stream's samples below the histogram's limit, and how many sit at or above it.

    A log-linear ns bin can straddle the limit (cyclictest -N -h1000000: 1 ms is no bin edge),
    so its stream samples may lie on either side: as many as the histogram counts in that bin
    are taken to be below, the rest at or above, the one reading that finds no loss where none
    need be (CI: every -N QEMU run with a sample in 999.936-1000.448 µs was judged partial)."""
    below, above = seen.below(limit_us)
    limit_ns = limit_us * 1000
    edge = int(log_linear(np.array([limit_ns], np.int64))[0])
    if seen.unit_ns != 1 or edge == limit_ns:
        return below, above
    extra = _count(below, edge) - _count(hist, edge)
    if extra <= 0:
        return below, above
    moved = below.minus(Sparse(np.array([edge], np.int64), np.array([extra], np.int64), 1))
    assert moved is not None  # extra is at most the bin's count
    return moved, above + extra


def _excess(seen: Sparse, hist: Sparse) -> str:
    """The bins where the stream printed more samples than the histogram counts, in words."""
    values = np.union1d(seen.values, hist.values)
    printed, counted = (np.zeros(len(values), np.int64) for _ in range(2))
    printed[np.searchsorted(values, seen.values)] = seen.counts
    counted[np.searchsorted(values, hist.values)] = hist.counts
    over = np.flatnonzero(printed > counted)
    first = int(over[0])
    edge = Sparse(values[first:first + 1], counted[:1], seen.unit_ns).us[0]
    return (f"{len(over)} bin(s) over, the first at {edge:.10g} us: {printed[first]} printed, "
            f"{counted[first]} counted")


def _count(hist: Sparse, value: int) -> int:
    at = np.searchsorted(hist.values, value)
    return int(hist.counts[at]) if at < len(hist.values) and hist.values[at] == value else 0


def _unprinted_max(t: ThreadView, unprinted: Sparse, maxima: list[float],
                   overflows: int) -> float | None:
    """The largest of the run's unprinted last samples, when it is known: cyclictest's maximum
    when no printed sample reached it, else their highest bin (in ns bins its lower edge, within
    the bins' relative error below the sample)."""
    run_max = t.max_us
    if run_max is not None and t.resolution_us == RESOLUTION_US:
        # Whole µs stay ints in the result; a fractional maximum is no µs block's.
        run_max = int(run_max) if run_max.is_integer() else None
    holds_max = run_max is not None and (not maxima or max(maxima) < run_max)
    if overflows:
        return run_max if holds_max else None
    if unprinted.unit_ns == 1:
        return run_max if holds_max else float(unprinted.us[-1])
    return int(unprinted.values[-1])
