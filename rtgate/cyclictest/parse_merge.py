"""Combine the views several files give of ONE run, refusing files that contradict each other.

A maintainer may hand over the ``--json`` file together with the stdout of the same run, or a
verbose log plus the JSON. Each value is taken from the file that knows it best:

* statistics (samples, min, avg, max) from a ``final`` view — written at exit — in preference
  order JSON (two-decimal average), histogram footer, ``-q`` summary; otherwise from the snapshot
  that saw the most samples;
* the histogram that covers the most samples; on a tie the exact (verbose) one. A verbose log
  misses the last few samples cyclictest still buffered at exit, so next to a ``-h`` histogram
  of the same run it loses; alone, it is the exact distribution of every sample it printed.

Two final views must agree (the average to within the integer truncation of the text formats); a
snapshot may only be "behind" a final view: fewer samples, a lower max, a higher min. Anything
else means the files are not of one run, and that is an input error naming both files.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from rtgate.cyclictest.formats.view import KernelView, RunView, ThreadView
from rtgate.cyclictest.stats import Sparse, mean
from rtgate.errors import InputError

_FINAL_PREFERENCE = {"json": 0, "histogram": 1, "summary": 2, "verbose": 3}


@dataclass
class Merged:
    threads: list[ThreadView]
    kernel: KernelView
    tool_version: str | None
    cmdline: str | None
    start: str | None
    end: str | None
    partial_reasons: list[str] = field(default_factory=list)


def merge(views: list[RunView]) -> Merged:
    _same_threads(views)

    def agree(get: Callable[[RunView], Any], what: str) -> Any:
        return _agree([(v.path, get(v)) for v in views], what)

    merged = Merged(
        threads=[_merge_thread([(v.path, v.format, v.threads[n]) for v in views])
                 for n in sorted(views[0].threads)],
        kernel=KernelView(**{f.name: agree(lambda v, n=f.name: getattr(v.kernel, n),
                                           f"kernel {f.name}")
                             for f in fields(KernelView)}),
        tool_version=agree(lambda v: v.tool_version, "rt-tests version"),
        cmdline=agree(lambda v: v.cmdline, "command line"),
        start=agree(lambda v: v.start, "start time"),
        end=agree(lambda v: v.end, "end time"),
    )
    for v in views:
        merged.partial_reasons.extend(v.partial_reasons)
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
    for name in ("samples", "min_us", "avg_us", "max_us"):
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
    if a.avg_us is not None and b.avg_us is not None and abs(a.avg_us - b.avg_us) >= 1:
        raise _contradiction(s[0], ref[0], f"thread {a.thread} avg_us {a.avg_us:g} here, "
                                           f"{b.avg_us:g} there")


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


def _take_histogram(out: ThreadView, sources: list[Source]) -> None:
    with_hist = [s for s in sources if s[2].hist is not None]
    if not with_hist:
        return
    best = max(with_hist, key=lambda s: (s[2].hist.total + s[2].overflows, s[2].limit is None))
    t = best[2]
    for s in with_hist:
        o = s[2]
        if (o.finality == t.finality == "final" and o.limit == t.limit and o is not t
                and (o.overflows != t.overflows or o.hist.pairs() != t.hist.pairs())):
            raise _contradiction(s[0], best[0], f"thread {o.thread}: the histograms differ")
    out.hist, out.limit, out.overflows = t.hist, t.limit, t.overflows
    # The JSON does not list overflow cycle numbers; the text of the same histogram does.
    out.overflow_cycles = next(
        (s[2].overflow_cycles for s in with_hist
         if s[2].overflow_cycles and s[2].overflows == t.overflows and s[2].limit == t.limit),
        [])
    exact = next((s for s in with_hist if s[2].limit is None), None)
    if exact is not None and t.limit is not None and t.finality == "final":
        _complete_exact(out, exact, best)
    if out.samples is None:
        out.samples = out.hist.total + out.overflows
    if out.limit is None and out.hist.total == out.samples:
        out.avg_us = mean(out.hist)  # every sample known: exact, not truncated to the µs
    if not out.hist.total:
        return
    if out.min_us is None:  # rows ascend: even a cut histogram holds the lowest bins
        out.min_us = float(out.hist.values[0])
    if out.overflows == 0 and (t.finality == "final" or out.limit is None):
        out.avg_us = out.avg_us if out.avg_us is not None else mean(out.hist)
        out.max_us = out.max_us if out.max_us is not None else float(out.hist.values[-1])


def _complete_exact(out: ThreadView, exact: Source, limited: Source) -> None:
    """Verbose samples plus the -h histogram of the same run: the samples the verbose log
    missed at exit are the difference of the two. When none of them overflowed, their bins are
    known and the exact histogram becomes complete: no limit, no overflows."""
    e, lim = exact[2], limited[2]
    assert e.hist is not None and lim.hist is not None and lim.limit is not None
    below, above = e.hist.below(lim.limit)
    missing = lim.hist.minus(below)
    if missing is None or above > lim.overflows:
        raise _contradiction(exact[0], limited[0], f"thread {e.thread}: samples in the "
                             "verbose log are missing from the histogram")
    if above == lim.overflows:
        out.hist, out.limit, out.overflows = Sparse.merge([e.hist, missing]), None, 0
