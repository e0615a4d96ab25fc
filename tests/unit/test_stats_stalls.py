"""The stall test beside the tail test (issue 36, item 1): blocks over a threshold fixed before B,
compared round by round with an exact permutation test; rare stalls the tail test cannot see
make a key worse, and its level holds at 3-8 rounds a side with stalls clustered by boot."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from scipy import stats
from test_stats_ab import KEY, rounds

from rtgate.outcome import Comparison
from rtgate.stats import ab, stalls


def test_the_permutation_p_value_is_exact() -> None:
    # 3 a side: 20 splits; B holding the three largest counts is the one split of 20.
    assert stalls.permutation_p(np.array([0.0, 1, 0]), np.array([5.0, 6, 7])) == 1 / 20
    assert stalls.permutation_p(np.array([5.0, 6, 7]), np.array([0.0, 1, 0])) == 1.0
    # Ties count as extreme: identical sides are p = 1 (every split's total equals it).
    assert stalls.permutation_p(np.zeros(4), np.zeros(4)) == 1.0
    # Past EXACT_SPLITS a fixed-seed Monte Carlo: (1 + k) / (1 + N), never 0.
    p = stalls.permutation_p(np.zeros(12), np.full(12, 3.0))
    assert p == 1 / (1 + stalls.MC_SPLITS)


def stall(rs: list[ab.Round], every: int, us: float = 3000.0) -> list[ab.Round]:
    """One block in ``every`` of each round raised to ``us`` (the histogram untouched: the tail
    metrics of a p99 key cannot see it)."""
    out = []
    for r in rs:
        blocks = {t: b.copy() for t, b in r.blocks.items()}
        for b in blocks.values():
            b[::every] = us
        out.append(replace(r, blocks=blocks, summaries={}))
    return out


@pytest.mark.parametrize("every", [10, 20])
def test_a_rare_stall_the_p99_key_cannot_see_is_worse(every: int) -> None:
    """Rule 2 tested only the primary metric: a p99 key called a stall in one block of 10 or 20
    same. The stall test beside it calls it worse at 6 rounds a side."""
    a, b = rounds(11, 6), stall(rounds(12, 6), every)
    (d,) = ab.decide([ab.KeyRounds(KEY, a, b, ab.Margin(0.25), primary="p99")], alpha=0.01)
    assert d.stalls is not None and d.stalls.worse, d.stalls
    assert d.outcome is Comparison.WORSE
    assert sum(d.stalls.b) > sum(d.stalls.a)
    # The same rounds without the stalls: the tail test and the stall test both same.
    (same,) = ab.decide([ab.KeyRounds(KEY, a, rounds(12, 6), ab.Margin(0.25), primary="p99")],
                        alpha=0.01)
    assert same.outcome is Comparison.SAME and same.stalls is not None and same.stalls.same


def test_the_threshold_is_the_records_else_a_first_look_of_a() -> None:
    a, b = rounds(13, 5), rounds(14, 5)
    (given,) = ab.decide([ab.KeyRounds(KEY, a, b, ab.Margin(0.25), stall_threshold_us=123.0)])
    assert given.stalls is not None and given.stalls.threshold_us == 123.0
    (own,) = ab.decide([ab.KeyRounds(KEY, a, b, ab.Margin(0.25))])
    assert own.stalls is not None
    assert own.stalls.threshold_us == stalls.threshold([r.blocks for r in a[:ab.MIN_ROUNDS]])
    # More A rounds later never move it.
    (later,) = ab.decide([ab.KeyRounds(KEY, [*a, *rounds(15, 3)], b, ab.Margin(0.25))])
    assert later.stalls is not None and later.stalls.threshold_us == own.stalls.threshold_us


def boot_clustered(rng: np.random.Generator, trials: int, n: int) -> np.ndarray:
    """Per-round stall counts when stalls cluster by boot: a gamma boot factor (shape 0.5)
    times a Poisson rate of 1.6 blocks a round (q99 of 160 blocks)."""
    return rng.poisson(1.6 * rng.gamma(0.5, 2.0, (trials, n))).astype(float)


@pytest.mark.parametrize("n", [3, 5, 8])
def test_the_permutation_level_holds_where_a_poisson_test_does_not(n: int) -> None:
    """A/A at n rounds a side, 400 fixed-seed trials at one-sided 5 %: the permutation test's
    rate stays within its Clopper-Pearson bound of 5 %, the exact test conditional on the totals
    (binomial, treating every block as independent) alarms far more often."""
    rng = np.random.default_rng(n)
    a, b = boot_clustered(rng, 400, n), boot_clustered(rng, 400, n)
    perm = sum(stalls.permutation_p(x, y) <= 0.05 for x, y in zip(a, b, strict=True))
    cond = sum(stats.binomtest(int(y.sum()), int(x.sum() + y.sum()), 0.5,
                               alternative="greater").pvalue <= 0.05
               for x, y in zip(a, b, strict=True) if x.sum() + y.sum() > 0)
    assert stats.beta.ppf(0.025, perm, 400 - perm + 1) <= 0.05, perm
    assert stats.beta.ppf(0.025, cond, 400 - cond + 1) > 0.05, cond


def test_the_stall_test_has_its_own_share_and_spending() -> None:
    seq = ab.Sequential(alpha=0.01, planned=8, keys=2)
    shares = [seq.stall_boundary(n) for n in range(3, 9)]
    assert sum(shares) == pytest.approx(0.005 * stalls.STALL_SHARE)
    assert math.isclose(seq.tail_alpha + seq.stall_alpha, seq.key_alpha)


def test_an_early_look_with_a_huge_boundary_gives_an_unbounded_interval_not_a_crash() -> None:
    """Rule 3's first looks have boundaries in the tens or hundreds of |t|: times a wide
    spread, exp() overflowed (found replaying local's bank on 2026-11-28)."""
    a, b = rounds(21, 3), rounds(22, 3, shift=30.0)
    (d,) = [ab.decide_key(ab.KeyRounds(KEY, a, b, ab.Margin(0.1)), 0.01, boundary=1e6)]
    assert d.headline is not None and d.headline.high == float("inf")
    assert d.outcome is Comparison.UNKNOWN
