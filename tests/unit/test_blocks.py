"""Block maxima: the awk reducer on real cyclictest -v streams, its file read strictly, and the
blocks checked against the same run's histogram (every cycle accounted for, the same maximum).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from rtgate.cyclictest.command import REDUCER
from rtgate.cyclictest.formats.maxima import read_blocks
from rtgate.cyclictest.parse import parse
from rtgate.errors import InputError
from rtgate.gate.thresholds import load_thresholds
from rtgate.gate.verdict import Verdict, evaluate
from rtgate.result import NSEC_US
from rtgate.stats.histogram import log_linear

DATA = Path(__file__).parents[1] / "data" / "cyclictest"
JSON, BLOCKS = DATA / "blocks-idle.json", DATA / "blocks-idle.blocks.txt"


def _check_consistent(result) -> None:
    for t in result.threads:
        assert t.blocks is not None, t.thread
        assert t.blocks.cycles == t.samples > 0
        assert max(t.blocks.maxima_us) == t.max_us
        assert len(t.blocks.maxima_us) == -(-t.samples // t.blocks.block_cycles)
        # Every block maximum is a latency the histogram counted: in a bin below its limit,
        # or among its overflows (a loaded host can exceed the limit).
        assert t.histogram is not None
        counted = {value for value, _ in t.histogram.buckets}
        # In log-linear ns bins (-N) a maximum is counted in its bin's lower edge.
        binned = ([float(e) / 1000 for e in log_linear(np.rint(np.array(t.blocks.maxima_us)
                                                                 * 1000).astype(np.int64))]
                  if t.histogram.log_linear else t.blocks.maxima_us)
        below = {m for m in binned if m < t.histogram.limit_us}
        above = set(binned) - below
        assert below <= counted
        assert len(above) <= t.histogram.overflows


def test_captured_run_is_complete_and_consistent() -> None:
    result = parse([JSON, BLOCKS], board="local", scenario="idle")
    assert result.status == "complete" and result.reasons == []
    _check_consistent(result)
    assert [s.format for s in result.sources] == ["json", "blocks"]
    # The stream missed cyclictest's last samples (never printed at exit): the histogram
    # supplies them, into the last block.
    seen = {int(w[1]): int(w[2]) for w in map(str.split, BLOCKS.read_text().splitlines())
            if w[0] == "n"}
    assert all(seen[t.thread] < t.samples for t in result.threads)


def _edited(tmp_path: Path, edit) -> Path:
    lines = BLOCKS.read_text().splitlines()
    out = tmp_path / "blocks.txt"
    out.write_text("\n".join(edit(lines)) + "\n")
    return out


def _move_one_sample(lines: list[str]) -> list[str]:
    """What a ring overrun looks like: a later sample printed in place of a lost one (same
    count), here into a bin the histogram counts no more often than the stream printed it."""
    full = {int(v): c for v, c in json.loads(JSON.read_text())["thread"]["0"]["histogram"]
            .items()}
    hist = {int(ln.split()[2]): i for i, ln in enumerate(lines) if ln.startswith("h 0 ")}
    maxima = {int(ln.split()[2]) for ln in lines if ln.startswith("b 0 ")}
    printed = {v: int(lines[i].split()[3]) for v, i in hist.items()}
    dup = next(v for v in sorted(hist) if printed[v] == full[v] and v not in maxima)
    lost = next(v for v in sorted(hist) if printed[v] == 1 and v not in maxima and v != dup)
    out = list(lines)
    out[hist[dup]] = f"h 0 {dup} {printed[dup] + 1}"
    del out[hist[lost]]
    return out


def test_overrun_ring_makes_the_run_partial(tmp_path: Path) -> None:
    result = parse([JSON, _edited(tmp_path, _move_one_sample)], board="local")
    assert result.status == "partial"
    assert len(result.reasons) == 1
    assert result.reasons[0].startswith("thread 0: the -v stream holds latencies that "
                                        "cyclictest's histogram does not count (")
    assert "its ring of 16384 samples overran" in result.reasons[0]
    # Where, in numbers: the one bin that holds a sample more than cyclictest counted.
    m = re.search(r"; 1 bin\(s\) over, the first at \d+ us: (\d+) printed, (\d+) counted\)",
                  result.reasons[0])
    assert m and int(m[1]) == int(m[2]) + 1, result.reasons[0]


def test_blocks_without_a_histogram_are_partial() -> None:
    result = parse([BLOCKS], board="local")
    assert result.status == "partial"
    assert result.reasons[0].startswith("thread 0: no histogram of the run to check")


def test_blocks_of_another_run_are_refused(tmp_path: Path) -> None:
    bench = Path(__file__).parents[1] / "data" / "bench"
    with pytest.raises(InputError, match="not one run"):
        parse([JSON, bench / "cpu-blocks.blocks.txt"])


@pytest.mark.parametrize("edit, needle", [
    (lambda ls: ls[:-1], "line 271: no 'end' line: the reducer was stopped"),
    (lambda ls: ["rtgate-blocks 2 block_cycles 10000", *ls[1:]],
     "line 1: expected 'rtgate-blocks 1 block_cycles N'"),
    (lambda ls: [*ls[:3], "b 0 -4", *ls[3:]], "line 4: expected a 'b', 'h', 'n' or 'g'"),
    (lambda ls: [*ls, "b 0 4"], "line 272: 'b 0 4' after the 'end' line"),
    (lambda ls: [ls[0], "b 0 99999", *ls[1:]], "thread 0: 29358 samples, but 4 blocks of "
                                               "10000; the largest block maximum is 99999"),
    (lambda ls: [ln for ln in ls if ln != "b 1 211"], "thread 1: 29301 samples, but 2 blocks"),
    (lambda ls: [ln.replace("h 0 597 1", "h 0 597 2") for ln in ls],
     "thread 0: 29358 samples, but its histogram holds 29359 samples"),
    (lambda ls: [*ls[:2], "b 5000 3", *ls[2:]], "line 3: thread 5000: cyclictest runs at most"),
])
def test_malformed_blocks_file_names_the_line(tmp_path: Path, edit, needle: str) -> None:
    path = _edited(tmp_path, edit)
    with pytest.raises(InputError) as err:
        parse([JSON, path])
    assert needle in err.value.oneline()
    assert err.value.oneline().startswith(f"{path}: line ")
    assert "\n" not in err.value.oneline()


def test_cut_without_newline(tmp_path: Path) -> None:
    path = tmp_path / "blocks.txt"
    path.write_bytes(BLOCKS.read_bytes()[:-1])
    with pytest.raises(InputError, match="cut off"):
        parse([JSON, path])


def test_reducer_is_package_data() -> None:
    assert REDUCER.is_file() and REDUCER.suffix == ".awk"


STALL_JSON, STALL_BLOCKS = DATA / "stall-end.json", DATA / "stall-end.blocks.txt"


def test_run_that_ended_in_its_largest_stall_keeps_it_in_the_last_block() -> None:
    # The stall's sample is above the histogram and never printed, but it is cyclictest's
    # maximum and no printed sample reached it: the last block's maximum is known.
    result = parse([STALL_JSON, STALL_BLOCKS], board="qemu-arm64")
    assert result.status == "complete", result.reasons
    assert not any("ended in a stall" in line for line in result.notes)
    t0 = result.threads[0]
    assert t0.blocks is not None and t0.blocks.cycles == t0.samples == 8834
    assert t0.blocks.maxima_us[-1] == t0.max_us == 1901919


def test_run_that_ended_in_a_stall_of_unknown_length_leaves_its_block_out(
        tmp_path: Path) -> None:
    # The same run had a printed sample as large as cyclictest's maximum: the unprinted stall
    # is somewhere between the histogram's limit and that maximum, so its block is left out.
    doc = json.loads(STALL_JSON.read_text())
    doc["thread"]["0"]["max"] = 1900109  # the largest printed sample of thread 0
    edited = tmp_path / "stall-end.json"
    edited.write_text(json.dumps(doc))
    result = parse([edited, STALL_BLOCKS], board="qemu-arm64")
    assert result.status == "complete", result.reasons
    t0 = result.threads[0]
    assert t0.blocks is not None and t0.blocks.cycles == 8000 < t0.samples
    assert len(t0.blocks.maxima_us) == 8 and max(t0.blocks.maxima_us) == 1900109
    (note,) = [n for n in result.notes if "ended in a stall" in n]
    assert note == ("thread 0: the run ended in a stall: 8 cycles measured but never printed, "
                    "1 of them at or above the histogram's 20000 us limit, length unknown up to "
                    "cyclictest's maximum 1900109 us: the block maxima stop at cycle 8000 of "
                    "8834")
    # The run's own statistics still count the stall; a tail estimate needing every block
    # cannot be made.
    thresholds = tmp_path / "thresholds.yml"
    thresholds.write_text("schema: rtgate/thresholds/v2\nbudgets:\n  - {board: '*', flavor: '*', "
                          "scenario: '*', max_us: 500000, avg_us: 20000, pwcet_us: {per_hour: "
                          "1.0e-3, max: 3000000}, reason: test}\n")
    checks = {c.metric: c for c in evaluate(result, load_thresholds(thresholds).budgets[0],
                                            edited).checks}
    assert checks["max_us"].verdict is Verdict.FAIL
    assert checks["pwcet_us"].verdict is Verdict.INCOMPLETE
    assert "thread 0's last 834 cycles are in no block" in checks["pwcet_us"].why


NS_BLOCKS = ("rtgate-blocks 1 block_cycles 2 ns\nb 0 9001\nb 0 4646229289\n"
             "h 0 2047 1\nh 0 9000 1\nh 0 4643094528 1\nn 0 3\nend\n")


def test_an_ns_blocks_file_keeps_its_ns(tmp_path: Path) -> None:
    """The reducer's -N file (ns=1): maxima to the ns, log-linear bins, in µs in the view."""
    path = tmp_path / "blocks.txt"
    path.write_text(NS_BLOCKS)
    view = read_blocks(path)
    assert view.resolution_us == NSEC_US
    t = view.threads[0]
    assert t.stream is not None and t.stream.maxima == [9.001, 4646229.289]
    assert t.stream.seen.pairs() == [(2.047, 1), (9.0, 1), (4643094.528, 1)]
    assert (t.min_us, t.max_us) == (2.047, 4646229.289)  # below 2048 ns bins are 1 ns


@pytest.mark.parametrize(("edit", "needle"), [
    (("h 0 9000 1", "h 0 9001 1"), "latencies [9001] ns are no bin's lower edge"),
    (("b 0 9001", "b 0 12001"), "block maxima [12000] ns are not in its histogram"),
    (("b 0 4646229289", "b 0 46229289"), "the largest block maximum is 46229289 ns"),
])
def test_an_ns_blocks_file_agrees_with_itself(tmp_path: Path, edit: tuple[str, str],
                                              needle: str) -> None:
    path = tmp_path / "blocks.txt"
    path.write_text(NS_BLOCKS.replace(*edit))
    with pytest.raises(InputError, match=re.escape(needle)):
        read_blocks(path)


def test_an_ns_bin_across_the_histogram_limit_loses_nothing() -> None:
    # cyclictest -N -h1000000 counts below 1 ms; the log-linear bin [999936, 1000448) ns holds
    # both sides of it. This CI run printed one sample in that bin the histogram never counted:
    # it was at or above 1 ms (an overflow), not a sample the ring lost.
    result = parse([DATA / "nsecs-straddle.json", DATA / "nsecs-straddle.blocks.txt"],
                   board="qemu-arm64")
    assert result.status == "complete", result.reasons
    t0, t1 = result.threads
    assert t1.blocks is not None and t1.blocks.cycles == t1.samples == 8570
    assert max(t1.blocks.maxima_us) == t1.max_us == 10158.544
    # Thread 0's last cycle was never printed and overflowed too: its block is left out.
    assert t0.blocks is not None and t0.blocks.cycles == 5000 < t0.samples == 5484
    assert [n for n in result.notes if n.startswith("thread 0: the run ended in a stall: 1 cycles")]
    # The -N histogram stops at 1 ms. Thread 1 printed every overflow: its histogram is the
    # stream's plus the unprinted last cycles, every sample binned, no limit. Thread 0's last
    # cycle overflowed unprinted: its histogram keeps the limit and counts its overflows.
    h0, h1 = t0.histogram, t1.histogram
    assert h1 is not None and h1.overflows == 0 and sum(c for _, c in h1.buckets) == 8570
    assert h1.buckets[-1][0] == 10158.08 < t1.max_us < h1.limit_us == 10159
    assert h0 is not None and (h0.limit_us, h0.overflows) == (1000, 2179)
    assert result.totals.p99 is not None and result.totals.p99.relation == ">="
