"""``parse()``: cyclictest output files of one run -> the normalized :class:`Result`.

Each file's format is sniffed (``formats``), the files' views are merged (``parse_merge``), and
the totals are computed over all threads' merged histogram (``stats``). Percentiles and the
standard deviation need a histogram of every thread: from summary lines alone they stay absent.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from rtgate.cyclictest.formats import read_views
from rtgate.cyclictest.formats.blocks import Progress, no_progress
from rtgate.cyclictest.formats.view import KernelView, ThreadView
from rtgate.cyclictest.parse_merge import Merged, merge
from rtgate.errors import InputError
from rtgate.result import (
    NSEC_US,
    Board,
    Histogram,
    Kernel,
    Result,
    SourceFile,
    Thread,
    Tool,
    Totals,
    default_run_id,
    is_preempt_rt,
)
from rtgate.stats.histogram import Sparse, percentiles, stddev


def parse(paths: Sequence[Path], *, board: str = "unknown", virtual: bool = False,
          scenario: str = "unknown", flavor: str | None = None,
          run_id: str | None = None, progress: Progress = no_progress,
          lenient: bool = False, block_cycles: int | None = None) -> Result:
    """Normalize the output files of ONE cyclictest run (one or several formats of it).

    Raises InputError (exit 2) naming the file, and the line where it applies, for anything
    malformed, and for files that contradict each other. ``progress`` is told the bytes read.
    ``lenient`` is for files a user hands over: lines before cyclictest's output and shell
    prompts after it become notes; raw files of rtgate's own harness are read strictly.
    ``block_cycles``: the block of the block maxima a -v log is reduced to (None: one second
    at each thread's interval, where the log tells it).
    """
    if not paths:
        raise InputError("no cyclictest output file given")
    per_file = [read_views(Path(p), progress, lenient=lenient, block_cycles=block_cycles)
                for p in paths]
    said = {v.resolution_us for views in per_file for v in views} - {None}
    if said == {NSEC_US}:
        # A -v log or -h file cannot tell its unit (no 'T:' lines); the run's --json or
        # summary can: the file is read again in it (a rare pairing: one more pass over it).
        per_file = [read_views(Path(p), lenient=lenient, block_cycles=block_cycles,
                               unit=NSEC_US)
                    if any(v.format in ("verbose", "histogram") and v.resolution_us is None
                           for v in views)
                    else views for p, views in zip(paths, per_file, strict=True)]
    run = merge([v for views in per_file for v in views])
    # A file's first view is the one read from its start: it holds the whole file's hash.
    sources = [SourceFile(path=str(views[0].path), sha256=views[0].sha256,
                          format=views[0].format) for views in per_file]
    totals = _totals(run)
    reasons = list(run.partial_reasons)
    if not totals.samples:
        reasons.append("no samples: cyclictest stopped before its first measurement")
    return Result(
        run_id=run_id or default_run_id(board, scenario, run.start, sources),
        board=Board(name=board, virtual=virtual),
        kernel=_kernel(run.kernel, flavor),
        scenario=scenario,
        tool=Tool(version=run.tool_version, cmdline=run.cmdline),
        start=run.start,
        end=run.end,
        sources=sources,
        threads=[_thread(t) for t in run.threads],
        totals=totals,
        resolution_us=run.resolution_us,
        status="partial" if reasons else "complete",
        reasons=reasons,
        notes=run.notes,
    )


def _kernel(k: KernelView, flavor: str | None) -> Kernel:
    preempt_rt: bool | None = None
    if k.version is not None or k.realtime is not None:
        preempt_rt = is_preempt_rt(k.version, k.realtime == 1)
    if flavor is None and preempt_rt is not None:
        flavor = "rt" if preempt_rt else "stock"
    return Kernel(release=k.release, version=k.version, preempt_rt=preempt_rt, flavor=flavor,
                  machine=k.machine)


def _thread(t: ThreadView) -> Thread:
    hist = None
    if t.hist is not None:
        limit = t.limit if t.limit is not None else _exact_limit(t.hist)
        hist = Histogram(limit_us=limit, buckets=t.hist.pairs(), overflows=t.overflows,
                         overflow_cycles=t.overflow_cycles, log_linear=t.hist.unit_ns == 1)
    return Thread(thread=t.thread, cpu=t.cpu, tid=t.tid, priority=t.priority,
                  interval_us=t.interval_us, samples=t.samples or 0, min_us=t.min_us,
                  avg_us=t.avg_us, avg_truncated=t.avg_truncated and t.avg_us is not None,
                  max_us=t.max_us, histogram=hist, blocks=t.blocks)


def _exact_limit(hist: Sparse) -> int:
    # An exact histogram has no overflows: any limit above its highest bin says so.
    return math.floor(hist.us[-1]) + 1 if len(hist.values) else 1


def _totals(run: Merged) -> Totals:
    measured = [t for t in run.threads if t.samples]
    samples = sum(t.samples or 0 for t in measured)
    totals = Totals(samples=samples)
    if not measured:
        return totals
    # A statistic over all threads exists only when every measuring thread has it.
    mins = [t.min_us for t in measured if t.min_us is not None]
    maxs = [t.max_us for t in measured if t.max_us is not None]
    avgs = [(t.avg_us, t.samples or 0) for t in measured if t.avg_us is not None]
    if len(mins) == len(measured):
        totals.min_us = min(mins)
    if len(maxs) == len(measured):
        totals.max_us = max(maxs)
    if len(avgs) == len(measured):
        totals.avg_us = sum(avg * n for avg, n in avgs) / samples
        # A weighted mean of averages each in [avg, avg + 1) is itself in [mean, mean + 1).
        totals.avg_truncated = any(t.avg_truncated for t in measured)
    if all(t.hist is not None for t in measured):
        hist, overflows, limit = _all_threads(measured)
        totals.stddev_us = stddev(hist, overflows)
        for name, value in percentiles(hist, overflows, limit).items():
            setattr(totals, name, value)
    return totals


def _all_threads(threads: list[ThreadView]) -> tuple[Sparse, int, int | None]:
    """One histogram of every thread's samples. Threads share the limit in one run; should
    they not, bins at or above the lowest limit count as overflows, to keep ">=" true."""
    limits = [t.limit for t in threads if t.limit is not None]
    limit = min(limits) if limits else None
    hist = Sparse.merge(t.hist for t in threads if t.hist is not None)
    overflows = sum(t.overflows for t in threads)
    if limit is not None:
        hist, above = hist.below(limit)
        overflows += above
    return hist, overflows, limit
