"""Log-linear ns bins (issue 40, item 2): HdrHistogram's layout at 3 significant digits.

The reference edges are HdrHistogram's own: hdrhistogram 0.10.3 on PyPI (the Python port of
HdrHistogram), ``HdrHistogram(1, 600_000_000_000, 3).get_lowest_equivalent_value(v)``
(hdrh/histogram.py: bucket index ``64 - clz(v | sub_bucket_mask) - (unit_magnitude +
sub_bucket_half_count_magnitude + 1)``, sub_bucket_count 2^ceil(log2(2 * 10^3)) = 2048), run once
to write this table. rtgate bins with its own numpy shift instead of calling the library: the
guests' busybox awk must bin the -v stream the same way, and 10^8 samples are binned at once.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from rtgate.cyclictest.parse import parse
from rtgate.report import bins
from rtgate.result import NSEC_US, Histogram
from rtgate.stats import ab
from rtgate.stats.histogram import RELATIVE_ERROR, Sparse, log_linear, percentile

DATA = Path(__file__).parents[1] / "data" / "cyclictest"
HDRHISTOGRAM = [
    (0, 0), (1, 1), (2, 2), (13, 13), (453, 453), (2015, 2015), (2047, 2047), (2048, 2048),
    (2049, 2048), (2051, 2050), (4095, 4094), (4096, 4096), (4099, 4096), (4948, 4948),
    (8690, 8688), (11916, 11912), (117756, 117696), (123457, 123456), (245354, 245248),
    (1006253, 1006080), (1370713, 1370112), (11899130, 11894784), (59228289, 59211776),
    (709240109, 708837376), (999999999, 999817216), (4646229289, 4643094528),
    (18375879991, 18371051520), (179042728685, 178912231424), (373043442172, 372856848384),
    (600000000000, 599684808704)]


def test_the_edges_are_hdrhistograms() -> None:
    values = np.array([v for v, _ in HDRHISTOGRAM], dtype=np.int64)
    assert log_linear(values).tolist() == [e for _, e in HDRHISTOGRAM]


def test_every_latency_is_within_the_stated_error_above_its_edge() -> None:
    values = np.unique(np.random.default_rng(40).integers(1, 10**12, 200_000))
    edges = log_linear(values)
    assert (edges <= values).all()
    assert ((values - edges) < np.maximum(edges * RELATIVE_ERROR, 1)).all()
    assert RELATIVE_ERROR < 0.001  # "3 significant digits"
    exact = values[values < 2048]
    assert (log_linear(exact) == exact).all()


def test_the_number_of_bins_grows_with_the_log_of_the_range() -> None:
    # Every ns from 0 to 2^k: 2048 exact bins, then 1024 per doubling.
    for k in (11, 16, 20):
        assert len(np.unique(log_linear(np.arange(2**k + 1)))) == 2048 + 1024 * (k - 11) + 1
    # One ns to ten minutes: some 31 000 bins, where 1 µs bins would be 6·10^8.
    top = log_linear(np.array([600 * 10**9]))[0]
    assert 2048 + 1024 * (int(top).bit_length() - 11) < 32_000


def test_quantiles_are_read_off_the_bins_lower_edges() -> None:
    ns = np.array([900, 1500, 7003, 7004, 7005, 7006, 7007, 9001], dtype=np.int64)
    hist = Sparse.from_ns(ns)
    assert hist.pairs() == [(0.9, 1), (1.5, 1), (7.0, 1), (7.004, 4), (9.0, 1)]
    p = percentile(hist, 0, None, 50.0)
    assert p is not None and p.value_us == 7.004


def test_a_result_holds_only_edges_of_its_own_layout() -> None:
    Histogram(limit_us=10, buckets=[(7.004, 1), (8.992, 2)], log_linear=True)
    with pytest.raises(ValidationError, match="no lower edge"):
        Histogram(limit_us=10, buckets=[(7.005, 1)], log_linear=True)  # 7005 ns: inside 7004's
    with pytest.raises(ValidationError, match="no lower edge"):
        Histogram(limit_us=10, buckets=[(7.004, 1)])  # µs bins are whole
    old = Histogram.model_validate({"limit_us": 10, "buckets": [[7, 1]]})
    assert old.buckets == [(7, 1)] and isinstance(old.buckets[0][0], int)
    # A µs histogram is written byte for byte as before the field existed.
    assert '"buckets":[[7,1]]' in old.model_dump_json()
    assert "log_linear" not in old.model_dump_json()


def test_plots_draw_ns_bins_at_whole_microseconds() -> None:
    """The site's and the sweep's plots keep their 1 µs look: a -N run's bins are counted in
    the whole µs their lower edge lies in."""
    ns = np.array([900, 999, 1000, 7003, 7999, 16_999, 17_001], dtype=np.int64)
    assert bins.whole_us(Sparse.from_ns(ns).pairs()) == {0: 2, 1: 1, 7: 2, 16: 2}
    assert bins.whole_us([(3, 4), (5, 1)]) == {3: 4, 5: 1}  # µs bins as they are


def test_an_ns_round_has_ns_resolution() -> None:
    result = parse([DATA / "nsecs-verbose-quiet.txt"])
    r = ab.Round.of(result)
    assert r.bin_us == NSEC_US and r.resolution_us == NSEC_US
    assert ab.resolution([r], ab.BLOCK_METRIC) == NSEC_US == ab.resolution([r], "p99")
    assert result.totals.p99 is not None and r.metric("p99") == result.totals.p99.value_us
    us = ab.Round.of(parse([DATA / "verbose-hist.txt"]))
    assert ab.resolution([us], ab.BLOCK_METRIC) == 1.0
