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
