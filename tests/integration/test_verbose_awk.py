"""`rtgate parse` of a -v log and the reducer behind `rtgate bench` (blockmaxima.awk, real awk)
give the same blocks: the same maxima, the same samples seen, the same first gap."""

from __future__ import annotations

import gzip
import re
import subprocess
from pathlib import Path

import pytest

from rtgate.cyclictest.command import REDUCER
from rtgate.cyclictest.formats.maxima import read_blocks
from rtgate.cyclictest.formats.verbose import read_verbose
from rtgate.result import NSEC_US

DATA = Path(__file__).parents[1] / "data" / "cyclictest"
LOGS = sorted((DATA / "ab-verbose").glob("*.log.gz"))


def reduced_by_awk(log: Path, block: int, tmp: Path) -> Path:
    out = tmp / "blocks.txt"
    with log.open("rb") as fh:
        subprocess.run(["awk", "-v", f"block={block}", "-v", f"out={out}", "-f", str(REDUCER)],
                       stdin=fh, stdout=subprocess.DEVNULL, check=True)
    return out


@pytest.mark.parametrize("name", [LOGS[0].name, LOGS[-1].name, "lost"])
def test_the_reader_reduces_as_the_awk_reducer_does(name: str, tmp_path: Path) -> None:
    log = tmp_path / "verbose.log"
    if name == "lost":
        # A stream that lost samples: thread 1's cycles 1000-1099 gone.
        text = (DATA / "verbose.txt").read_text()
        log.write_text(re.sub(r"(?m)^ +1: +10\d\d: +\d+\n", "", text))
    else:
        log.write_bytes(gzip.decompress((DATA / "ab-verbose" / name).read_bytes()))
    block = 250  # one block for every thread: the reducer takes one
    (ours,) = read_verbose(log, block_cycles=block)
    theirs = read_blocks(reduced_by_awk(log, block, tmp_path))
    assert set(ours.threads) == set(theirs.threads)
    for number, t in ours.threads.items():
        mine, awk = t.stream, theirs.threads[number].stream
        assert mine is not None and awk is not None
        assert mine.maxima == awk.maxima and len(mine.maxima) > 1
        assert mine.seen.pairs() == awk.seen.pairs()
        assert mine.gap == awk.gap
    if name == "lost":
        assert ours.threads[1].stream is not None
        assert ours.threads[1].stream.gap == (1000, 1100)


def test_the_awk_reducer_bins_ns_as_the_reader_does(tmp_path: Path) -> None:
    """-N: the reducer (ns=1) keeps exact ns maxima and the log-linear bins of
    rtgate.stats.histogram, as `rtgate parse` of the same log does (the real -N -v -q log of
    tests/data/cyclictest; its 'T:' lines pass through the reducer)."""
    log = DATA / "nsecs-verbose-quiet.txt"
    (ours, _) = read_verbose(log, block_cycles=250)
    out = tmp_path / "blocks.txt"
    with log.open("rb") as fh:
        subprocess.run(["awk", "-v", "block=250", "-v", f"out={out}", "-v", "ns=1", "-f",
                        str(REDUCER)], stdin=fh, stdout=subprocess.DEVNULL, check=True)
    assert out.read_text().startswith("rtgate-blocks 1 block_cycles 250 ns\n")
    theirs = read_blocks(out)
    assert theirs.resolution_us == NSEC_US
    for number, t in ours.threads.items():
        mine, awk = t.stream, theirs.threads[number].stream
        assert mine is not None and awk is not None and awk.seen.unit_ns == 1
        assert mine.maxima == awk.maxima and len(mine.maxima) > 1
        assert mine.seen.pairs() == awk.seen.pairs()
        assert theirs.threads[number].max_us == t.max_us


def test_the_awk_reducer_keeps_ns_past_2_to_the_31(tmp_path: Path) -> None:
    """mawk turns numbers over 2^31 into 4.64309e+09 (print, array keys) or 2147483647 (%d): a
    stall of 4.6 s in ns keeps every digit, in its block and its bin."""
    log = tmp_path / "stall.log"
    log.write_text("       0:       0:    9001\n       0:       1:  4646229289\n")
    out = tmp_path / "blocks.txt"
    with log.open("rb") as fh:
        subprocess.run(["awk", "-v", "block=1", "-v", f"out={out}", "-v", "ns=1", "-f",
                        str(REDUCER)], stdin=fh, stdout=subprocess.DEVNULL, check=True)
    assert "b 0 4646229289\n" in out.read_text()
    stream = read_blocks(out).threads[0].stream
    assert stream is not None and stream.maxima == [9.001, 4646229.289]
    assert stream.seen.pairs() == [(9.0, 1), (4643094.528, 1)]
