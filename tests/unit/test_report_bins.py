"""Log-spaced latency bins and histogram tables that cost their non-empty buckets."""

from __future__ import annotations

from rtgate.report import bins, plots


def test_edges_are_every_microsecond_then_twenty_a_decade() -> None:
    assert bins.EDGES[:21] == tuple(range(21))
    decade = [e for e in bins.EDGES if 1000 <= e < 10_000]
    assert len(decade) == bins.PER_DECADE
    ratios = [b / a for a, b in zip(bins.EDGES[30:], bins.EDGES[31:], strict=False)]
    assert all(1.05 < r < 1.2 for r in ratios)


def test_rebin_keeps_every_sample_in_the_bin_of_its_bucket() -> None:
    buckets = [(0, 3), (7, 1), (19_999, 2), (21, 5), (5_000_000, 1)]
    binned = bins.rebin(buckets)
    assert sum(binned.values()) == 12
    assert binned[0] == 3 and binned[7] == 1 and binned[bins.lower_edge(19_999)] == 2
    for lo in binned:
        assert lo in bins.EDGES
    assert bins.lower_edge(21) <= 21 < bins.upper_edge(bins.lower_edge(21))


def test_a_histogram_table_costs_its_filled_buckets_never_its_range() -> None:
    # Three filled buckets across a 100 s range: a handful of rows, not one per µs.
    columns = [("CPU0", {3: 10, 150: 2, 99_999_000: 1}), ("CPU1", {4: 7})]
    table = plots.histogram_table("latency_us", columns, 100_000_000, log=True)
    rows = table.splitlines()[1:]
    assert len(rows) <= 2 * 4
    assert rows[0].split() == [str(bins.lower_edge(3)), "10", "0"]
    narrow = plots.histogram_table("latency_us", [("CPU0", {5: 3, 6: 1, 9: 2})], 12, log=False)
    # Each run of filled buckets closes with a zero row so that the steps drop between them.
    assert narrow.splitlines()[1:] == ["5 3", "6 1", "7 0", "9 2", "10 0"]
