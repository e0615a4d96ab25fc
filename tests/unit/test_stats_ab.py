"""rtgate.stats.ab on synthetic rounds with known truth (seeded) and on recorded rounds
(tests/data/ab): identical inputs are same, a planted shift is worse and its mirror better, the
registered metric is the one tested, too few rounds are unknown, and the group-sequential
boundaries spend alpha exactly."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from rtgate.outcome import Comparison
from rtgate.result import load_result
from rtgate.stats import ab

DATA = Path(__file__).resolve().parents[1] / "data" / "ab"

KEY = ("synthetic", "rt", "idle")


def synthetic_round(rng: np.random.Generator, name: str, *, shift: float = 0.0,
                    tail_scale: float = 4.0, samples: int = 20_000, threads: int = 2,
                    block: int = 500) -> ab.Round:
    """A round of a kernel whose latency is 5 µs + gamma body + a GPD tail, with a boot-to-boot
    offset of its own (what makes rounds, not samples, the replicates), on a 1 µs grid."""
    offset = rng.normal(0, 0.7)
    body = 5 + offset + shift + rng.gamma(2.0, 1.5, samples)
    tail = rng.random(samples) < 0.01
    body[tail] += stats.genpareto.rvs(0.1, scale=tail_scale, size=tail.sum(), random_state=rng)
    us = np.floor(np.maximum(body, 0)).astype(int)
    values, counts = np.unique(us, return_counts=True)
    per_thread = np.array_split(us, threads)
    blocks = {t: np.array([c.max() for c in np.array_split(x, len(x) // block)], dtype=float)
              for t, x in enumerate(per_thread)}
    return ab.Round(name, samples, values.astype(float), counts, 0, 20_000, blocks)


def rounds(seed: int, n: int, **kw: float) -> list[ab.Round]:
    rng = np.random.default_rng(seed)
    return [synthetic_round(rng, f"{seed}-{i}", **kw) for i in range(n)]


def without_blocks(rs: list[ab.Round]) -> list[ab.Round]:
    return [ab.Round(r.run_id, r.samples, r.values_us, r.counts, r.overflows, r.limit_us)
            for r in rs]


def test_identical_inputs_are_same() -> None:
    a = rounds(1, 6)
    (d,) = ab.decide([ab.KeyRounds(KEY, a, a, ab.Margin(0.2))])
    assert d.outcome is Comparison.SAME, d
    assert d.headline is not None and d.headline.metric == "block max p90"
    assert d.headline.ratio == 1 and 1 / 1.2 <= d.headline.low < 1 < d.headline.high <= 1.2
    assert {e.metric for e in d.effects} == {"p99", "p99.9", "block max p90"}
    assert d.statistic == 0


def test_a_planted_shift_is_worse_and_the_reverse_exactly_as_strictly_better() -> None:
    a, b = rounds(2, 6), rounds(3, 6, shift=12.0)
    (d,) = ab.decide([ab.KeyRounds(KEY, a, b, ab.Margin(0.03))])
    assert d.outcome is Comparison.WORSE, d
    assert d.headline is not None and d.headline.low > 1.03
    (back,) = ab.decide([ab.KeyRounds(KEY, b, a, ab.Margin(0.03))])
    assert back.outcome is Comparison.BETTER, back
    # One statistic, one boundary: the reverse is the mirror image.
    assert back.statistic == pytest.approx(-d.statistic) and back.boundary == d.boundary
    assert back.headline is not None and back.headline.high == pytest.approx(1 / d.headline.low)


def test_the_registered_primary_metric_is_the_one_tested() -> None:
    """A heavier tail with the body unchanged: p99 moves by about 12 %, within a 25 % margin, so a
    key registered on p99 is same where the block-max p90 (+600 %) is worse."""
    a, b = rounds(4, 6), rounds(5, 6, tail_scale=40.0)
    (tail,) = ab.decide([ab.KeyRounds(KEY, a, b, ab.Margin(0.25))])
    assert tail.outcome is Comparison.WORSE, tail
    # Without block maxima (no stall test) the p99 key is same: its tail test alone decides.
    (body,) = ab.decide([ab.KeyRounds(KEY, without_blocks(a), without_blocks(b), ab.Margin(0.25),
                                      primary="p99")])
    assert body.headline is not None and body.headline.metric == "p99"
    assert body.outcome is Comparison.SAME, body
    # With them, the stall test beside it sees the heavier tail's blocks: worse (rule 3).
    (both,) = ab.decide([ab.KeyRounds(KEY, a, b, ab.Margin(0.25), primary="p99")])
    assert both.headline is not None and both.headline.metric == "p99"
    assert both.stalls is not None and both.stalls.worse and both.outcome is Comparison.WORSE
    assert [e.metric for e in both.effects] == [e.metric for e in tail.effects]


def test_without_block_maxima_the_default_primary_is_p999() -> None:
    a = without_blocks(rounds(6, 4))
    (d,) = ab.decide([ab.KeyRounds(KEY, a, a, ab.Margin(0.3))])
    assert d.headline is not None and d.headline.metric == "p99.9"
    assert d.outcome is Comparison.SAME


def test_too_little_data_is_unknown() -> None:
    a, b = rounds(6, 2), rounds(7, 2, shift=50.0)
    (d,) = ab.decide([ab.KeyRounds(KEY, a, b, ab.Margin(0.03))])
    assert d.outcome is Comparison.UNKNOWN
    assert d.reasons == ["A has 2 round(s), fewer than 3", "B has 2 round(s), fewer than 3"]
    assert d.headline is None and d.effects == []


def test_min_samples_apply_to_a_sides_rounds_together() -> None:
    a = rounds(8, 4)
    (d,) = ab.decide([ab.KeyRounds(KEY, a, a, ab.Margin(0.5), min_samples=80_001)])
    assert d.outcome is Comparison.UNKNOWN
    assert "A's rounds hold 80000 samples, fewer than min_samples 80001" in d.reasons
    (ok,) = ab.decide([ab.KeyRounds(KEY, a, a, ab.Margin(0.5), min_samples=80_000)])
    assert ok.outcome is Comparison.SAME


def test_the_margin_is_a_share_never_finer_than_the_histograms_resolution() -> None:
    m = ab.Margin(0.1)
    assert m.ratio(100.0) == pytest.approx(1.1)
    assert m.ratio(5.0) == pytest.approx(1.2)  # 1 µs of 5 µs
    assert m.ratio(0.0) == pytest.approx(2.0)  # the baseline itself below the resolution
    assert str(m) == "×1.1 either way, B/A in [0.909, 1.1] (at least 1 µs)"


def test_a_quantile_beyond_the_histogram_or_the_sample_count_is_not_used() -> None:
    r = rounds(9, 1, samples=2000, block=100)[0]
    # 2000 samples: no exact interval for p99.9 exists (its upper order statistic would be > n).
    assert ab.round_quantile(r, 0.999, 0.99) is None
    assert ab.round_quantile(r, 0.99, 0.99) is not None
    full = rounds(10, 1)[0]
    p999 = ab.round_quantile(full, 0.999, 0.99)
    assert p999 is not None
    # A histogram whose limit falls inside that interval: the quantile is not known.
    keep = full.values_us < p999.high_us
    cut = ab.Round(full.run_id, full.samples, full.values_us[keep], full.counts[keep],
                   int(full.counts[~keep].sum()), int(p999.high_us))
    assert ab.round_quantile(cut, 0.999, 0.99) is None
    assert ab.round_quantile(cut, 0.99, 0.99) == ab.round_quantile(full, 0.99, 0.99)


@pytest.mark.parametrize("q", [0.5, 0.99])
def test_the_round_quantile_interval_is_scipys_exact_binomial_interval(q: float) -> None:
    rng = np.random.default_rng(11)
    x = rng.integers(0, 400, 3000)
    values, counts = np.unique(x, return_counts=True)
    r = ab.Round("r", len(x), values.astype(float), counts, 0, 1000)
    got = ab.round_quantile(r, q, 0.95)
    ci = stats.quantile_test(x, q=np.quantile(x, q), p=q).confidence_interval(0.95)
    assert got is not None and (got.low_us, got.high_us) == (ci.low, ci.high)
    assert got.value_us == np.quantile(x, q, method="inverted_cdf")


def test_the_boundaries_spend_alpha_exactly_over_the_looks() -> None:
    """Under the null (normal logs, any variance) the chance of crossing at some look is alpha,
    not less (as Bonferroni's split gives) nor more: checked on fresh sequences (another seed
    than the boundaries'); the first boundary is the t quantile of the first increment."""
    alpha, planned, paths = 0.05, 6, 40_000
    c = ab.boundaries(alpha, planned)
    assert c[0] == pytest.approx(stats.t.isf(ab.increment(alpha, 3, planned) / 2, 4))
    bonferroni = [stats.t.isf(ab.increment(alpha, n, planned) / 2, 2 * n - 2)
                  for n in range(3, planned + 1)]
    assert all(x <= y + 1e-9 for x, y in zip(c, bonferroni, strict=True))
    assert c[-1] < bonferroni[-1] - 0.05
    rng = np.random.default_rng(7)
    x = rng.normal(3.0, 0.4, (2, paths, planned))
    crossed = np.zeros(paths, dtype=bool)
    for n, bound in zip(range(3, planned + 1), c, strict=True):
        d, se, _ = np.vectorize(lambda i, n=n: ab.student(x[0, i, :n], x[1, i, :n]),
                                otypes=[float, float, int])(np.arange(paths))
        crossed |= np.abs(d / se) >= bound
    ci = stats.binomtest(int(crossed.sum()), paths).proportion_ci(0.999)
    assert ci.low <= alpha <= ci.high, crossed.mean()


def first_crossings(c: tuple[float, ...], planned: int, paths: int, seed: int) -> np.ndarray:
    """The share of fresh null sequences (normal logs, both sides alike) that first cross the
    boundaries ``c`` at each look (vectorised, not through ab's own simulation)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((2, paths, planned))
    alive = np.ones(paths, dtype=bool)
    shares = []
    for n, bound in zip(range(ab.MIN_ROUNDS, planned + 1), c, strict=True):
        a, b = x[0, :, :n], x[1, :, :n]
        ss = ((a - a.mean(axis=1, keepdims=True)) ** 2).sum(axis=1) \
            + ((b - b.mean(axis=1, keepdims=True)) ** 2).sum(axis=1)
        t = (b.mean(axis=1) - a.mean(axis=1)) / np.sqrt(ss / (2 * n - 2) * 2 / n)
        hit = alive & (np.abs(t) >= bound)
        shares.append(hit.mean())
        alive &= ~hit
    return np.array(shares)


@pytest.mark.parametrize(("alpha", "planned"), [(0.1, 15), (0.05, 20)])
def test_every_look_spends_its_own_increment(alpha: float, planned: int) -> None:
    """At a large alpha with many looks each look's first-crossing share on fresh sequences is
    its spending increment, not a fraction of it (the fixed point the boundaries were once
    solved by left looks of this plan spending 0 to 15 % of theirs, 82 % of alpha in all)."""
    paths = 100_000
    c = ab.boundaries(alpha, planned)
    got = first_crossings(c, planned, paths, seed=11)
    goal = np.array([ab.increment(alpha, n, planned) for n in range(ab.MIN_ROUNDS, planned + 1)])
    # Monte Carlo error of both simulations (the boundaries' PATHS and these paths), 5 sd.
    sd = np.sqrt(goal * (1 - goal) * (1 / paths + 1 / ab.PATHS))
    assert np.all(np.abs(got - goal) <= 5 * sd), np.round(got / goal, 2).tolist()
    total_sd = math.sqrt(alpha * (1 - alpha) * (1 / paths + 1 / ab.PATHS))
    assert abs(got.sum() - alpha) <= 5 * total_sd, got.sum()


def test_alpha_is_split_evenly_over_keys() -> None:
    seq = ab.Sequential(alpha=0.01, planned=6, keys=4)
    assert seq.key_alpha == 0.0025
    # The key's alpha split between its tail test and its stall test.
    assert seq.tail_alpha + seq.stall_alpha == pytest.approx(0.0025)
    assert seq.boundary(3) == ab.boundaries(seq.tail_alpha, 6)[0]
    two = [ab.KeyRounds((f"b{k}", "rt", "idle"), rounds(1, 4), rounds(1, 4), ab.Margin(0.1))
           for k in range(2)]
    assert [d.alpha for d in ab.decide(two, 0.01)] == [0.005, 0.005]


def test_a_gross_shift_is_worse_at_the_gates_first_look() -> None:
    """The gate's plan (6 rounds a side, alpha 0.01, both flavors) looks first at 3 rounds a
    side: a candidate far worse in every round is worse there."""
    seq = ab.Sequential(alpha=0.01, planned=6, keys=2)
    family = [ab.KeyRounds(("synthetic", flavor, "idle"), rounds(30 + k, 3),
                            rounds(40 + k, 3, shift=60.0), ab.Margin(0.05))
              for k, flavor in enumerate(("stock", "rt"))]
    look = seq.look(3, family)
    assert [d.outcome for d in look.decisions] == [Comparison.WORSE] * 2, look.decisions


def recorded(name: str) -> list[ab.Round]:
    return [ab.Round.of(load_result(p)) for p in sorted((DATA / name).glob("r*/result.json"))]


def test_recorded_rounds_a_planted_load_is_worse_and_an_a_a_pair_is_not() -> None:
    """tests/data/ab: the running kernel idle (A), again (A'), and under a planted FIFO load
    (B), 6 rounds each, 4 s, no block maxima (p99.9 is the primary)."""
    a, again, loaded = recorded("idle"), recorded("idle-again"), recorded("idle-loaded")
    assert len(a) == len(again) == len(loaded) == 6
    margin = ab.Margin(0.2)
    (worse,) = ab.decide([ab.KeyRounds(KEY, a, loaded, margin)], 0.01)
    assert worse.outcome is Comparison.WORSE, worse
    (aa,) = ab.decide([ab.KeyRounds(KEY, a, again, margin)], 0.01)
    assert aa.outcome in (Comparison.SAME, Comparison.UNKNOWN), aa


def test_a_margin_past_100_percent_reads_as_a_factor() -> None:
    """A bisect's margin may exceed 100 %: "± 900 %" would read as a latency below zero."""
    assert str(ab.Margin(0.1)) == "×1.1 either way, B/A in [0.909, 1.1] (at least 1 µs)"
    assert str(ab.Margin(9.0)) == "×10 either way (at least 1 µs)"
    assert ab.Margin(9.0).ratio(1000.0) == 10.0
