"""The A/B margin's absolute floor is the data's resolution (issue 40): the primary metric's
least step. Block maxima are whole µs; a histogram quantile is as coarse as its widest bin
(rtla timerlat hist -b N counts N µs bins), so a 10 % margin of a 20 µs p99 read off 10 µs bins
is at least one bin, never the 2 µs the share alone would claim."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from rtgate.result import load_result
from rtgate.stats import ab

KEY = ("synthetic", "rt", "idle")


def binned(seed: int, bin_us: int, n: int = 4) -> list[ab.Round]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        lat = 15 + rng.gamma(2.0, 2.0, 20_000)
        edges = (np.floor(lat / bin_us) * bin_us).astype(int)
        values, counts = np.unique(edges, return_counts=True)
        out.append(ab.Round(f"{seed}-{i}", len(lat), values.astype(float), counts, 0, 20_000,
                            bin_us=bin_us))
    return out


@pytest.mark.parametrize("bin_us", [1, 10])
def test_the_floor_is_the_widest_bin(bin_us: int) -> None:
    a, b = binned(1, bin_us), binned(2, bin_us)
    (d,) = ab.decide([ab.KeyRounds(KEY, a, b, ab.Margin(0.1), primary="p99")])
    assert d.margin.floor_us == bin_us
    assert d.headline is not None and d.margin_ratio == pytest.approx(
        1 + max(0.1, bin_us / d.headline.a_geomean_us))
    assert str(d.margin).endswith(f"(at least {bin_us} µs)")


def test_block_maxima_are_whole_microseconds_whatever_the_bins() -> None:
    a, b = binned(3, 10), binned(4, 10)
    rng = np.random.default_rng(5)
    with_blocks = [dataclasses.replace(r, blocks={0: 20 + rng.integers(0, 5, 40).astype(float)},
                                       summaries={})
                   for r in [*a, *b]]
    (d,) = ab.decide([ab.KeyRounds(KEY, with_blocks[:4], with_blocks[4:], ab.Margin(0.1))])
    assert d.headline is not None and d.headline.metric == ab.BLOCK_METRIC
    assert d.margin.floor_us == ab.RESOLUTION_US


def test_a_wider_floor_asked_for_is_kept() -> None:
    a, b = binned(6, 1), binned(7, 1)
    (d,) = ab.decide([ab.KeyRounds(KEY, a, b, ab.Margin(0.0, floor_us=3.0), primary="p99")])
    assert d.margin.floor_us == 3.0


def test_a_result_tells_its_rounds_bin() -> None:
    some = sorted((Path(__file__).parents[1] / "data" / "ab").rglob("result.json"))[0]
    result = load_result(some)
    assert ab.Round.of(result).bin_us == 1
    for t in result.threads:
        if t.histogram is not None:
            t.histogram.bucket_us = 5
    assert ab.Round.of(result).bin_us == 5


# ---- The logs' floor (issue 40, item 2): the data's resolution, not a whole µs ---------------

CYCLICTEST = Path(__file__).parents[1] / "data" / "cyclictest"


def ns_round() -> ab.Round:
    """A real -N round: the qemu-arm64 CI run's cyclictest --json and its block maxima in ns
    (tests/data/cyclictest/README.md, nsecs-straddle)."""
    from rtgate.cyclictest.parse import parse
    result = parse([CYCLICTEST / "nsecs-straddle.json", CYCLICTEST / "nsecs-straddle.blocks.txt"],
                   board="qemu-arm64")
    assert result.resolution_us == 0.001
    return ab.Round.of(result)


def test_ns_rounds_logs_keep_a_sub_microsecond_tail() -> None:
    """A fast board's tail below 1 µs (the CI round shrunk 20 000-fold, to the ns, by the
    calibration's own planted-shift function): each round keeps its own log. Floored at 1 µs,
    every round read log(1) = 0, a spread of nothing and a change of nothing."""
    from rtgate.ab import calibrate
    real = ns_round()
    rounds = [calibrate.scaled(real, f) for f in (4e-5, 5e-5, 6e-5)]
    values = [r.metric(ab.BLOCK_METRIC) for r in rounds]
    assert all(v is not None and 0.5 < v < 1 for v in values), values
    # Kept to the ns, not rounded to whole µs (which would make them 1 µs, or 0).
    assert values[1] == round(real.metric(ab.BLOCK_METRIC) * 5e-5, 3)
    logs = ab.log_values(rounds, ab.BLOCK_METRIC)
    assert logs is not None and list(logs) == pytest.approx(np.log(values))
    assert len(set(logs)) == 3 and logs.std() > 0
    assert ab.resolution(rounds, ab.BLOCK_METRIC) == 0.001


def test_the_floor_is_one_ns_for_ns_rounds_and_one_us_for_us_rounds() -> None:
    real = ns_round()
    zero = dataclasses.replace(real, blocks={t: np.zeros_like(b) for t, b in real.blocks.items()},
                               summaries={})
    logs = ab.log_values([real, zero], ab.BLOCK_METRIC)
    assert logs is not None and logs[1] == np.log(0.001)
    assert logs[0] == np.log(real.metric(ab.BLOCK_METRIC))
    us = ab.Round.of(load_result(sorted((Path(__file__).parents[1] / "data" / "ab")
                                        .rglob("result.json"))[0]))
    assert us.resolution_us == 1.0
    as_us = dataclasses.replace(zero, resolution_us=1.0, summaries={})
    assert ab.log_values([as_us], ab.BLOCK_METRIC)[0] == 0.0  # log(1 µs)


# ---- ns rounds judged at a µs record's resolution (issue 40): floored, as µs tools report -----

def rounds_of(ns: np.ndarray, blocks: int = 40) -> tuple[ab.Round, ab.Round]:
    """The same ns latencies as a -N round (log-linear ns bins, block maxima to the ns) and as
    the tool reports them without -N (cut toward zero to whole µs: 1 µs bins and maxima)."""
    from rtgate.stats.histogram import Sparse
    hist = Sparse.from_ns(ns)
    us = ns // 1000
    edges, counts = np.unique(us, return_counts=True)
    as_ns = ab.Round("ns", len(ns), hist.us, hist.counts, 0, 20_000,
                     blocks={0: np.array([b.max() for b in np.array_split(ns, blocks)]) / 1000},
                     bin_us=0.001, resolution_us=0.001)
    as_us = ab.Round("us", len(ns), edges.astype(float), counts, 0, 20_000,
                     blocks={0: np.array([b.max() for b in np.array_split(us, blocks)],
                                         dtype=float)})
    return as_ns, as_us


@pytest.mark.parametrize("scale_ns", [100, 3_000, 30_000])
def test_a_floored_ns_round_is_the_same_samples_measured_in_us(scale_ns: int) -> None:
    """Block maxima and their p90 (both records' primary metric) agree exactly: flooring
    commutes with maxima and order statistics. A histogram quantile is the lower edge of its
    log-linear bin, within 0.1 % below the ns quantile: exact where bins are 1 ns (below
    2.048 µs), else at most one µs below the µs quantile (a bin straddling a whole µs)."""
    ns = (300 + np.random.default_rng(scale_ns).gamma(2.0, scale_ns, 200_000)).astype(np.int64)
    as_ns, as_us = rounds_of(ns)
    got = ab.floored(as_ns, 1.0)
    assert (got.resolution_us, got.bin_us, got.samples) == (1.0, 1.0, as_ns.samples)
    assert int(got.counts.sum()) == len(ns) and np.all(got.values_us == np.floor(got.values_us))
    assert np.array_equal(got.blocks[0], as_us.blocks[0])
    assert got.metric(ab.BLOCK_METRIC) == as_us.metric(ab.BLOCK_METRIC)
    exacts: list[str] = []
    for q in ("p99", "p99.9"):
        mine, theirs = got.metric(q), as_us.metric(q)
        assert mine is not None and theirs is not None
        assert theirs - 1 <= mine <= theirs, (q, mine, theirs)
        exact = as_ns.metric(q)
        assert exact is not None
        if exact < 2.048:
            assert mine == theirs
            exacts.append(q)
    assert bool(exacts) == (scale_ns == 100)  # a sub-µs tail: 1 ns bins, exact
    # Judged on these, the margin's floor is the record's µs, not the data's ns.
    assert ab.resolution([got], ab.BLOCK_METRIC) == ab.resolution([got], "p99") == 1.0


def test_floored_keeps_a_round_no_finer_than_asked() -> None:
    _, as_us = rounds_of(np.arange(1000, 9000, dtype=np.int64))
    assert ab.floored(as_us, 1.0) is as_us


def test_a_real_ns_round_floored() -> None:
    """The qemu-arm64 CI run's -N round (nsecs-straddle): whole µs everywhere after."""
    real = ns_round()
    got = ab.floored(real, 1.0)
    for t, b in real.blocks.items():
        assert np.array_equal(got.blocks[t], np.floor(b))
    assert got.metric(ab.BLOCK_METRIC) == np.floor(real.metric(ab.BLOCK_METRIC))  # type: ignore[arg-type]
    assert int(got.counts.sum()) == int(real.counts.sum())
    assert got.values_us.tolist() == sorted(set(np.floor(real.values_us).tolist()))
