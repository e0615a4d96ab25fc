"""Log-spaced latency bins: how a histogram spanning decades is drawn and kept for years.

cyclictest counts in 1 µs buckets. Drawn over a 20 ms range those make a comb of one-bucket
spikes, and kept for every run of a long history they cost a row per µs. The edges here are
every integer µs up to 20 µs, then PER_DECADE edges a decade (each about 12 % above the last),
rounded to whole µs, so that a bin never splits a cyclictest bucket: 1 µs to 10 s in about 140
bins, of which a run fills a few dozen.
"""

from __future__ import annotations

import bisect
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping

PER_DECADE = 20
TOP_US = 10_000_000


def _edges() -> tuple[int, ...]:
    edges = {0, *range(1, 21)}
    k = 0
    while (edge := math.ceil(10 ** (k / PER_DECADE) - 1e-9)) <= TOP_US:
        edges.add(edge)
        k += 1
    return tuple(sorted(edges))


EDGES = _edges()


def lower_edge(latency_us: int) -> int:
    """The lower edge of the bin that holds a 1 µs bucket."""
    return EDGES[bisect.bisect_right(EDGES, latency_us) - 1]


_NEXT = dict(zip(EDGES, EDGES[1:], strict=False))


def upper_edge(lower: int) -> int:
    """The bin's upper edge (exclusive); past the last edge, one decade more."""
    return _NEXT.get(lower) or EDGES[bisect.bisect_right(EDGES, lower)] \
        if lower < EDGES[-1] else lower * 10


def rebin(buckets: Iterable[tuple[int, int]]) -> dict[int, int]:
    """Sparse 1 µs buckets (latency, count) to sparse log bins {lower edge: count}: the cost is
    the number of non-empty buckets, never the range they span."""
    ordered = sorted(buckets)
    binned: dict[int, int] = defaultdict(int)
    # Both ascending: one walk along the edges.
    i, last = 0, len(EDGES) - 1
    for latency, count in ordered:
        while i < last and EDGES[i + 1] <= latency:
            i += 1
        if count:
            binned[EDGES[i]] += count
    return dict(binned)


def whole_us(buckets: Iterable[tuple[float, int]]) -> dict[int, int]:
    """Bins at the plots' 1 µs: cyclictest's own, or -N's log-linear ns bins counted in the
    whole µs their lower edge lies in, as the µs bins of the same run would count them but for
    a bin across a µs boundary (under 0.1 % wide): ns runs are drawn like µs ones."""
    out: dict[int, int] = defaultdict(int)
    for latency, count in buckets:
        out[math.floor(latency)] += count
    return dict(out)


def merge(histograms: Iterable[Mapping[int, int]]) -> dict[int, int]:
    total: dict[int, int] = defaultdict(int)
    for h in histograms:
        for key, count in h.items():
            total[key] += count
    return dict(sorted(total.items()))
