"""`rtgate parse` of a -v log records per-thread block maxima, reduced and checked as `rtgate bench`
records them (blocks of one second's cycles; blockcheck against the run's histogram).
The reducer itself (blockmaxima.awk) against this reading: tests/integration/test_verbose_awk.py."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from clirun import RunCli

from rtgate.cyclictest.formats import verbose
from rtgate.cyclictest.parse import parse
from rtgate.result import load_result

DATA = Path(__file__).parents[1] / "data" / "cyclictest"
REALWORLD = Path(__file__).parents[1] / "data" / "realworld"


def samples_of(path: Path) -> dict[int, np.ndarray]:
    """Each thread's latencies in printed order, by a regular expression alone."""
    rows = [tuple(map(int, m.groups())) for m in
            re.finditer(r"^ *(\d+): *(\d+): *(\d+)$", path.read_text(), re.MULTILINE)]
    return {t: np.array([v for n, _, v in rows if n == t]) for t in sorted({r[0] for r in rows})}


def expected_maxima(latencies: np.ndarray, block: int) -> list[int]:
    return [int(latencies[i:i + block].max()) for i in range(0, len(latencies), block)]


@pytest.mark.parametrize("chunks", [[1], [7, 1, 5000], [999, 1000, 1001], [3000]])
def test_the_reduction_does_not_depend_on_how_the_samples_arrive(chunks: list[int]) -> None:
    rng = np.random.default_rng(7)
    latencies = rng.integers(1, 10_000, 4321)
    blocks = verbose._Blocks(1000)
    at, k = 0, 0
    while at < len(latencies):
        size = chunks[k % len(chunks)]
        blocks.add(latencies[at:at + size])
        at, k = at + size, k + 1
    assert blocks.maxima() == expected_maxima(latencies, 1000)


def test_a_two_thread_log_gets_one_second_blocks_per_thread() -> None:
    """verbose.txt: `-i1000 -t` on 2 CPUs with cyclictest's default -d 500: the header prints
    1500 and 2000, so thread 0 wakes every 1000 µs and thread 1 every 1500 µs."""
    r = parse([DATA / "verbose.txt"])
    assert r.status == "complete"
    printed = samples_of(DATA / "verbose.txt")
    for t, block in zip(r.threads, (1000, 666), strict=True):
        assert t.blocks is not None
        assert t.blocks.block_cycles == block
        assert t.blocks.cycles == t.samples == len(printed[t.thread])
        assert t.blocks.maxima_us == expected_maxima(printed[t.thread], block)
        assert max(t.blocks.maxima_us) == t.max_us


def test_with_its_json_the_unprinted_last_cycles_are_accounted_for() -> None:
    """The same run's --json counts the cycles cyclictest measured but never printed; without a
    -h histogram their latencies are unknown, so the last block is left out, with a note."""
    r = parse([DATA / "verbose-json.stdout", DATA / "verbose-json.json"])
    printed = samples_of(DATA / "verbose-json.stdout")
    assert r.status == "complete"
    for t in r.threads:
        assert t.blocks is not None
        seen = len(printed[t.thread])
        assert t.samples > seen  # the ring's last samples: in the JSON's count only
        whole = seen // t.blocks.block_cycles * t.blocks.block_cycles
        assert t.blocks.cycles == whole
        assert t.blocks.maxima_us == expected_maxima(printed[t.thread][:whole],
                                                     t.blocks.block_cycles)
    assert any("never printed, in no histogram" in n for n in r.notes)


def test_with_its_histogram_the_blocks_are_checked_against_it() -> None:
    """-v with -h in one file: the histogram counts every cycle, the unprinted ones join the last
    block, as for a bench run."""
    r = parse([DATA / "verbose-hist.txt"])
    assert r.status == "complete", r.reasons
    for t in r.threads:
        assert t.blocks is not None and t.histogram is not None
        assert t.blocks.cycles == t.samples
        assert max(t.blocks.maxima_us) == t.max_us


def test_a_stream_that_lost_samples_is_partial_as_a_bench_run_is(tmp_path: Path) -> None:
    lines = (DATA / "verbose.txt").read_text().splitlines(keepends=True)
    cut = [ln for ln in lines if not re.match(r"^ +0: +5\d\d:", ln)]  # thread 0, cycles 500-599
    (tmp_path / "lost.txt").write_text("".join(cut))
    r = parse([tmp_path / "lost.txt"])
    assert r.status == "partial"
    assert "thread 0: the -v stream skipped from cycle 500 to 600: samples lost" in r.reasons


def test_one_thread_needs_the_block_size_given(rtgate_cli: RunCli, tmp_path: Path) -> None:
    log = REALWORLD / "verbose-session.txt"
    out = tmp_path / "result.json"
    proc = rtgate_cli("parse", log, "-o", out, "--block-cycles", "100")
    assert proc.returncode == 0, proc.stderr
    (t,) = load_result(out).threads
    printed = samples_of(log)[0]
    assert t.blocks is not None and t.blocks.block_cycles == 100
    assert t.blocks.maxima_us == expected_maxima(printed, 100)
    bad = rtgate_cli("parse", log, "-o", out, "--block-cycles", "0")
    assert bad.returncode == 2 and "--block-cycles" in bad.stderr
