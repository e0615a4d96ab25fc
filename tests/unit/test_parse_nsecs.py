"""cyclictest -N/--nsecs output: every reader keeps the nanoseconds the file gives.

rt-tests src/cyclictest/cyclictest.c prints every latency in ns with -N (``calcdiff_ns``) in
the same places and formats as in µs, but for the 'T:' line: print_stat() widens Act and Avg
("Min:%7ld Act:%8ld Avg:%8ld Max:%8ld" if use_nsecs, else "... Act:%5ld Avg:%5ld ..."), and
write_stats() writes ``"resolution_in_ns": use_nsecs`` into the --json file. The -v sample lines
("%8d:%8lu:%8ld") are the same in both units: without its 'T:' lines (-q) or the command line a
-v log cannot say which it is. The files are real cyclictest 2.40 output
(tests/data/cyclictest/README.md); the expected values are cyclictest's own 'T:' lines.
"""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from rtgate.cyclictest.formats.text import summary_unit
from rtgate.cyclictest.parse import parse
from rtgate.errors import InputError
from rtgate.result import NSEC_US, RESOLUTION_US, Result, load_result
from rtgate.stats.histogram import log_linear

DATA = Path(__file__).parents[1] / "data" / "cyclictest"


def stats(result: Result) -> list[tuple[float | None, float | None, float | None, int]]:
    return [(t.min_us, t.avg_us, t.max_us, t.samples) for t in result.threads]


def test_summary_lines_in_ns_are_read_in_ns() -> None:
    # T: 0 (25485) P:80 I:1000 C:    200 Min:  12141 Act:   16489 Avg:   26814 Max:  218533
    result = parse([DATA / "nsecs-quiet.txt"])
    assert result.resolution_us == NSEC_US
    assert stats(result) == [(12.141, 26.814, 218.533, 200), (14.206, 30.782, 165.062, 137)]
    assert result.totals.max_us == 218.533 and result.status == "complete"
    assert [t.interval_us for t in result.threads] == [1000, 1500]  # I: stays µs


def test_the_live_screen_in_ns() -> None:
    result = parse([DATA / "nsecs-live.txt"])
    assert result.resolution_us == NSEC_US
    assert stats(result) == [(10.541, 31.195, 176.477, 300), (15.191, 28.744, 170.574, 205)]


def test_json_says_its_unit() -> None:
    result = parse([DATA / "nsecs-json.json", DATA / "nsecs-json.stdout"])
    assert result.resolution_us == NSEC_US
    # The JSON's two-decimal average of ns (33319.59) wins over the stdout's integer one.
    assert stats(result) == [(13.581, 33319.59 / 1000, 666.861, 200),
                             (15.027, 32441.12 / 1000, 937.811, 147)]


def test_verbose_with_its_exit_summary_keeps_every_ns(tmp_path: Path) -> None:
    """-N -v -q: the samples, then each thread's 'T:' line; the exact mean of the ns samples,
    block maxima to the ns, the histogram in log-linear ns bins (issue 40, item 2)."""
    path = DATA / "nsecs-verbose-quiet.txt"
    result = parse([path])
    assert result.status == "complete", result.reasons
    assert result.resolution_us == NSEC_US
    samples: dict[int, list[tuple[int, int]]] = {}
    for line in path.read_text().splitlines():
        parts = line.split(":")
        if len(parts) == 3 and all(p.strip().isdigit() for p in parts):
            samples.setdefault(int(parts[0]), []).append((int(parts[1]), int(parts[2])))
    t0, t1 = result.threads
    ns0 = [v for _, v in samples[0]]
    assert len(ns0) == 2500 == t0.samples  # every sample printed: the exact mean
    assert (t0.min_us, t0.max_us) == (8.69, 1370.713)
    assert t0.avg_us == pytest.approx(sum(ns0) / 2500 / 1000, abs=1e-12)
    assert t0.histogram is not None
    assert t0.histogram.log_linear
    edges = log_linear(np.array(ns0, dtype=np.int64)).tolist()
    assert dict(t0.histogram.buckets) == {e / 1000: n for e, n in Counter(edges).items()}
    assert len(t0.histogram.buckets) < len(set(ns0))  # bins, not every ns value
    assert t0.blocks is not None and t0.blocks.block_cycles == 1000
    assert t0.blocks.maxima_us == [max(ns0[i:i + 1000]) / 1000 for i in (0, 1000, 2000)]
    assert t0.blocks.maxima_us == [660.069, 1370.713, 259.955]
    # Thread 1's last sample never reached the -v stream: the 'T:' line's cut average stays.
    assert (t1.min_us, t1.avg_us, t1.max_us, t1.samples) == (9.649, 28.852, 275.72, 1672)
    # The 99th percentile of both threads' ns samples, as its bin's lower edge.
    everything = sorted(v for series in samples.values() for _, v in series)
    rank = math.ceil(0.99 * len(everything))
    assert result.totals.p99 is not None
    assert result.totals.p99.value_us == log_linear(np.array([everything[rank - 1]]))[0] / 1000
    # The result says so, and reads back.
    written = result.write(tmp_path / "result.json")
    assert load_result(written).resolution_us == NSEC_US


def test_a_verbose_log_that_does_not_tell_its_unit_is_not_trusted() -> None:
    """-N -v without -q: read as µs, its every latency is 1 ms or more (max 1033824): the run
    is partial, never judged complete with numbers 1000 times too large."""
    result = parse([DATA / "nsecs-verbose.txt"])
    assert result.status == "partial"
    assert "cannot be told from one in µs" in result.reasons[0]
    assert result.resolution_us == RESOLUTION_US


def test_the_typed_command_line_tells_the_unit(tmp_path: Path) -> None:
    pasted = tmp_path / "pasted.txt"
    pasted.write_text("root@vm:~# cyclictest -N -v -m -p80 -i1000 -l200 -t1\n"
                      + (DATA / "nsecs-verbose.txt").read_text())
    result = parse([pasted], lenient=True)
    assert result.status == "complete" and result.resolution_us == NSEC_US
    assert (result.threads[0].min_us, result.threads[0].max_us) == (12.368, 1033.824)


def test_a_histogram_of_1_ns_rows_is_read_into_log_linear_bins() -> None:
    """-N -h 40000: cyclictest counts 40 000 rows of 1 ns; the result keeps log-linear ns bins
    under a 40 µs limit, its two overflows (cycles 49 and 135) and percentiles to the ns."""
    json_only = parse([DATA / "nsecs-hist40k.json"])
    both = parse([DATA / "nsecs-hist40k.json", DATA / "nsecs-hist40k.hist"])
    for result in (json_only, both):
        assert result.status == "complete" and result.resolution_us == NSEC_US
        (t,) = result.threads
        assert (t.min_us, t.max_us, t.samples) == (14.434, 87.602, 300)
        assert t.histogram is not None and t.histogram.log_linear
        assert (t.histogram.limit_us, t.histogram.overflows) == (40, 2)
    rows = [line.split() for line in (DATA / "nsecs-hist40k.hist").read_text().splitlines()
            if not line.startswith("#") and line.strip()]
    ns = np.array([int(v) for v, c in rows for _ in range(int(c))], dtype=np.int64)
    assert len(ns) == 298
    (t,) = both.threads
    assert t.histogram is not None and t.histogram.overflow_cycles == [49, 135]  # the text's
    assert dict(t.histogram.buckets) == {e / 1000: n for e, n in
                                        Counter(log_linear(ns).tolist()).items()}
    # p99 of 300 samples is the 297th smallest, among the bins; p99.9 overflowed.
    assert both.totals.p99 is not None and both.totals.p99_9 is not None
    assert both.totals.p99.value_us == log_linear(np.sort(ns)[296:297])[0] / 1000
    assert str(both.totals.p99_9) == "≥40"


def test_a_histogram_file_of_ns_rows_alone_is_not_trusted() -> None:
    """The -h file of a -N run says nothing of its unit: read as µs its every minimum is over
    1 ms, so it is partial, never complete with latencies 1000 times too large."""
    alone = parse([DATA / "nsecs-hist40k.hist"])
    assert alone.status == "partial" and "cannot be told from one in µs" in alone.reasons[0]


def test_a_histogram_under_1_us_is_refused_for_what_it_is() -> None:
    with pytest.raises(InputError, match="below 1 µs"):
        parse([DATA / "nsecs-hist.json"])


def test_microsecond_files_stay_microseconds() -> None:
    for name in ("quiet.txt", "quiet-json.json", "verbose-hist.txt", "live.txt"):
        assert parse([DATA / name]).resolution_us == RESOLUTION_US, name


@pytest.mark.parametrize(("act", "avg", "unit"), [
    ("   16", "   20", RESOLUTION_US),            # %5ld
    ("123456", "   20", RESOLUTION_US),          # µs wider than 5 digits, unpadded
    ("   16840", "   26243", NSEC_US),           # %8ld
    ("12345678", "   26243", NSEC_US),           # one field full, the other padded to 8
    ("12345678", "23456789", NSEC_US),           # 10 ms in ns, not a 10 s mean in µs
    (" 16840", " 26243", None),                  # blanks squeezed: not cyclictest's widths
    ("   16", "   26243", None),                 # the two widths disagree
])
def test_the_widths_of_a_summary_line_tell_its_unit(act: str, avg: str,
                                                    unit: float | None) -> None:
    assert summary_unit(act, " ", avg, " ") == unit


def test_a_file_mixing_units_is_refused(tmp_path: Path) -> None:
    mixed = tmp_path / "mixed.txt"
    mixed.write_text(
        "T: 0 ( 5291) P:80 I:1000 C:    200 Min:  13860 Act:   16769 Avg:   20528 Max:  145522\n"
        "T: 1 ( 5292) P:80 I:1500 C:    137 Min:     14 Act:   34 Avg:   30 Max:     165\n")
    with pytest.raises(InputError, match="both in µs and in ns"):
        parse([mixed])


def test_a_verbose_log_takes_its_unit_from_the_runs_json() -> None:
    """-N -v --json: the log does not say its unit, the JSON does ("resolution_in_ns": 1)."""
    log = DATA / "nsecs-verbose-json.stdout"
    result = parse([DATA / "nsecs-verbose-json.json", log])
    assert result.status == "complete" and result.resolution_us == NSEC_US
    t0 = result.threads[0]
    assert (t0.min_us, t0.max_us, t0.samples) == (13.317, 150.738, 300)
    ns0 = [int(line.split(":")[2]) for line in log.read_text().splitlines()
           if line.startswith("       0:")]
    # Every sample printed: the log's exact mean, not the JSON's two decimals of ns.
    assert len(ns0) == 300 and t0.avg_us == pytest.approx(sum(ns0) / 300 / 1000, abs=1e-12)
    assert parse([log]).status == "partial"  # alone it cannot tell


def test_squeezed_summary_lines_that_may_be_ns_are_not_trusted(tmp_path: Path) -> None:
    """A pasted -N 'T:' line whose blanks a forum squeezed: the widths no longer tell."""
    lines = (DATA / "nsecs-quiet.txt").read_text().splitlines()
    squeezed = tmp_path / "squeezed.txt"
    squeezed.write_text("".join(" ".join(line.split()) + "\n" for line in lines))
    result = parse([squeezed])
    assert result.status == "partial" and "the unit is unknown" in result.reasons[0]
    # Squeezed µs lines with plausible minima stay as they were read.
    quiet = (DATA / "quiet.txt").read_text().splitlines()
    squeezed.write_text("".join(" ".join(line.split()) + "\n" for line in quiet))
    assert parse([squeezed]).status == "complete"
