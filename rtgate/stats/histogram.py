"""Statistics over 1 µs latency histograms: merging, mean, standard deviation, percentiles.

Histograms are kept sparse (only non-empty bins) because an exact histogram from a verbose log has
no upper limit: one 30 s stall must not cost a 30-million-bin array. Samples that overflowed a
histogram's limit are known only to be ``>= limit``; every statistic here says so instead of
pretending they sat at the limit.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from rtgate.result import Percentile

Ints = npt.NDArray[np.int64]

PERCENTILES = {"p50": 50.0, "p99": 99.0, "p99_9": 99.9, "p99_99": 99.99}


@dataclass(frozen=True)
class Sparse:
    """Non-empty bins of a 1 µs histogram: ascending unique ``values`` with positive ``counts``."""

    values: Ints
    counts: Ints

    @classmethod
    def from_dense(cls, dense: Ints) -> Sparse:
        values = np.flatnonzero(dense).astype(np.int64)
        return cls(values, dense[values].astype(np.int64))

    @classmethod
    def from_pairs(cls, pairs: Iterable[tuple[int, int]]) -> Sparse:
        arr = np.array([p for p in pairs if p[1]], dtype=np.int64).reshape(-1, 2)
        return cls(arr[:, 0].copy(), arr[:, 1].copy())._normalized()

    @classmethod
    def merge(cls, parts: Iterable[Sparse]) -> Sparse:
        parts = list(parts)
        if not parts:
            return cls(np.zeros(0, np.int64), np.zeros(0, np.int64))
        return cls(np.concatenate([p.values for p in parts]),
                   np.concatenate([p.counts for p in parts]))._normalized()

    def minus(self, other: Sparse) -> Sparse | None:
        """Bin-wise difference; None when ``other`` has more in some bin than this one."""
        values, inverse = np.unique(np.concatenate([self.values, other.values]),
                                    return_inverse=True)
        weights = np.concatenate([self.counts, -other.counts]).astype(np.float64)
        counts = np.rint(np.bincount(inverse, weights=weights, minlength=len(values)))
        if (counts < 0).any():
            return None
        keep = counts > 0
        return Sparse(values[keep], counts[keep].astype(np.int64))

    def _normalized(self) -> Sparse:
        values, inverse = np.unique(self.values, return_inverse=True)
        counts = np.bincount(inverse, weights=self.counts, minlength=len(values))
        counts = counts.astype(np.int64)
        keep = counts > 0
        return Sparse(values[keep], counts[keep])

    @property
    def total(self) -> int:
        return int(self.counts.sum())

    def below(self, limit: int) -> tuple[Sparse, int]:
        """Split at ``limit``: the bins below it, and how many samples sit at or above it."""
        keep = self.values < limit
        return Sparse(self.values[keep], self.counts[keep]), int(self.counts[~keep].sum())

    def pairs(self) -> list[tuple[int, int]]:
        return [(int(v), int(c)) for v, c in zip(self.values, self.counts, strict=True)]


def mean(hist: Sparse) -> float | None:
    n = hist.total
    return float(np.dot(hist.values, hist.counts) / n) if n else None


def stddev(hist: Sparse, overflows: int) -> float | None:
    """Population standard deviation; unknown (None) when samples overflowed the histogram."""
    n = hist.total
    if overflows or not n:
        return None
    mu = np.dot(hist.values, hist.counts) / n
    return float(math.sqrt(np.dot((hist.values - mu) ** 2, hist.counts) / n))


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
    return Percentile(value_us=float(hist.values[np.searchsorted(cumulative, rank)]))


def percentiles(hist: Sparse, overflows: int, limit: int | None) -> dict[str, Percentile | None]:
    return {name: percentile(hist, overflows, limit, q) for name, q in PERCENTILES.items()}
