"""The verbose reader: its fast block decoder must agree with the line reader on every shape."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from rtgate.cyclictest.formats import verbose
from rtgate.cyclictest.parse import parse
from rtgate.errors import InputError

HEADER = "Max CPUs = 2\nOnline CPUs = 2\n# /dev/cpu_dma_latency set to 0us\n" \
         "Thread 0 Interval: 1500\nThread 1 Interval: 2000\n"


def samples(n: int, seed: int = 3) -> list[tuple[int, int, int]]:
    rng = np.random.default_rng(seed)
    lat = rng.integers(1, 300, n)
    return [(i % 2, i // 2, int(v)) for i, v in enumerate(lat)]


def write(path: Path, rows: list[tuple[int, int, int]], fmt: str) -> Path:
    path.write_text(HEADER + "".join(fmt.format(*r) for r in rows))
    return path


def naive(rows: list[tuple[int, int, int]]) -> dict[int, Counter[int]]:
    out: dict[int, Counter[int]] = {}
    for t, _, v in rows:
        out.setdefault(t, Counter())[v] += 1
    return out


@pytest.mark.parametrize("fmt", ["{:8d}:{:8d}:{:8d}\n", "{}:{}:{}\n", "{:3d}: {:9d}: {:5d}\n"],
                         ids=["cyclictest-width", "unpadded", "other-widths"])
def test_every_line_shape_gives_the_exact_histogram(tmp_path: Path, fmt: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    rows = samples(5000)
    # Small blocks: many block boundaries, each in the middle of the data.
    monkeypatch.setattr(verbose, "BLOCK_BYTES", 4096)
    r = parse([write(tmp_path / "v.txt", rows, fmt)])
    expected = naive(rows)
    for t in r.threads:
        assert t.histogram is not None
        assert dict(t.histogram.buckets) == dict(expected[t.thread])
    assert r.status == "complete"


@pytest.mark.parametrize("fmt", ["{:8d}:{:8d}:{:8d}\n", "{:3d}: {:9d}: {:5d}\n",
                                 "{:1d}:{:8d}:{:3d}\n", "{:1d}:{:3d}:{:4d}\n"])
def test_fast_decoder_reads_every_fixed_width(fmt: str) -> None:
    rows = [(t, c, v) for t, c, v in samples(400)] + [(1, 5, 99)]
    data = "".join(fmt.format(*r) for r in rows).encode()
    decoded = verbose._fixed_width(data)
    assert decoded is not None
    assert decoded.tolist() == [list(r) for r in rows]


@pytest.mark.parametrize("bad", ["       0:      1x:       5\n", "       0:       1:     5 \n",
                                 "       0:       1:    5 5\n", "       0:       1;       5\n"])
def test_fast_decoder_refuses_a_block_with_one_bad_line(bad: str) -> None:
    good = "".join("{:8d}:{:8d}:{:8d}\n".format(*r) for r in samples(100))
    assert verbose._fixed_width((good + bad + good).encode()) is None


def test_cycle_numbers_beyond_10_to_the_8_are_decoded() -> None:
    rows = [(0, 99_999_999, 7), (0, 100_000_000, 8), (0, 123_456_789_012, 9)]
    data = "".join("{:8d}:{:12d}:{:8d}\n".format(*r) for r in rows).encode()
    decoded = verbose._fixed_width(data)
    assert decoded is not None and decoded.tolist() == [list(r) for r in rows]


@pytest.mark.parametrize("block", [4096, 1 << 20])
def test_skipped_cycle_numbers_are_lost_samples_and_make_it_partial(
        tmp_path: Path, block: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verbose, "BLOCK_BYTES", block)
    rows = [r for r in samples(6000) if not (r[0] == 1 and 1000 <= r[1] < 1040)]
    r = parse([write(tmp_path / "v.txt", rows, "{:8d}:{:8d}:{:8d}\n")])
    assert r.status == "partial"
    # The samples' count, and the blocks' check (the same the reducer's file gets) naming where.
    assert r.reasons == ["v.txt: thread 1: 40 samples missing (cycle numbers skip)",
                         "thread 1: the -v stream skipped from cycle 1000 to 1040: samples lost"]


def test_cycle_numbers_going_back_are_refused_at_their_line(tmp_path: Path) -> None:
    rows = samples(3000)
    rows[2000] = (rows[2000][0], 3, rows[2000][2])
    with pytest.raises(InputError, match="line 2006: thread 0 cycle 3 after cycle 999"):
        parse([write(tmp_path / "v.txt", rows, "{:8d}:{:8d}:{:8d}\n")])


def test_mixed_widths_after_the_fast_path_still_count(tmp_path: Path) -> None:
    rows = samples(1000)
    text = HEADER + "".join("{:8d}:{:8d}:{:8d}\n".format(*r) for r in rows[:500])
    text += "".join("{}:{}:{}\n".format(*r) for r in rows[500:])
    f = tmp_path / "v.txt"
    f.write_text(text)
    r = parse([f])
    assert r.totals.samples == 1000


def test_huge_latency_is_kept_exactly_without_a_huge_array(tmp_path: Path) -> None:
    rows = samples(100) + [(1, 50, 30_000_000)]  # a 30 s stall
    r = parse([write(tmp_path / "v.txt", rows, "{:8d}:{:8d}:{:8d}\n")])
    t1 = r.threads[1]
    assert t1.max_us == 30_000_000 and t1.histogram is not None
    assert t1.histogram.buckets[-1] == (30_000_000, 1)
    assert r.totals.p99_99 is not None and r.totals.p99_99.value_us == 30_000_000


def test_bad_line_is_named_even_deep_inside_a_fast_block(tmp_path: Path) -> None:
    rows = samples(3000)
    lines = [("{:8d}:{:8d}:{:8d}\n".format(*r)) for r in rows]
    lines[2500] = "       0:    1250:      1x\n"
    f = tmp_path / "v.txt"
    f.write_text(HEADER + "".join(lines))
    with pytest.raises(InputError, match=r"line 2506: expected 'thread: cycle: latency'"):
        parse([f])


def test_no_sample_at_all_is_an_error(tmp_path: Path) -> None:
    f = tmp_path / "v.txt"
    f.write_text(HEADER)
    with pytest.raises(InputError, match="without any"):
        parse([f])


def test_warn_lines_among_the_samples_are_notes(tmp_path: Path) -> None:
    rows = samples(5000)
    plain = parse([write(tmp_path / "plain.txt", rows, "{:8d}:{:8d}:{:8d}\n")])
    lines = (tmp_path / "plain.txt").read_text().splitlines(keepends=True)
    warned = tmp_path / "warned.txt"
    warned.write_text("".join([*lines[:2000], "WARN: stat /dev/cpu_dma_latency failed\n",
                               *lines[2000:]]))
    r = parse([warned])
    assert r.notes == [
        "warned.txt line 3: cyclictest's message, skipped: '# /dev/cpu_dma_latency set to 0us'",
        "warned.txt line 2001: cyclictest's message, skipped: "
        "'WARN: stat /dev/cpu_dma_latency failed'"]
    assert [t.histogram for t in r.threads] == [t.histogram for t in plain.threads]
    assert [t.avg_truncated for t in r.threads] == [False, False]
