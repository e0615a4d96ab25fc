"""Statistics over latency histograms: merging, mean, standard deviation, percentiles.

Histograms are kept sparse (only non-empty bins) because an exact histogram from a verbose log has
no upper limit: one 30 s stall must not cost a 30-million-bin array. Samples that overflowed a
histogram's limit are known only to be ``>= limit``; every statistic here says so instead of
pretending they sat at the limit.

Bins are 1 µs wide for latencies printed in µs. Latencies printed in ns (cyclictest -N) fall into
log-linear bins (``log_linear``), HdrHistogram's layout at 3 significant digits: exact 1 ns bins
below 2048 ns, then per power of two 1024 bins, so a bin's lower edge is within ``RELATIVE_ERROR``
(2^-10, < 0.1 %) below every latency in it and a run's bins number some 1000 per doubling of its
range (about 31 000 from 1 ns to ten minutes), never more. The layout is ours, not a library's
call: the guests' busybox awk bins the -v stream the same way, and numpy bins 10^8 samples at
once; tests check it against HdrHistogram's own.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from rtgate.result import EXACT_NS_BITS, Percentile

Ints = npt.NDArray[np.int64]

PERCENTILES = {"p50": 50.0, "p99": 99.0, "p99_9": 99.9, "p99_99": 99.99}
EXACT_BITS = EXACT_NS_BITS
"""ns values below 2^11 (HdrHistogram's 2 · 10^3 significant-digit range, rounded up to a power of
two) get 1 ns bins; each further power of two is cut into 2^10 bins."""
RELATIVE_ERROR = 2.0 ** -(EXACT_BITS - 1)
"""A log-linear bin's width over its lower edge, at most: every latency in it lies in
[edge, edge · (1 + RELATIVE_ERROR))."""


def log_linear(values_ns: Ints) -> Ints:
    """The lower edge (ns) of the log-linear bin of each non-negative ns value: HdrHistogram's
    lowest equivalent value at 3 significant digits (unit 1 ns)."""
    values = np.asarray(values_ns, dtype=np.int64)
    # frexp's exponent is the bit length, exact below 2^53 ns (104 days).
    shift = np.maximum(np.frexp(values.astype(np.float64))[1] - EXACT_BITS, 0).astype(np.int64)
    return (values >> shift) << shift


@dataclass(frozen=True)
class Sparse:
    """Non-empty bins of a histogram: ascending unique ``values`` (each bin's lower edge, in
    ``unit_ns``: 1000 for 1 µs bins, 1 for the log-linear bins of ns data) with positive
    ``counts``."""

    values: Ints
    counts: Ints
    unit_ns: int = 1000

    @classmethod
    def from_dense(cls, dense: Ints) -> Sparse:
        values = np.flatnonzero(dense).astype(np.int64)
        return cls(values, dense[values].astype(np.int64))

    @classmethod
    def from_pairs(cls, pairs: Iterable[tuple[float, int]], unit_ns: int = 1000) -> Sparse:
        """From ``(lower edge in µs, count)`` pairs, as a result stores them."""
        arr = np.array([p for p in pairs if p[1]], dtype=np.float64).reshape(-1, 2)
        values = np.rint(arr[:, 0] * (1000 / unit_ns)).astype(np.int64)
        return cls(values, arr[:, 1].astype(np.int64), unit_ns)._normalized()

    @classmethod
    def from_ns(cls, values_ns: Ints, counts: Ints | None = None) -> Sparse:
        """ns latencies (each counted once, or ``counts`` times) in log-linear bins."""
        edges = log_linear(values_ns)
        weights = np.ones(len(edges), np.int64) if counts is None else counts
        return cls(edges, np.asarray(weights, np.int64), 1)._normalized()

    @classmethod
    def merge(cls, parts: Iterable[Sparse]) -> Sparse:
        parts = list(parts)
        if not parts:
            return cls(np.zeros(0, np.int64), np.zeros(0, np.int64))
        units = {p.unit_ns for p in parts}
        if len(units) > 1:
            # A µs bin cannot be split into ns ones; callers check the resolutions agree.
            raise ValueError("histograms of µs and ns bins merged")
        return cls(np.concatenate([p.values for p in parts]),
                   np.concatenate([p.counts for p in parts]), units.pop())._normalized()

    @property
    def us(self) -> npt.NDArray[np.float64]:
        """The bins' lower edges in µs."""
        return self.values / (1000 // self.unit_ns)

    def minus(self, other: Sparse) -> Sparse | None:
        """Bin-wise difference; None when ``other`` has more in some bin than this one."""
        if other.unit_ns != self.unit_ns:
            raise ValueError("histograms of µs and ns bins subtracted")
        values, inverse = np.unique(np.concatenate([self.values, other.values]),
                                    return_inverse=True)
        weights = np.concatenate([self.counts, -other.counts]).astype(np.float64)
        counts = np.rint(np.bincount(inverse, weights=weights, minlength=len(values)))
        if (counts < 0).any():
            return None
        keep = counts > 0
        return Sparse(values[keep], counts[keep].astype(np.int64), self.unit_ns)

    def _normalized(self) -> Sparse:
        values, inverse = np.unique(self.values, return_inverse=True)
        counts = np.bincount(inverse, weights=self.counts, minlength=len(values))
        counts = counts.astype(np.int64)
        keep = counts > 0
        return Sparse(values[keep], counts[keep], self.unit_ns)

    @property
    def total(self) -> int:
        return int(self.counts.sum())

    def below(self, limit_us: int) -> tuple[Sparse, int]:
        """Split at ``limit_us``: the bins below it, and how many samples sit at or above it."""
        keep = self.values < limit_us * (1000 // self.unit_ns)
        return (Sparse(self.values[keep], self.counts[keep], self.unit_ns),
                int(self.counts[~keep].sum()))

    def pairs(self) -> list[tuple[float, int]]:
        """``(lower edge in µs, count)``: whole µs as ints, ns edges to their last digit."""
        if self.unit_ns == 1000:
            return [(int(v), int(c)) for v, c in zip(self.values, self.counts, strict=True)]
        return [(int(v) / 1000, int(c)) for v, c in zip(self.values, self.counts, strict=True)]


def mean(hist: Sparse) -> float | None:
    n = hist.total
    return float(np.dot(hist.us, hist.counts) / n) if n else None


def stddev(hist: Sparse, overflows: int) -> float | None:
    """Population standard deviation; unknown (None) when samples overflowed the histogram."""
    n = hist.total
    if overflows or not n:
        return None
    mu = np.dot(hist.us, hist.counts) / n
    return float(math.sqrt(np.dot((hist.us - mu) ** 2, hist.counts) / n))


def percentile(hist: Sparse, overflows: int, limit: int | None, q: float) -> Percentile | None:
    """Nearest-rank percentile over the in-range bins followed by the overflowed samples."""
    n = hist.total + overflows
    if not n:
        return None
    # Exact arithmetic: 99.9 % of 4000 is rank 3996, not 3997 as float rounding would make it.
    rank = max(1, math.ceil(Fraction(str(q)) * n / 100))
    cumulative = np.cumsum(hist.counts)
    if rank > (cumulative[-1] if len(cumulative) else 0):
        # The sample of that rank overflowed: only a lower bound is known.
        assert limit is not None, "overflows without a histogram limit"
        return Percentile(value_us=limit, relation=">=")
    return Percentile(value_us=float(hist.us[np.searchsorted(cumulative, rank)]))


def percentiles(hist: Sparse, overflows: int, limit: int | None) -> dict[str, Percentile | None]:
    return {name: percentile(hist, overflows, limit, q) for name, q in PERCENTILES.items()}
