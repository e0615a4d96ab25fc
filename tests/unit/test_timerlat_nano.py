"""rtla timerlat with -n/--nano: its outputs keep their nanoseconds. Real captures from the
qemu-arm64 guest (tests/data/rtla/README.md says how each was made); the format is rtla 6.12's
own (kernel tools/tracing/rtla/src/timerlat_hist.c: '# Time unit is nanoseconds (ns)' and -b
counting ns when -n sets output_divisor to 1; timerlat_top.c: '(ns)' in each group's title)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from clirun import RunCli

from rtgate.errors import InputError
from rtgate.result import NSEC_US, RESOLUTION_US, Percentile, load_result
from rtgate.stats.histogram import RELATIVE_ERROR, log_linear
from rtgate.timerlat import hist, top
from rtgate.timerlat.command import NANO_HISTOGRAM_US, TimerlatSpec, build

RTLA = Path(__file__).resolve().parents[1] / "data" / "rtla"
NANO = RTLA / "guest-hist-nano.stdout"  # rt, -k -d 10s -n -b 1 -E 9999000: overflows
B1000 = RTLA / "guest-hist-nano-b1000.session"  # -n -b 1000 -E 20000, with its prompt
DEFAULT = RTLA / "guest-hist-nano-default.session"  # -n alone: rtla's -E 256 -b 1, 256 ns
TOP_USER = RTLA / "guest-top-nano-q.session"  # top -q -n: the user context too
TOP_KERNEL = RTLA / "guest-top-nano-k.stdout"  # top -q -k -n


def _rows(path: Path, column: int) -> tuple[list[int], list[int]]:
    """A column's histogram rows as printed (ns, count), read here independently of hist."""
    values, counts = [], []
    for line in path.read_text().splitlines()[4:]:
        words = line.split()
        if words[0] == "over:":
            break
        if int(words[column + 1]):
            values.append(int(words[0]))
            counts.append(int(words[column + 1]))
    return values, counts


def test_a_nano_histogram_keeps_every_digit() -> None:
    r = hist.parse(NANO, limit_us=9999, bucket_ns=1, period_us=1000)
    assert r.status == "complete" and r.resolution_us == NSEC_US and r.notes == []
    irq, thread = r.contexts["irq"], r.contexts["thread"]
    # count/min/avg/max as printed in ns ('min:  19616 37008 3664 40192'), in µs to the ns.
    assert [(t.cpu, t.samples, t.min_us, t.avg_us, t.max_us) for t in thread.threads] == [
        (0, 5062, 37.008, 1266.636, 83074.448), (1, 5293, 40.192, 1199.416, 67411.056)]
    assert [(t.cpu, t.min_us, t.avg_us, t.max_us) for t in irq.threads] == [
        (0, 19.616, 1102.832, 79871.696), (1, 3.664, 994.324, 67219.552)]
    # Samples over the limit leave rtla's averages, cut to the ns: the ALL line's 1232276 ns.
    assert all(t.avg_truncated for t in r.threads) and r.totals.avg_truncated
    assert math.floor(r.totals.avg_us * 1000) == 1232276  # type: ignore[operator]
    assert (r.totals.samples, r.totals.min_us, r.totals.max_us) == (10355, 37.008, 83074.448)
    first = thread.threads[0].histogram
    assert first is not None and first.log_linear and first.limit_known
    assert (first.limit_us, first.bucket_us, first.overflows) == (9999, 1, 84)
    # The 1 ns rows in log-linear bins: 37008 ns (bit length 16) in the bin of 32 ns from 36992.
    assert first.buckets[:2] == [(36.992, 1), (43.808, 1)]
    values, counts = _rows(NANO, 1)
    assert sum(n for _, n in first.buckets) == sum(counts) == 5062 - 84
    assert [v / 1000 for v in np.unique(log_linear(np.array(values)))] == [
        v for v, _ in first.buckets]


def test_percentiles_of_a_nano_histogram_are_within_its_stated_error() -> None:
    r = hist.parse(NANO, limit_us=9999, bucket_ns=1)
    # The nearest-rank median of both CPUs' thread rows, exact in ns, read here.
    rows = [_rows(NANO, 1), _rows(NANO, 3)]
    values = np.repeat(np.concatenate([v for v, _ in rows]), np.concatenate([c for _, c in rows]))
    over = sum(t.histogram.overflows for t in r.threads)  # type: ignore[union-attr]
    exact = np.sort(np.concatenate([values, np.full(over, 10**12)]))[
        math.ceil(0.5 * 10355) - 1]
    assert r.totals.p50 == Percentile(value_us=194.048)
    assert 0 <= exact - 194048 < RELATIVE_ERROR * exact
    # Above 1 % of the samples lie at or over 9999 µs: only that lower bound is known.
    assert r.totals.p99 == Percentile(value_us=9999, relation=">=")
    assert r.totals.stddev_us is None


def test_the_prompt_says_the_bins_count_ns() -> None:
    """-n -b 1000 -E 20000: bins of 1000 ns under 20 ms, kept as the µs bins they are."""
    r = hist.parse(B1000, lenient=True)
    assert r.status == "complete" and r.resolution_us == NSEC_US
    assert r.tool.cmdline == "rtla timerlat hist -k --no-aa -d 5s -n -b 1000 -E 20000"
    h = r.threads[0].histogram
    assert h is not None and not h.log_linear and (h.limit_us, h.bucket_us) == (20000, 1)
    assert (r.totals.samples, r.totals.min_us, r.totals.max_us) == (7653, 22.816, 74680.352)
    assert r.totals.p50 == Percentile(value_us=104)
    assert r.totals.p99_99 == Percentile(value_us=20000, relation=">=")


def test_the_harnesss_wide_nano_run_is_read_as_microsecond_bins(tmp_path: Path) -> None:
    """What the harness passes for `-n -E 20000 -b 1000` (a scenario wider than 1 ns rows may
    span) reads the real capture as the prompt does: 1 µs bins over 20 ms, ns min/avg/max."""
    lines = B1000.read_text().splitlines(keepends=True)
    raw = tmp_path / "timerlat.stdout"
    raw.write_text("".join(lines[1:-1]))  # rtla's stdout, without the prompts around it
    r = hist.parse(raw, limit_us=20000, bucket_us=1, bucket_ns=1000)
    assert r.status == "complete" and r.resolution_us == NSEC_US
    h = r.threads[0].histogram
    assert h is not None and not h.log_linear and (h.limit_us, h.bucket_us) == (20000, 1)
    assert r.totals == hist.parse(B1000, lenient=True).totals


def test_rtlas_default_nano_histogram_is_below_a_microsecond() -> None:
    """`rtla timerlat hist -n`: 256 rows of 1 ns, every sample over them. No histogram a result
    can state; the exact min/avg/max are kept, with the user context rtla 6.12 picked."""
    r = hist.parse(DEFAULT, lenient=True)
    assert r.status == "complete" and set(r.contexts) == {"irq", "thread", "user"}
    assert all(t.histogram is None for s in r.contexts.values() for t in s.threads)
    assert r.totals.p50 is None and r.totals.p99 is None
    assert (r.totals.samples, r.totals.min_us, r.totals.max_us) == (7461, 41.696, 63993.264)
    assert r.contexts["user"].totals.max_us == 64053.328
    assert any("bins of 1 ns under a limit of 256 ns" in n for n in r.notes)


def test_without_the_bin_width_qemus_16_ns_timer_proves_none() -> None:
    """The guest's arch timer ticks in 16 ns: every row is a multiple of 16, so the rows alone do
    not prove 1 ns bins. No histogram, and the note names the option that gives it."""
    r = hist.parse(NANO, limit_us=9999)
    assert r.threads[0].histogram is None and r.totals.p50 is None
    assert any("do not prove 1 ns" in n and "--timerlat-bucket-ns" in n for n in r.notes)
    assert r.totals.max_us == 83074.448


def test_a_limit_that_is_no_whole_microsecond_moves_its_top_rows_to_the_overflows(
        tmp_path: Path) -> None:
    prompt = tmp_path / "E9999999.txt"  # the same rows under rtla's largest -E
    prompt.write_text("# rtla timerlat hist -k --no-aa -d 10s -n -b 1 -E 9999999\n"
                      + NANO.read_text())
    r = hist.parse(prompt, lenient=True)
    h = r.threads[0].histogram
    assert h is not None and (h.limit_us, h.overflows) == (9999, 84)
    assert any("9999999 ns is no whole µs" in n for n in r.notes)


@pytest.mark.parametrize(("path", "kwargs", "message"), [
    (RTLA / "guest-hist-E20.stdout", {"bucket_ns": 1},
     "line 2: rtla was run with -n (nanoseconds), but its output says microseconds"),
    (NANO, {"limit_us": 500, "bucket_ns": 1},
     "line 8207: bin 500176 is out of order or off the histogram's grid (limit 500000 ns"),
])
def test_a_nano_file_against_the_wrong_run_is_refused(path: Path, kwargs: dict[str, int],
                                                       message: str) -> None:
    with pytest.raises(InputError) as err:
        hist.parse(path, **kwargs)  # type: ignore[arg-type]
    assert message in err.value.oneline()


def test_a_prompt_with_n_over_microseconds_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "pasted.txt"
    path.write_text("# rtla timerlat hist -n -d 5s -E 20\n"
                    + (RTLA / "guest-hist-E20.stdout").read_text())
    with pytest.raises(InputError, match="line 3: the prompt's rtla command has -n"):
        hist.parse(path, lenient=True)


def test_pasted_from_the_index_row_the_prompts_n_gives_the_unit(tmp_path: Path) -> None:
    lines = B1000.read_text().splitlines(keepends=True)
    path = tmp_path / "from-index.txt"
    path.write_text(lines[0] + "".join(lines[4:]))  # prompt, then from 'Index' on
    r = hist.parse(path, lenient=True)
    assert r.resolution_us == NSEC_US and r.totals.max_us == 74680.352
    assert r.totals == hist.parse(B1000, lenient=True).totals


def test_pasted_from_the_index_row_the_given_bucket_ns_gives_the_unit(tmp_path: Path) -> None:
    """No prompt, no unit line: --timerlat-bucket-ns says the run had -n, so the rows and the
    summary are ns (read as µs, every number was 1000× too large)."""
    path = tmp_path / "from-index.txt"
    path.write_text("".join(NANO.read_text().splitlines(keepends=True)[3:]))
    r = hist.parse(path, bucket_ns=1, lenient=True)
    assert r.resolution_us == NSEC_US and r.totals.max_us == 83074.448
    assert any("the unit is taken as ns, as rtla -n prints" in n for n in r.notes)
    whole = hist.parse(NANO, limit_us=9999, bucket_ns=1)
    assert hist.parse(path, limit_us=9999, bucket_ns=1, lenient=True).totals == whole.totals
    # A prompt whose rtla has no -n contradicts it.
    typed = tmp_path / "typed.txt"
    typed.write_text("# rtla timerlat hist -k -d 10s -E 9999\n" + path.read_text())
    with pytest.raises(InputError, match="line 2: rtla was run with -n .* prompt's rtla command "
                                         "has no -n"):
        hist.parse(typed, bucket_ns=1, lenient=True)


def test_a_nano_top_screen_keeps_every_digit() -> None:
    r = top.parse(TOP_KERNEL, lenient=False)
    assert r.status == "complete" and r.resolution_us == NSEC_US
    assert [(t.cpu, t.samples, t.min_us, t.avg_us, t.max_us) for t in r.threads] == [
        (0, 3403, 52.224, 710.658, 76277.728), (1, 3404, 32.48, 719.815, 75778.624)]
    # The ALL line's own average ('715238'), cut to the ns; its min and max agree.
    assert (r.totals.min_us, r.totals.avg_us, r.totals.max_us) == (32.48, 715.238, 76277.728)
    assert r.totals.avg_truncated and r.totals.samples_relation == "<="
    assert r.contexts["irq"].totals.min_us == 9.456


def test_a_nano_top_screen_with_the_user_context() -> None:
    r = top.parse(TOP_USER)
    assert r.resolution_us == NSEC_US and set(r.contexts) == {"irq", "thread", "user"}
    user = r.contexts["user"].totals
    assert (user.samples, user.min_us, user.avg_us, user.max_us) == (
        6989, 42.88, 617.553, 57694.704)
    assert r.contexts["irq"].threads[0].min_us == 3.344


def test_a_top_screen_from_its_column_header_takes_the_prompts_n(tmp_path: Path) -> None:
    lines = TOP_USER.read_text().splitlines(keepends=True)
    path = tmp_path / "from-columns.txt"
    path.write_text(lines[0] + "".join(lines[3:]))  # the prompt, then from 'CPU COUNT' on
    r = top.parse(path)
    assert r.resolution_us == NSEC_US and r.totals == top.parse(TOP_USER).totals
    assert any("pasted without its title line" in n for n in r.notes)


def test_a_prompt_with_n_over_a_microsecond_screen_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "pasted.txt"
    path.write_text("$ rtla timerlat top -q -n -d 5s\n"
                    + (RTLA / "guest-top-q.stdout").read_text())
    with pytest.raises(InputError, match="line 3: the prompt's rtla command has -n"):
        top.parse(path)


def test_microsecond_screens_stay_microseconds() -> None:
    r = top.parse(RTLA / "guest-top-q.stdout")
    assert r.resolution_us == RESOLUTION_US
    assert all(float(t.max_us or 0).is_integer() for t in r.threads)


def test_the_harness_runs_rtla_in_nanoseconds_unless_the_scenario_opts_out() -> None:
    nano = build(TimerlatSpec(histogram_us=60), duration_s=10, outdir="/o")
    assert nano.argv == ["rtla", "timerlat", "hist", "-k", "--no-aa", "-d", "10s", "-n",
                         "-E", "60000", "-b", "1"]
    assert (nano.limit_us, nano.bucket_ns) == (60, 1)
    top = build(TimerlatSpec(histogram_us=NANO_HISTOGRAM_US), duration_s=10, outdir="/o")
    assert top.argv[-4:] == ["-E", "100000", "-b", "1"] and top.bucket_ns == 1
    # Above the cap of 1 ns rows: its whole range in bins of 1000 ns, exact ns min/avg/max.
    wide = build(TimerlatSpec(histogram_us=NANO_HISTOGRAM_US + 1), duration_s=10, outdir="/o")
    assert wide.argv[-5:] == ["-n", "-E", "101", "-b", "1000"]
    default = build(TimerlatSpec(), duration_s=10, outdir="/o")
    assert (default.limit_us, default.bucket_ns) == (20000, 1000)
    assert default.argv[-4:] == ["-E", "20000", "-b", "1000"]
    plain = build(TimerlatSpec(nsecs=False), duration_s=10, outdir="/o")
    assert plain.argv[-5:] == ["10s", "-E", "20000", "-b", "1"]
    assert (plain.limit_us, plain.bucket_ns) == (20000, None)


def test_rtgate_parse_reads_a_nano_histogram(rtgate_cli: RunCli, tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    ok = rtgate_cli("parse", str(NANO), "-o", str(out), "--timerlat-limit", "9999",
                    "--timerlat-bucket-ns", "1")
    assert ok.returncode == 0, ok.stderr
    result = load_result(out)
    assert result.resolution_us == NSEC_US and result.totals.p50 == Percentile(value_us=194.048)
    both = rtgate_cli("parse", str(NANO), "-o", str(out), "--timerlat-bucket", "1",
                      "--timerlat-bucket-ns", "1")
    assert both.returncode == 2 and "not allowed with argument" in both.stderr
