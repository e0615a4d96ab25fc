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
