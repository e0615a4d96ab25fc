"""rtgate.stats.ab on synthetic rounds with known truth (seeded): identical inputs are same, a
planted shift is worse, too few rounds are unknown, and the family-wise false-alarm rate holds."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from rtgate.outcome import Comparison
from rtgate.stats import ab

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
    (d,) = ab.decide([ab.KeyRounds(KEY, a, a, min_effect_us=8)])
    assert d.outcome is Comparison.SAME, d
    assert d.headline is not None and d.headline.metric == "p99.9"
    assert d.headline.estimate_us == 0 and -8 <= d.headline.low_us < 0 < d.headline.high_us <= 8
    assert {e.metric for e in d.effects} == {"p99", "p99.9", "block max p90"}
    # Two threads × three block-maxima tests, plus one round test per metric.
    assert len(d.tests) == 9 and not any(t.rejected for t in d.tests)


def test_a_planted_shift_is_worse_with_its_size_inside_the_interval() -> None:
    a, b = rounds(2, 6), rounds(3, 6, shift=12.0)
    (d,) = ab.decide([ab.KeyRounds(KEY, a, b, min_effect_us=3)])
    assert d.outcome is Comparison.WORSE, d
    assert d.headline is not None and d.headline.low_us <= 12 <= d.headline.high_us
    assert d.headline.low_us > 3
    # The other way round the candidate is better, and nothing rejects.
    (back,) = ab.decide([ab.KeyRounds(KEY, b, a, min_effect_us=3)])
    assert back.outcome is Comparison.BETTER, back
    assert not any(t.rejected for t in back.tests)


def test_a_heavier_tail_alone_is_worse() -> None:
    """Same body and centre, only the tail grows: the tail tests see it."""
    a, b = rounds(4, 6), rounds(5, 6, tail_scale=40.0)
    (d,) = ab.decide([ab.KeyRounds(KEY, a, b, min_effect_us=3)])
    assert d.outcome is Comparison.WORSE, d
    p99 = next(e for e in d.effects if e.metric == "p99")
    assert abs(p99.estimate_us) < 3  # the 99th percentile barely moves
    assert any(t.rejected and "block maxima" in t.name for t in d.tests)


def test_too_little_data_is_unknown() -> None:
    a, b = rounds(6, 2), rounds(7, 2, shift=50.0)
    (d,) = ab.decide([ab.KeyRounds(KEY, a, b, min_effect_us=3)])
    assert d.outcome is Comparison.UNKNOWN
    assert d.reasons == ["A has 2 round(s), fewer than 3", "B has 2 round(s), fewer than 3"]
    assert d.headline is None and d.tests == []


def test_min_samples_apply_to_a_sides_rounds_together() -> None:
    a = rounds(8, 4)
    (d,) = ab.decide([ab.KeyRounds(KEY, a, a, min_effect_us=50, min_samples=80_001)])
    assert d.outcome is Comparison.UNKNOWN
    assert "A's rounds hold 80000 samples, fewer than min_samples 80001" in d.reasons
    (ok,) = ab.decide([ab.KeyRounds(KEY, a, a, min_effect_us=50, min_samples=80_000)])
    assert ok.outcome is Comparison.SAME


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


def family_alarms(trials: int, alpha: float, keys: int = 4) -> tuple[int, int]:
    """A/A checks of ``keys`` keys each (seeded): how many said 'worse' anywhere under Holm, and
    how many had some test below alpha uncorrected."""
    rng = np.random.default_rng(12)
    alarms = uncorrected = 0

    def side() -> list[ab.Round]:
        return without_blocks([synthetic_round(rng, "r", samples=10_000) for _ in range(5)])

    for _ in range(trials):
        family = [ab.KeyRounds((f"b{k}", "rt", "idle"), side(), side(), min_effect_us=1)
                  for k in range(keys)]
        decisions = ab.decide(family, alpha)
        alarms += any(d.outcome is Comparison.WORSE for d in decisions)
        uncorrected += any(t.p <= alpha for d in decisions for t in d.tests)
    return alarms, uncorrected


def test_the_family_wise_false_alarm_rate_holds_across_keys_and_metrics() -> None:
    """A/A checks, each of four keys × two metrics: 'worse' anywhere in a check is a false alarm.
    Holm keeps these ten free of one; without it more than alpha of the same checks alarm (so
    this test catches a missing correction). benchmarks/monte_carlo.py runs 200 checks and
    bounds both rates with their confidence intervals."""
    alpha, trials = 0.05, 10
    alarms, uncorrected = family_alarms(trials, alpha)
    assert alarms / trials <= alpha, alarms
    assert uncorrected / trials > alpha, uncorrected



def _speed_bench():  # type: ignore[no-untyped-def]
    """benchmarks/ab_speed.py holds the reference: scipy's functions called once per split."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).parents[2] / "benchmarks" / "ab_speed.py"
    spec = importlib.util.spec_from_file_location("ab_speed", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(("seed", "n_b", "n_a", "shift", "sampled"), [
    (21, 3, 3, 0.0, False), (22, 4, 5, 2.0, False), (23, 5, 5, -3.0, False),
    (24, 6, 4, 8.0, False), (25, 5, 6, 0.0, True), (26, 6, 6, 3.0, True)])
def test_vectorised_block_tests_equal_scipys_functions_per_split(
        seed: int, n_b: int, n_a: int, shift: float, sampled: bool,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Every statistic and p-value of the vectorised round-split tests is what scipy's
    mannwhitneyu, ks_2samp, anderson_ksamp and np.quantile give on each split's pooled blocks
    (exact enumeration, and the seeded sample when there are too many splits)."""
    bench = _speed_bench()
    if sampled:
        monkeypatch.setattr(ab, "EXACT_PERMUTATIONS", 100)
        monkeypatch.setattr(ab, "SAMPLED_PERMUTATIONS", 499)
    rng = np.random.default_rng(seed)
    b, a = bench.blocks(rng, n_b, shift=shift), bench.blocks(rng, n_a)
    want = bench.reference_block_tests(1, b, a)
    got = ab._block_tests(1, b, a)
    assert [t.name for t in got] == [t.name for t in want]
    assert [t.p for t in got] == [t.p for t in want]
    np.testing.assert_allclose([t.statistic for t in got], [t.statistic for t in want],
                               rtol=1e-12, atol=1e-12)


def test_block_tests_when_every_block_is_the_same_value() -> None:
    """No distinct values: scipy's AD refuses; the split cannot matter, so p = 1."""
    same = [np.full(4, 12.0) for _ in range(6)]
    results = ab._block_tests(0, same[:3], same[3:])
    assert [t.p for t in results] == [1.0, 1.0, 1.0]


def test_a_gross_shift_is_worse_at_the_gates_first_look() -> None:
    """The gate's plan (6 rounds a side, alpha 0.01, both flavors in one family) looks first at 3
    rounds a side: a candidate far worse in every round is worse there. A permutation of rounds
    gives no p-value below 1/20 at 3 a side (1/924 at 6) — above every Holm threshold of such a
    family — so a test made of those alone left a candidate 1 s worse per round unknown."""
    seq = ab.Sequential(alpha=0.01, planned=6)
    family = [ab.KeyRounds(("synthetic", flavor, "idle"), rounds(30 + k, 3),
                            rounds(40 + k, 3, shift=60.0), min_effect_us=5)
              for k, flavor in enumerate(("stock", "rt"))]
    look = seq.look(3, family)
    assert [d.outcome for d in look.decisions] == [Comparison.WORSE] * 2, look.decisions
    assert all(any(t.rejected and "Welch" in t.name for t in d.tests) for d in look.decisions)
