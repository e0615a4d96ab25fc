"""parse() on real cyclictest 2.40 captures and on hand-written seed formats.

Expected numbers are read off the captured files themselves (see tests/data/cyclictest/README.md)
so each assertion can be checked by eye against the raw text.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import jsonschema
import pytest

from rtgate.cyclictest.parse import parse
from rtgate.errors import InputError
from rtgate.result import SCHEMA_FILE, Percentile

DATA = Path(__file__).parents[1] / "data"
CT = DATA / "cyclictest"
SEEDS = DATA / "seeds"


def eq(value: float) -> Percentile:
    return Percentile(value_us=value)


def at_least(value: float) -> Percentile:
    return Percentile(value_us=value, relation=">=")


def test_json_alone_gives_final_stats_kernel_tool_and_times() -> None:
    r = parse([CT / "quiet-json.json"], board="local", scenario="idle")
    assert [(t.thread, t.cpu, t.samples, t.min_us, t.avg_us, t.max_us) for t in r.threads] == [
        (0, 0, 2000, 5, 16.29, 820), (1, 1, 1334, 6, 18.13, 296)]
    assert r.totals.samples == 3334 and r.totals.min_us == 5 and r.totals.max_us == 820
    assert r.totals.avg_us == pytest.approx((16.29 * 2000 + 18.13 * 1334) / 3334)
    # No -h: no histogram, so no percentile and no stddev is invented.
    assert r.totals.p50 is None and r.totals.p99_99 is None and r.totals.stddev_us is None
    assert r.kernel.release == "6.18.44-fc-v657" and r.kernel.machine == "x86_64"
    assert r.kernel.preempt_rt is False and r.kernel.flavor == "stock"
    assert r.tool.version == "2.40"
    assert r.tool.cmdline == "cyclictest -m -p99 -i1000 -t -D2 -q --json=quiet-json.json"
    assert (r.start, r.end) == ("2026-11-21T23:56:28+00:00", "2026-11-21T23:56:30+00:00")
    assert r.status == "complete" and r.reasons == []
    assert r.sources[0].format == "json" and len(r.sources[0].sha256) == 64


def test_json_overflows_are_cycles_minus_histogram_and_percentiles_say_at_least() -> None:
    r = parse([CT / "overflow.json"])
    t0, t1 = r.threads
    assert t0.histogram is not None and t1.histogram is not None
    assert (t0.histogram.limit_us, t0.histogram.overflows) == (12, 2000 - 1929)
    assert (t1.histogram.limit_us, t1.histogram.overflows) == (12, 1999 - 1587)
    assert sum(c for _, c in t0.histogram.buckets) == 1929
    # 483 of 3999 samples overflowed 12 us: from p99 up only ">= 12 us" is known.
    assert r.totals.p99 == at_least(12) and r.totals.p99_99 == at_least(12)
    assert r.totals.p50 is not None and r.totals.p50.relation == "="
    assert r.totals.stddev_us is None  # unknown with overflows


def test_json_and_stdout_of_one_run_merge_the_richest_of_both() -> None:
    r = parse([CT / "overflow.json", CT / "overflow.stdout"])
    t0, t1 = r.threads
    assert (t0.tid, t0.priority, t0.interval_us, t0.cpu) == (11305, 99, 1000, 0)  # stdout + JSON
    assert t0.avg_us == 11.06  # the JSON's two decimals, not the footer's 11
    assert t0.histogram is not None and t1.histogram is not None
    # Overflow cycle numbers exist only in the text; cyclictest lists as many as -h, then "others".
    assert t0.histogram.overflow_cycles[:3] == [12, 13, 14]
    assert len(t0.histogram.overflow_cycles) == 12 and t0.histogram.overflows == 71
    assert [s.format for s in r.sources] == ["json", "histogram"]


def test_histogram_stdout_percentiles_by_hand() -> None:
    r = parse([CT / "hist-stdout.txt"])
    assert [(t.samples, t.min_us, t.avg_us, t.max_us) for t in r.threads] == [
        (2000, 5, 11, 733), (2000, 5, 12, 450)]
    # Samples overflowed: only the footer's integer average, known to 1 µs.
    assert all(t.avg_truncated for t in r.threads) and r.totals.avg_truncated
    # 4000 samples, 4 overflowed 400 us: rank 3996 (p99.9) is the last in range, 3997+ are not.
    hist = Counter[int]()
    for t in r.threads:
        assert t.histogram is not None
        hist.update(dict(t.histogram.buckets))
    ordered = sorted(hist.elements())
    assert len(ordered) == 3996
    assert r.totals.p50 == eq(ordered[2000 - 1])
    assert r.totals.p99 == eq(ordered[3960 - 1])
    assert r.totals.p99_9 == eq(ordered[3996 - 1])
    assert r.totals.p99_99 == at_least(400)


def test_histfile_and_histofall_sum_column_is_not_a_thread() -> None:
    r = parse([CT / "histfile.txt"])
    assert [t.samples for t in r.threads] == [1997 + 2, 1993 + 4]
    h = parse([CT / "histofall.txt"])
    assert len(h.threads) == 2
    assert [(t.samples, t.max_us) for t in h.threads] == [(1995 + 3, 2928), (1978 + 20, 2907)]
    assert h.threads[1].histogram is not None
    assert h.threads[1].histogram.overflow_cycles[:3] == [78, 270, 490]


def test_verbose_histogram_is_exact_and_matches_a_naive_count() -> None:
    r = parse([CT / "verbose.txt"])
    naive: dict[int, Counter[int]] = {}
    for line in (CT / "verbose.txt").read_text().splitlines():
        parts = line.split(":")
        if len(parts) == 3:
            naive.setdefault(int(parts[0]), Counter())[int(parts[2])] += 1
    for t in r.threads:
        assert t.histogram is not None
        assert dict(t.histogram.buckets) == dict(naive[t.thread])
        assert t.samples == sum(naive[t.thread].values())
        assert t.max_us == max(naive[t.thread]) and t.min_us == min(naive[t.thread])
        assert t.histogram.overflows == 0 and t.histogram.limit_us == t.max_us + 1
    assert [t.samples for t in r.threads] == [1989, 1328]
    assert r.totals.stddev_us is not None
    assert all(getattr(r.totals, p).relation == "=" for p in ("p50", "p99", "p99_9", "p99_99"))
    # The header's "Interval" is off by the thread distance in cyclictest: not recorded.
    assert all(t.interval_us is None for t in r.threads)


def test_verbose_with_json_takes_counts_from_json_and_distribution_from_verbose() -> None:
    r = parse([CT / "verbose-json.json", CT / "verbose-json.stdout"])
    assert [t.samples for t in r.threads] == [1997, 1333]  # the JSON: verbose lacks the last few
    assert [t.max_us for t in r.threads] == [3625, 1862]
    t0 = r.threads[0]
    assert t0.histogram is not None and sum(c for _, c in t0.histogram.buckets) == 1990


def test_verbose_with_histogram_section_completes_the_exact_histogram() -> None:
    r = parse([CT / "verbose-hist.txt"])
    assert [s.format for s in r.sources] == ["verbose"]
    # The footer counts 947+53 and 948+50 samples; the log printed 996 and 993 of them. The
    # missing ones all fell below -h 20, so their bins are known: exact, complete histograms.
    assert [t.samples for t in r.threads] == [1000, 998]
    for t in r.threads:
        assert t.histogram is not None and t.histogram.overflows == 0
        assert sum(c for _, c in t.histogram.buckets) == t.samples
        assert t.histogram.buckets[-1][0] == t.max_us
    assert [t.max_us for t in r.threads] == [380, 195]
    assert r.totals.p99_99 == eq(380) and r.totals.stddev_us is not None


def test_quiet_and_live_summary_lines_give_no_percentiles() -> None:
    q = parse([CT / "quiet.txt"])
    assert [(t.tid, t.priority, t.interval_us, t.samples, t.min_us, t.avg_us, t.max_us)
            for t in q.threads] == [(11190, 99, 1000, 1998, 7, 14, 1088),
                                    (11191, 99, 1500, 1334, 5, 12, 1034)]
    assert q.totals.p99 is None and q.totals.stddev_us is None
    assert q.sources[0].format == "summary"
    live = parse([CT / "live.txt"])
    # The last refreshed screen wins.
    assert [(t.samples, t.max_us) for t in live.threads] == [(1991, 4201), (1326, 4037)]
    assert live.totals.samples == 1991 + 1326 and live.totals.p50 is None


@pytest.mark.parametrize("block", [300, 4096, 1 << 20])
def test_live_screen_read_in_blocks_keeps_the_last_line_per_thread(
        block: int, monkeypatch: pytest.MonkeyPatch) -> None:
    from rtgate.cyclictest.formats import text

    monkeypatch.setattr(text, "BLOCK_BYTES", block)
    r = parse([CT / "overflow.stdout"])  # 198 refreshed screens, then the histogram
    assert [(t.tid, t.interval_us, t.samples, t.max_us) for t in r.threads] == [
        (11305, 1000, 2000, 992), (11306, 1000, 1999, 1138)]


@pytest.mark.parametrize("block", [300, 4096, 1 << 20])
def test_a_message_line_anywhere_in_a_live_screen_is_a_note_with_its_line(
        tmp_path: Path, block: int, monkeypatch: pytest.MonkeyPatch) -> None:
    from rtgate.cyclictest.formats import text

    monkeypatch.setattr(text, "BLOCK_BYTES", block)
    lines = (CT / "live.txt").read_bytes().splitlines(keepends=True)
    moved = tmp_path / "live.txt"
    moved.write_bytes(b"".join([*lines[1:400], lines[0], *lines[400:]]))
    for path, line_no in ((CT / "live.txt", 1), (moved, 400)):
        r = parse([path])
        assert r.notes == [f"live.txt line {line_no}: cyclictest's message, skipped: "
                           "'# /dev/cpu_dma_latency set to 0us'"]
        assert [(t.samples, t.max_us) for t in r.threads] == [(1991, 4201), (1326, 4037)]


def test_bad_line_inside_a_live_screen_is_named(tmp_path: Path) -> None:
    lines = (CT / "live.txt").read_bytes().split(b"\n")
    lines[400] = lines[400][:20]  # cut a refreshed T: line in half
    f = tmp_path / "live.txt"
    f.write_bytes(b"\n".join(lines))
    with pytest.raises(InputError, match="line 401: summary line cut off"):
        parse([f])


@pytest.mark.parametrize("start", [b"", b"       0:       1:       5\n" * 10])
def test_a_file_without_line_ends_is_refused_without_reading_it_whole(
        tmp_path: Path, start: bytes) -> None:
    f = tmp_path / "blob.txt"
    f.write_bytes(start + b"7" * (3 << 20))
    with pytest.raises(InputError, match="a line longer than"):
        parse([f])


def test_a_screen_before_the_first_sample_is_partial(tmp_path: Path) -> None:
    f = tmp_path / "early.txt"
    f.write_bytes(b"".join((CT / "live.txt").read_bytes().splitlines(keepends=True)[:5]))
    r = parse([f])
    assert [t.samples for t in r.threads] == [0, 0]  # "C: 0 Min:1000000": nothing measured
    assert all(t.min_us is None and t.max_us is None for t in r.threads)
    assert r.status == "partial" and r.reasons == [
        "no samples: cyclictest stopped before its first measurement"]


def test_run_stopped_by_sigint_is_a_normal_end() -> None:
    r = parse([CT / "sigint.json", CT / "sigint.stdout"])
    assert r.status == "complete"
    assert [t.samples for t in r.threads] == [1971, 1983]
    assert r.totals.max_us == 4149


def test_nonzero_return_code_makes_the_result_partial(tmp_path: Path) -> None:
    doc = json.loads((CT / "sigint.json").read_text())
    doc["return_code"] = 1
    f = tmp_path / "rc1.json"
    f.write_text(json.dumps(doc))
    r = parse([f])
    assert r.status == "partial" and "return_code 1" in r.reasons[0]


def test_verbose_log_cut_mid_line_drops_that_line_and_is_partial(tmp_path: Path) -> None:
    raw = (CT / "verbose.txt").read_bytes()
    f = tmp_path / "cut.txt"
    f.write_bytes(raw[:-5])  # "       1:    1327:       6\n" loses its last 5 bytes
    r = parse([f])
    assert r.status == "partial" and "cut off" in r.reasons[0]
    assert [t.samples for t in r.threads] == [1989, 1327]


def test_histogram_cut_inside_the_rows_is_partial(tmp_path: Path) -> None:
    raw = (CT / "hist-stdout.txt").read_bytes()
    f = tmp_path / "cut.txt"
    f.write_bytes(raw[: raw.index(b"000200 ") + 10])  # stops inside the row of 200 us
    r = parse([f])
    assert r.status == "partial" and "footer is missing" in r.reasons[0]
    assert len(r.threads) == 2
    for t in r.threads:
        assert t.histogram is not None and t.histogram.buckets[-1][0] < 200
        assert t.max_us is None  # unknown: the rest of the rows and the overflows are lost
    assert r.totals.samples == sum(t.samples for t in r.threads)


def test_contradictory_files_are_refused_naming_both() -> None:
    with pytest.raises(InputError) as err:
        parse([CT / "quiet-json.json", CT / "quiet.txt"])
    assert err.value.path == str(CT / "quiet.txt")
    assert "quiet-json.json" in str(err.value) and "not one run" in str(err.value)
    with pytest.raises(InputError, match="tid|samples|max"):
        parse([CT / "hist-stdout.txt", CT / "histfile.txt"])


def test_two_json_files_of_different_runs_are_refused() -> None:
    with pytest.raises(InputError) as err:
        parse([CT / "overflow.json", CT / "sigint.json"])
    assert err.value.path == str(CT / "sigint.json")
    assert "overflow.json, so they are not one run: thread 0 samples 1971" in str(err.value)


def test_crlf_line_ends_are_read(tmp_path: Path) -> None:
    for name in ("verbose.txt", "hist-stdout.txt", "quiet.txt"):
        f = tmp_path / name
        f.write_bytes((CT / name).read_bytes().replace(b"\n", b"\r\n"))
        assert parse([f]).totals == parse([CT / name]).totals, name


def test_snapshot_ahead_of_final_is_a_contradiction(tmp_path: Path) -> None:
    live = tmp_path / "live.txt"
    live.write_text((CT / "quiet-json.stdout").read_text().replace("Max:     820", "Max:    9999")
                    .replace("# /dev", "policy: fifo: loadavg: 0 0 0 1/1 1\n# /dev"))
    with pytest.raises(InputError, match="max 9999 us here, 820 us at the end"):
        parse([CT / "quiet-json.json", live])


def test_run_id_is_deterministic() -> None:
    a = parse([CT / "quiet-json.json"], board="local", scenario="cpu")
    b = parse([CT / "quiet-json.json"], board="local", scenario="cpu")
    c = parse([CT / "quiet-json.json"], board="local", scenario="io")
    assert a.run_id == b.run_id != c.run_id and a.run_id.startswith("local-cpu-")
    assert parse([CT / "quiet-json.json"], run_id="mine").run_id == "mine"


def test_labels_and_flavor_override() -> None:
    r = parse([CT / "quiet.txt"], board="qemu-arm64", virtual=True, scenario="cpu", flavor="rt")
    assert (r.board.name, r.board.virtual, r.scenario, r.kernel.flavor) == (
        "qemu-arm64", True, "cpu", "rt")
    assert r.kernel.preempt_rt is None  # summary lines say nothing about the kernel


def test_preempt_rt_from_version_string_even_when_realtime_is_0(tmp_path: Path) -> None:
    doc = json.loads((CT / "quiet-json.json").read_text())
    doc["sysinfo"]["version"] = "#1 SMP PREEMPT_RT Thu Nov 20 10:00:00 UTC 2026"
    doc["sysinfo"]["realtime"] = 0
    f = tmp_path / "rt.json"
    f.write_text(json.dumps(doc))
    r = parse([f])
    assert r.kernel.preempt_rt is True and r.kernel.flavor == "rt"


def test_results_validate_against_the_committed_schema() -> None:
    schema = json.loads(SCHEMA_FILE.read_text())
    for files in (["overflow.json", "overflow.stdout"], ["verbose.txt"], ["live.txt"]):
        doc = json.loads(parse([CT / f for f in files]).to_json())
        jsonschema.validate(doc, schema)


# ---- hand-written formats of the research seeds ----

def test_rt_tests_1x_histogram_stock_pi3() -> None:
    r = parse([SEEDS / "rpi3-1x-stock-4.9.41.txt"], board="rpi3")
    assert len(r.threads) == 4
    assert all(t.samples == 100_000_000 for t in r.threads)
    assert [t.max_us for t in r.threads] == [493, 467, 402, 388]
    assert [t.min_us for t in r.threads] == [8, 8, 9, 8]
    assert [t.histogram.overflows for t in r.threads if t.histogram] == [3, 1, 1, 0]
    assert r.threads[0].histogram is not None
    assert r.threads[0].histogram.overflow_cycles == [13750211, 48822107, 91540032]
    assert r.totals.samples == 400_000_000 and r.totals.max_us == 493
    assert r.totals.stddev_us is None
    assert r.totals.p99_99 is not None and r.totals.p99_99.relation == "="


def test_rt_tests_1x_histogram_rt_pi3() -> None:
    r = parse([SEEDS / "rpi3-1x-rt-4.9.47-rt37.txt"])
    assert r.totals.samples == 400_000_000 and r.totals.max_us == 91 and r.totals.min_us == 9
    assert r.totals.stddev_us is not None and r.totals.p99_99 is not None
    assert r.totals.p99_99.relation == "=" and r.totals.p99_99.value_us <= 91


def test_seed_003_summary_of_a_24h_run() -> None:
    r = parse([SEEDS / "rpi4-24h-summary.txt"], board="rpi4")
    (t,) = r.threads
    assert (t.tid, t.priority, t.interval_us, t.samples) == (3186, 99, 200, 435323964)
    assert (t.min_us, t.avg_us, t.max_us) == (15, 23, 190)
    assert t.avg_truncated and r.totals.avg_truncated  # "Avg: 23": (long)(sum / cycles)
    assert r.totals.p50 is None and r.totals.stddev_us is None


@pytest.mark.parametrize(("files", "intervals"), [
    # -i1000 -t without a histogram: thread n every 1000 + n * 500 µs, as the same run's T:
    # lines say; merged with them, the two must agree.
    (["quiet-json.json"], [1000, 1500]),
    (["quiet-json.json", "quiet-json.stdout"], [1000, 1500]),
    # With -h cyclictest sets the distance to 0: both threads every 1000 µs.
    (["overflow.json"], [1000, 1000]),
    (["overflow.json", "overflow.stdout"], [1000, 1000]),
])
def test_thread_intervals_from_the_json_command_line(files: list[str],
                                                     intervals: list[int]) -> None:
    result = parse([DATA / "cyclictest" / f for f in files])
    assert [t.interval_us for t in result.threads] == intervals
