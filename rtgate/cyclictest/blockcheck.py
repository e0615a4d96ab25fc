"""Block maxima from the reducer, checked against cyclictest's own histogram of the same run.

cyclictest prints -v samples from a ring of 16384 values per thread that its (non-real-time)
main thread empties every 10 ms. Two things keep the stream from being the whole run:

* At exit it never prints what is still in the ring: the last few milliseconds of samples are
  in the -h histogram and the JSON but not in the stream. They are the histogram minus what the
  reducer saw, and they are the run's last cycles, known as a group only: they join the last
  block (its maximum becomes the larger of the two). When they cross a block boundary, that
  last block is longer than ``block_cycles`` (by less than one block): splitting them would
  need their order. More than a block's worth is not an exit but a stream cut short: partial.
* A main thread starved for longer than the ring holds prints overwritten slots, later samples
  in place of the lost ones, with consecutive cycle numbers: silent in the stream itself. It
  shows as latencies the reducer saw more often than the histogram counted them, or as a
  largest block maximum below the histogram's maximum. A lost sample whose bin the unprinted
  last samples also fill cannot be told from them: it joins the last block.

Blocks that do not account for every cycle, or whose largest maximum is not the histogram's
maximum, make the run partial, with the thread and the numbers in the reason.
"""

from __future__ import annotations

from rtgate.cyclictest.formats.view import ReducedStream, ThreadView
from rtgate.result import BlockMaxima


def reconcile(t: ThreadView, stream: ReducedStream) -> tuple[BlockMaxima, list[str]]:
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
        return BlockMaxima(block_cycles=block, cycles=seen, maxima_us=maxima), reasons
    total = t.samples
    below, above = stream.seen.below(t.limit) if t.limit is not None else (stream.seen, 0)
    unprinted = t.hist.minus(below)
    if unprinted is None or above > t.overflows:
        reasons.append(f"{name}: the -v stream holds latencies that cyclictest's histogram does "
                       f"not count ({seen} of {total} samples seen): its ring of 16384 samples "
                       "overran while its main thread was starved, later samples were printed "
                       "in place of lost ones")
        return BlockMaxima(block_cycles=block, cycles=seen, maxima_us=maxima), reasons
    tail, tail_overflows = total - seen, t.overflows - above
    cycles = seen
    room = -seen % block  # left in the last block; a full last block leaves none
    if 0 < tail <= block and not tail_overflows:
        # The samples cyclictest measured but never printed: the run's last cycles.
        if room:
            maxima[-1] = max(maxima[-1], int(unprinted.values[-1]))
        else:
            maxima.append(int(unprinted.values[-1]))
        cycles = total
    elif tail > 0:
        where = (f"{tail_overflows} of them at or above the histogram's {t.limit} us limit"
                 if tail <= block else f"more than a block ({block} cycles)")
        reasons.append(f"{name}: the block maxima account for {seen} of {total} cycles: the "
                       f"other {tail} never reached the -v stream, {where}")
    top = max(maxima) if maxima else None
    if t.max_us is not None and top is not None and top != t.max_us:
        reasons.append(f"{name}: the largest block maximum is {top} us, cyclictest's maximum "
                       f"{t.max_us:g} us: samples of the -v stream were lost")
    return BlockMaxima(block_cycles=block, cycles=cycles, maxima_us=maxima), reasons
