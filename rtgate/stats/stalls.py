"""The stall test beside the tail test: do the candidate's rounds hold more blocks whose maximum
exceeds a threshold fixed before B was measured?

A rare stall (a few ms in one block of 10 or 20) barely moves a round's p99 or its block-max
p90, yet it is the regression a real-time user minds most. Per key, each round is summarised by
its number of blocks (all threads) whose maximum exceeds the key's threshold: the calibration
record's (a high quantile of its A/A bank's pooled block maxima), else the same quantile of A's
rounds at the first look, then never moved. A and B are compared with the ROUND as the unit by
an exact permutation test of the per-round counts (one-sided: B more): exchangeable rounds are
all it assumes, so its level holds at 3–8 rounds a side however the stalls cluster within a
boot, where a Poisson or conditional-binomial test on the totals treats the blocks of one boot as
independent (``benchmarks/stall_test.py`` compares them). Exact over every split while they are
at most ``EXACT_SPLITS``, else a fixed-seed Monte Carlo over ``MC_SPLITS`` (still exact in level:
p = (1 + k) / (1 + N)). Pure."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import combinations

import numpy as np

STALL_QUANTILE = 0.99
"""Of the pooled block maxima: the threshold a block's maximum must exceed to count."""
STALL_SHARE = 0.25
"""The share of a key's alpha the stall test gets (the tail test the rest), each with its own
spending over the looks."""
SAME_MARGIN_SHARE = 0.01
"""*Same* for stalls: B's blocks over the threshold per round at most A's plus this share of a
round's blocks (at least one block)."""
EXACT_SPLITS = 20_000
MC_SPLITS = 20_000
SEED = 20261128


def pooled(blocks: Sequence[dict[int, np.ndarray]]) -> np.ndarray:
    """Every block maximum of the rounds, all threads together."""
    arrays = [m for b in blocks for m in b.values()]
    return np.concatenate(arrays) if arrays else np.array([], dtype=float)


def threshold(blocks: Sequence[dict[int, np.ndarray]]) -> float | None:
    """The ``STALL_QUANTILE`` of the rounds' pooled block maxima (an observed value); None
    without block maxima."""
    values = pooled(blocks)
    if not len(values):
        return None
    return float(np.quantile(values, STALL_QUANTILE, method="inverted_cdf"))


def counts(blocks: Sequence[dict[int, np.ndarray]], limit_us: float) -> np.ndarray:
    """Per round, its blocks whose maximum exceeds ``limit_us``."""
    return np.array([sum(int(np.count_nonzero(m > limit_us)) for m in b.values())
                     for b in blocks], dtype=float)


@lru_cache(maxsize=64)
def _splits(na: int, nb: int) -> np.ndarray | None:
    """Every choice of B's positions among na + nb rounds, as a 0/1 matrix; None when too many."""
    n = na + nb
    if math.comb(n, nb) > EXACT_SPLITS:
        return None
    out = np.zeros((math.comb(n, nb), n), dtype=np.int8)
    for i, chosen in enumerate(combinations(range(n), nb)):
        out[i, list(chosen)] = 1
    return out


def permutation_p(a: np.ndarray, b: np.ndarray) -> float:
    """One-sided p-value of "B's rounds hold more stall blocks": the share of label splits
    whose B total is at least the observed one."""
    x = np.concatenate([a, b])
    observed = b.sum()
    splits = _splits(len(a), len(b))
    if splits is not None:
        totals = splits @ x
        return float(np.count_nonzero(totals >= observed - 1e-9)) / len(totals)
    rng = np.random.default_rng(SEED)
    keys = rng.random((MC_SPLITS, len(x)))
    chosen = np.argsort(keys, axis=1)[:, :len(b)]
    totals = x[chosen].sum(axis=1)
    return float(1 + np.count_nonzero(totals >= observed - 1e-9)) / (1 + MC_SPLITS)


@lru_cache(maxsize=256)
def spending(alpha: float, planned: int, first: int = 3) -> dict[int, float]:
    """The stall test's alpha at each look from ``first`` to ``planned`` rounds a side: spent in
    equal parts over the looks from the first whose smallest possible p-value (one split in
    C(2n, n)) is within its part, so no share goes to a look that could never use it (a
    time-based spending would put most of it at looks where 3 or 5 rounds a side cannot reach
    a p below 1/20 or 1/252). Fixed by alpha and the plan alone, before any round."""
    for start in range(first, planned + 1):
        part = alpha / (planned - start + 1)
        if 1 / math.comb(2 * start, start) <= part:
            return dict.fromkeys(range(start, planned + 1), part)
    return {planned: alpha}


@dataclass(frozen=True)
class StallTest:
    """One look's stall test of a key."""

    threshold_us: float
    threshold_from: str
    """"calibration record" or "A's rounds at the first look"."""
    a: tuple[int, ...]
    b: tuple[int, ...]
    """Blocks over the threshold in each round."""
    p: float
    boundary: float
    """The look's alpha increment: worse when p is at most it."""
    margin: float
    """Stall blocks a round B may hold beyond A's for *same*."""

    @property
    def worse(self) -> bool:
        return self.p <= self.boundary

    @property
    def same(self) -> bool:
        return not self.worse and (np.mean(self.b) <= np.mean(self.a) + self.margin)

    def __str__(self) -> str:
        return (f"stall blocks > {self.threshold_us:g} µs ({self.threshold_from}): A "
                f"{sum(self.a)} in {len(self.a)} rounds, B {sum(self.b)} in {len(self.b)}; "
                f"permutation p {self.p:.3g} (worse at ≤ {self.boundary:.3g})")


def test(a_blocks: Sequence[dict[int, np.ndarray]], b_blocks: Sequence[dict[int, np.ndarray]],
         limit_us: float, source: str, boundary: float) -> StallTest | None:
    """The stall test at one look; None when some round has no block maxima."""
    if not all(a_blocks) or not all(b_blocks):
        return None
    a, b = counts(a_blocks, limit_us), counts(b_blocks, limit_us)
    per_round = float(np.mean([sum(len(m) for m in r.values()) for r in b_blocks]))
    return StallTest(limit_us, source, tuple(int(v) for v in a), tuple(int(v) for v in b),
                     permutation_p(a, b), boundary, max(1.0, SAME_MARGIN_SHARE * per_round))
