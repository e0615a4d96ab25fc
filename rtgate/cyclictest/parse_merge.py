"""Combine the views several files give of ONE run, refusing files that contradict each other.

A maintainer may hand over the ``--json`` file together with the stdout of the same run, or a
verbose log plus the JSON. Each value is taken from the file that knows it best:

* statistics (samples, min, avg, max) from a ``final`` view — written at exit — in preference
  order JSON (two-decimal average), histogram footer, ``-q`` summary; otherwise from the snapshot
  that saw the most samples;
* the histogram that covers the most samples; on a tie the exact (verbose) one. A verbose log
  misses the last few samples cyclictest still buffered at exit, so next to a ``-h`` histogram
  of the same run it loses; alone, it is the exact distribution of every sample it printed.
  When the histogram holds every sample of the run (no overflows), the average is its exact
  mean, in place of the JSON's two decimals or the text formats' integer cut toward zero.

Two final views must agree (the average to within its printed precision: cut to an integer in
the text formats, rounded to two decimals in the JSON); a snapshot may only be "behind" a final
view: fewer samples, a lower max, a higher min. Anything else means the files are not of one
run, and that is an input error naming both files.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from rtgate.cyclictest import blockcheck
from rtgate.cyclictest.formats.view import KernelView, RunView, ThreadView
from rtgate.errors import InputError
from rtgate.result import RESOLUTION_US
from rtgate.stats.histogram import Sparse, mean

_FINAL_PREFERENCE = {"json": 0, "histogram": 1, "summary": 2, "verbose": 3, "blocks": 4}


@dataclass
class Merged:
    threads: list[ThreadView]
    kernel: KernelView
    tool_version: str | None
    cmdline: str | None
    start: str | None
    end: str | None
    resolution_us: float
    partial_reasons: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def merge(views: list[RunView]) -> Merged:
    _same_threads(views)

    def agree(get: Callable[[RunView], Any], what: str) -> Any:
        return _agree([(v.path, get(v)) for v in views], what)

    def kernel(name: str) -> Any:
        return _agree([(v.path, getattr(v.kernel, name)) for v in views], f"kernel {name}")

    merged = Merged(
        threads=[_merge_thread([(v.path, v.format, v.threads[n]) for v in views])
                 for n in sorted(views[0].threads)],
        kernel=KernelView(**{f.name: kernel(f.name) for f in fields(KernelView)}),
        tool_version=agree(lambda v: v.tool_version, "rt-tests version"),
        cmdline=agree(lambda v: v.cmdline, "command line") or _typed(views),
        start=agree(lambda v: v.start, "start time"),
        end=agree(lambda v: v.end, "end time"),
        resolution_us=agree(lambda v: v.resolution_us, "unit (µs, or ns with -N)")
        or RESOLUTION_US,
    )
    for v in views:
        merged.partial_reasons.extend(v.partial_reasons)
        merged.notes.extend(v.notes)
    # The reducer's blocks file (rtgate bench, a board) or a -v log reduced as it is read: the
    # same blocks, checked the same way against the run's histogram.
    reduced = [v for v in views if any(t.stream for t in v.threads.values())]
    if len(reduced) > 1:
        raise _contradiction(reduced[1].path, reduced[0].path,
                             "two sources of block maxima (-v samples or a blocks file) for "
                             "one run")
    for t in merged.threads if reduced else []:
        stream = reduced[0].threads[t.thread].stream
        if stream is None:
            continue  # a -v log that does not tell this thread's block size (a note says so)
        checked = blockcheck.reconcile(t, stream)
        t.blocks = checked.blocks
        if checked.whole is not None:
            # Percentiles from every sample: the -v stream has no limit.
            t.hist, t.limit, t.overflows = checked.whole, None, 0
        merged.partial_reasons.extend(checked.reasons)
        merged.notes.extend(checked.notes)
    return merged


def _same_threads(views: list[RunView]) -> None:
    first = views[0]
    for other in views[1:]:
        if set(other.threads) != set(first.threads):
            raise _contradiction(other.path, first.path,
                                 f"threads {sorted(other.threads)} here, "
                                 f"{sorted(first.threads)} there")


def _agree(claims: list[tuple[Path, Any]], what: str) -> Any:
    """The one value the files claim for ``what`` (None when none knows it)."""
    found: tuple[Path, Any] | None = None
    for path, value in claims:
        if value is None:
            continue
        if found is not None and value != found[1]:
            raise _contradiction(path, found[0], f"{what} {value!r} here, {found[1]!r} there")
        found = found or (path, value)
    return None if found is None else found[1]


def _typed(views: list[RunView]) -> str | None:
    """The command typed at a prompt, for a run whose files do not hold cyclictest's own (the
    first file's that shows one): never compared between files, as typing varies."""
    return next((v.typed_cmdline for v in views if v.typed_cmdline), None)


def _contradiction(path: Path, other: Path, detail: str) -> InputError:
    return InputError(f"contradicts {other}, so they are not one run: {detail}", path=path)


Source = tuple[Path, str, ThreadView]


def _merge_thread(sources: list[Source]) -> ThreadView:
    number = sources[0][2].thread
    finals = sorted((s for s in sources if s[2].finality == "final"),
                    key=lambda s: _FINAL_PREFERENCE[s[1]])
    for s in finals[1:]:
        _finals_agree(s, finals[0])
    if finals:
        best = finals[0]
        for s in sources:
            if s[2].finality == "snapshot":
                _behind(s, best)
    else:
        best = max(sources, key=lambda s: s[2].samples or 0)
    out = ThreadView(thread=number, finality=best[2].finality)
    for name in ("cpu", "tid", "priority", "interval_us"):
        claims = [(path, getattr(t, name)) for path, _, t in sources]
        setattr(out, name, _agree(claims, f"thread {number} {name}"))
    for name in ("samples", "min_us", "avg_us", "avg_truncated", "max_us", "resolution_us"):
        setattr(out, name, getattr(best[2], name))
    _take_histogram(out, sources)
    return out


def _finals_agree(s: Source, ref: Source) -> None:
    a, b = s[2], ref[2]
    for name in ("samples", "min_us", "max_us"):
        x, y = getattr(a, name), getattr(b, name)
        if x is not None and y is not None and x != y:
            raise _contradiction(s[0], ref[0], f"thread {a.thread} {name} {x:g} here, "
                                               f"{y:g} there")
    if a.avg_us is not None and b.avg_us is not None:
        (lo_a, hi_a), (lo_b, hi_b) = _avg_range(s), _avg_range(ref)
        if max(lo_a, lo_b) >= min(hi_a, hi_b):
            raise _contradiction(s[0], ref[0], f"thread {a.thread} avg_us {a.avg_us:g} here, "
                                               f"{b.avg_us:g} there")


def _avg_range(s: Source) -> tuple[float, float]:
    """Where the true mean lies, ``[lo, hi)``, given how the file printed the average: the
    text formats cut it toward zero, the JSON rounds it to two decimals (118.996 prints as
    119.00 next to a footer's 118)."""
    _, fmt, t = s
    assert t.avg_us is not None
    if t.avg_truncated:
        return t.avg_us, t.avg_us + t.resolution_us
    slack = 0.005 + 1e-9 if fmt == "json" else 1e-9
    return t.avg_us - slack, t.avg_us + slack


def _behind(s: Source, final: Source) -> None:
    """A snapshot of a run cannot be ahead of its final statistics."""
    a, b = s[2], final[2]
    problems = []
    if a.samples is not None and b.samples is not None and a.samples > b.samples:
        problems.append(f"{a.samples} samples here, only {b.samples} at the end there")
    if a.max_us is not None and b.max_us is not None and a.max_us > b.max_us:
        problems.append(f"max {a.max_us:g} us here, {b.max_us:g} us at the end there")
    if a.min_us is not None and b.min_us is not None and a.min_us < b.min_us:
        problems.append(f"min {a.min_us:g} us here, {b.min_us:g} us at the end there")
    if problems:
        raise _contradiction(s[0], final[0], f"thread {a.thread} " + "; ".join(problems))


Hist = tuple[Path, ThreadView, Sparse]  # a source's histogram, with its thread view


def _take_histogram(out: ThreadView, sources: list[Source]) -> None:
    hists: list[Hist] = [(path, t, t.hist) for path, _, t in sources if t.hist is not None]
    if not hists:
        return
    best = max(hists, key=lambda h: (h[2].total + h[1].overflows, h[1].limit is None))
    _, t, hist = best
    for path, o, other in hists:
        if (o.finality == t.finality == "final" and o.limit == t.limit and o is not t
                and (o.overflows != t.overflows or other.pairs() != hist.pairs())):
            raise _contradiction(path, best[0], f"thread {o.thread}: the histograms differ")
    limit, overflows = t.limit, t.overflows
    # The JSON does not list overflow cycle numbers; the text of the same histogram does.
    out.overflow_cycles = next(
        (o.overflow_cycles for _, o, _ in hists
         if o.overflow_cycles and o.overflows == overflows and o.limit == limit), [])
    exact = next((h for h in hists if h[1].limit is None), None)
    if exact is not None and limit is not None and t.finality == "final":
        completed = _complete_exact(exact, best)
        if completed is not None:
            hist, limit, overflows = completed, None, 0
    out.hist, out.limit, out.overflows = hist, limit, overflows
    if out.samples is None:
        out.samples = hist.total + overflows
    if hist.total == out.samples and (t.finality == "final" or limit is None):
        # Every sample of the run is in the bins: the exact mean, not a rounded or cut one;
        # with -N the bins are coarser than the samples, whose exact mean the reader kept.
        out.avg_us = mean(hist) if t.resolution_us == RESOLUTION_US else t.avg_us
        out.avg_truncated = False
    if not hist.total:
        return
    if out.min_us is None:  # rows ascend: even a cut histogram holds the lowest bins
        out.min_us = float(hist.us[0])
    if overflows == 0 and (t.finality == "final" or limit is None):
        out.avg_us = out.avg_us if out.avg_us is not None else mean(hist)
        out.max_us = out.max_us if out.max_us is not None else float(hist.us[-1])


def _complete_exact(exact: Hist, limited: Hist) -> Sparse | None:
    """Verbose samples plus the -h histogram of the same run: the samples the verbose log
    missed at exit are the difference of the two. When none of them overflowed, their bins are
    known and the exact histogram becomes complete (returned): no limit, no overflows."""
    (epath, e, ehist), (lpath, lim, lhist) = exact, limited
    assert lim.limit is not None
    below, above = ehist.below(lim.limit)
    missing = lhist.minus(below)
    if missing is None or above > lim.overflows:
        raise _contradiction(epath, lpath, f"thread {e.thread}: samples in the verbose log "
                             "are missing from the histogram")
    return Sparse.merge([ehist, missing]) if above == lim.overflows else None
