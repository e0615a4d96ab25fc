"""rtla's outputs as people paste them (issue 24), read by `rtgate parse`: real files from the
kernel's own rtla documentation and from rtla 6.12 and 6.1 run in the qemu-arm64 rt guest
(tests/data/rtla/README.md). Every number checked is the one the file prints."""

from __future__ import annotations

from pathlib import Path

import pytest
from clirun import RunCli

from rtgate.errors import InputError
from rtgate.result import Percentile, Result, load_result
from rtgate.timerlat import hist, osnoise, top

DATA = Path(__file__).resolve().parents[1] / "data" / "rtla"


def per_cpu(result: Result, context: str) -> list[tuple]:
    return [(t.cpu, t.samples, t.min_us, t.avg_us, t.max_us)
            for t in result.contexts[context].threads]  # type: ignore[index]


# -- class 8: the histogram's limit from the flag, else the prompt's -E/-b, else unknown --------

def test_an_E20_histogram_without_its_prompt_has_an_unknown_limit_and_bounded_tail() -> None:
    # rtla timerlat hist -E 20: 99.7 % of the samples overflow. Read as if -E were 256, its p50
    # came out as ">= 256" (impossible with a 20 µs limit): the limit is not in the file.
    r = hist.parse(DATA / "guest-hist-E20.stdout", lenient=True)
    thread = r.contexts["thread"].threads
    assert [(t.cpu, t.samples, t.min_us, t.max_us) for t in thread] == [
        (0, 3740, 33, 10185), (1, 4068, 38, 12439)]
    assert all(t.avg_truncated for t in thread) and [t.avg_us for t in thread] == [552, 468]
    assert [t.histogram.overflows for t in thread] == [3740, 4068]  # type: ignore[union-attr]
    limit = thread[0].histogram
    assert limit is not None and not limit.limit_known and limit.limit_us == 20
    assert r.totals.p50 == Percentile(value_us=20, relation=">=")
    assert r.totals.p99 == Percentile(value_us=20, relation=">=")
    assert per_cpu(r, "user") == [(0, 3740, 92, 742, 13637), (1, 4068, 45, 625, 12533)]
    assert per_cpu(r, "irq") == [(0, 3740, 2, 304, 7828), (1, 4068, 2, 225, 3338)]


def test_the_prompts_E20_is_the_limit() -> None:
    r = hist.parse(DATA / "guest-hist-E20.session", lenient=True)
    assert r.tool.cmdline == "rtla timerlat hist -d 5s -E 20"
    histogram = r.threads[0].histogram
    assert histogram is not None and histogram.limit_known and histogram.limit_us == 20
    assert r.totals.p50 == Percentile(value_us=20, relation=">=")
    # The flag wins over the prompt; a flag the rows contradict is refused.
    with pytest.raises(InputError, match="line 14: bin 10 is out of order or off the"):
        hist.parse(DATA / "guest-hist-E20.session", limit_us=10, lenient=True)


def test_a_prompt_without_E_means_rtlas_default_and_the_rows_never_say_it() -> None:
    # rtla 6.1, no -E: 256 entries of 1 µs. From the prompt the limit is known; alone it is the
    # lowest one the file allows, which for this run happens to be the same.
    known = hist.parse(DATA / "guest-hist-61.session", lenient=True)
    alone = hist.parse(DATA / "guest-hist-61.stdout", lenient=True)
    assert known.threads[0].histogram.limit_known  # type: ignore[union-attr]
    assert not alone.threads[0].histogram.limit_known  # type: ignore[union-attr]
    for r in (known, alone):
        assert r.totals.p99 == Percentile(value_us=256, relation=">=")


# -- class 2 and 3: rtla before 6.10 (no ALL:), prompts and indentation -------------------------

def test_the_kernel_documentations_pre_610_histogram_with_its_bracket_prompt() -> None:
    r = hist.parse(DATA / "doc-timerlat-hist.txt", lenient=True)
    assert r.status == "complete" and r.tool.name == "timerlat"
    assert r.tool.cmdline == "timerlat hist -d 10m -c 0-4 -P d:100us:1ms -p 1000 --no-aa"
    assert [t[:3] + t[4:] for t in per_cpu(r, "irq")] == [
        (0, 600002, 0, 16), (1, 600002, 0, 15), (2, 600002, 0, 24), (3, 600002, 0, 21),
        (4, 600002, 0, 13)]
    assert [t[:3] + t[4:] for t in per_cpu(r, "thread")] == [
        (0, 600002, 1, 36), (1, 600002, 1, 58), (2, 600002, 1, 44), (3, 600002, 1, 46),
        (4, 600002, 1, 50)]
    # No overflow, 1 µs bins: the exact means, which rtla printed cut to 5, 5, 4, 4, 5.
    assert [int(t.avg_us or 0) for t in r.threads] == [5, 5, 4, 4, 5]
    assert not r.totals.avg_truncated and r.totals.samples == 5 * 600002
    assert r.totals.max_us == 58 and r.totals.p50 is not None and r.totals.p50.relation == "="
    assert any("prompt, read as the command line" in n for n in r.notes)


def test_a_harness_file_stays_strict() -> None:
    # The same file is refused where rtgate's own raw files are read: no prompt, no 6.1 format.
    with pytest.raises(InputError, match="line 1: not rtla hist output"):
        hist.parse(DATA / "doc-timerlat-hist.txt", limit_us=256)
    with pytest.raises(InputError, match="expected 'ALL:'"):
        hist.parse(DATA / "guest-hist-61.stdout", limit_us=256)


# -- class 4: rtla's trailing lines ------------------------------------------------------------

def test_hit_stop_tracing_auto_analysis_and_saving_the_trace_are_notes() -> None:
    r = hist.parse(DATA / "guest-hist-aa.stdout", lenient=True)
    assert per_cpu(r, "irq") == [(0, 1, 209, 209, 209)]
    assert per_cpu(r, "thread") == [(0, 1, 1354, 1354, 1354)]
    assert r.contexts["user"].totals.samples == 0
    assert any("Saving trace to timerlat_trace.txt" in n for n in r.notes)
    assert any("hit stop tracing: the run ended at its threshold" in n for n in r.notes)
    with pytest.raises(InputError, match="unexpected line after the rtla timerlat hist output"):
        hist.parse(DATA / "guest-hist-aa.stdout", limit_us=256, bucket_us=1)


# -- class 1: timerlat top's final screen ------------------------------------------------------

def test_top_610_with_the_user_context_and_its_ALL_line() -> None:
    r = top.parse(DATA / "guest-top-q.stdout")
    assert r.sources[0].format == "timerlat-top" and r.tool.name == "timerlat"
    assert per_cpu(r, "irq") == [(0, 3599, 4, 292, 2259), (1, 4030, 4, 244, 29892)]
    assert per_cpu(r, "thread") == [(0, 3599, 70, 656, 3384), (1, 4030, 33, 531, 30963)]
    assert per_cpu(r, "user") == [(0, 3599, 80, 892, 4640), (1, 4030, 47, 705, 31802)]
    # What a screen allows: IRQ counts exact, thread/user counts at most those, integer
    # averages (the ALL line's own over all CPUs), no histogram and so no percentile.
    assert r.contexts["irq"].totals.samples_relation == "="
    assert r.totals.samples_relation == "<=" and r.totals.samples == 7629
    assert (r.totals.min_us, r.totals.avg_us, r.totals.max_us) == (33, 590, 30963)
    assert r.totals.avg_truncated and r.totals.p99 is None
    assert all(t.histogram is None for t in r.threads)


def test_top_before_610_has_no_ALL_and_no_thread_average_over_cpus() -> None:
    r = top.parse(DATA / "guest-top-61.session")
    assert r.tool.cmdline == "rtla61 timerlat top -q -d 5s"
    assert set(r.contexts) == {"irq", "thread"}
    assert per_cpu(r, "irq") == [(0, 4816, 51, 147, 11870), (1, 4769, 35, 152, 30041)]
    assert per_cpu(r, "thread") == [(0, 4816, 73, 247, 27685), (1, 4769, 56, 206, 30382)]
    # The IRQ counts weigh the IRQ averages exactly; the thread counts are not printed.
    assert r.contexts["irq"].totals.avg_us == pytest.approx((4816 * 147 + 4769 * 152) / 9585)
    assert r.totals.avg_us is None and (r.totals.min_us, r.totals.max_us) == (56, 30382)


def test_the_live_display_keeps_the_last_screen() -> None:
    r = top.parse(DATA / "guest-top-live.stdout")
    assert per_cpu(r, "user") == [(0, 2819, 60, 285, 14212), (1, 2816, 65, 264, 13933)]
    assert (r.totals.samples, r.totals.avg_us, r.totals.max_us) == (5635, 236, 14159)
    assert any("3 earlier screen(s)" in n for n in r.notes)


def test_the_documentations_top_with_auto_analysis() -> None:
    r = top.parse(DATA / "doc-timerlat-top-aa.txt")
    thread = per_cpu(r, "thread")
    assert len(thread) == 23 and thread[0] == (1, 12322, 3, 9, 31)
    assert thread[-1] == (23, 12320, 3, 11, 41)
    assert r.totals.max_us == 41 and r.tool.cmdline == "timerlat -a 40 -c 1-23 -q"
    assert any("Saving trace to timerlat_trace.txt" in n for n in r.notes)


def test_a_context_without_samples_and_rtlas_missing_newline() -> None:
    # rtla 6.12 ends ALL's empty user context with " |" and no newline.
    r = top.parse(DATA / "guest-top-aa.stdout")
    assert per_cpu(r, "irq") == [(0, 1, 1177, 1177, 1177), (1, 1, 55, 55, 55)]
    assert per_cpu(r, "thread") == [(0, 0, None, None, None), (1, 1, 1217, 1217, 1217)]
    assert r.contexts["user"].totals.samples == 0
    assert any("'rtla timerlat hit stop tracing'" in n for n in r.notes)


# -- osnoise: its own tool ---------------------------------------------------------------------

def test_osnoise_top_is_noise_not_latency() -> None:
    r = osnoise.parse(DATA / "doc-osnoise-top.txt")
    assert r.tool.name == "osnoise" and r.threads == [] and r.totals.samples == 0
    assert [(n.cpu, n.periods, n.runtime_us, n.noise_us, n.cpu_available_pct, n.max_noise_us,
             n.max_single_us, n.hw, n.nmi, n.irq, n.softirq, n.thread) for n in r.noise] == [
        (0, 59, 53100000, 304896, 99.4258, 6978, 56, 549, 0, 53111, 1590, 13),
        (1, 59, 53100000, 338339, 99.36282, 8092, 24, 399, 0, 53130, 1448, 31),
        (2, 59, 53100000, 290842, 99.45227, 6582, 39, 855, 0, 53110, 1406, 12),
        (3, 59, 53100000, 204935, 99.61405, 6251, 33, 290, 0, 53156, 1460, 12)]
    old = osnoise.parse(DATA / "guest-osnoise-top-61.stdout")
    assert [(n.cpu, n.max_single_us) for n in old.noise] == [(0, 374204), (1, 356632)]


def test_osnoise_hist_is_a_noise_context() -> None:
    r = hist.parse(DATA / "guest-osnoise-hist.stdout", lenient=True)
    assert r.tool.name == "osnoise" and r.sources[0].format == "osnoise-hist"
    assert set(r.contexts) == {"noise"}
    noise = r.contexts["noise"].threads
    assert [(t.cpu, t.samples, t.min_us, t.max_us) for t in noise] == [
        (0, 219374, 1, 12141), (1, 213912, 2, 19286)]
    # Two decimals, rounded: kept as the lower end of what they allow.
    assert [t.avg_us for t in noise] == pytest.approx([18.185, 18.615])
    doc = hist.parse(DATA / "doc-osnoise-hist.txt", lenient=True)
    assert doc.threads[0].histogram.bucket_us == 10  # type: ignore[union-attr]
    assert [t.max_us for t in doc.threads][:3] == [30, 30, 20]


@pytest.mark.parametrize("name, tool, fmt", [
    ("doc-timerlat-hist.txt", "timerlat", "timerlat-hist"),
    ("guest-top-61.session", "timerlat", "timerlat-top"),
    ("doc-osnoise-top.txt", "osnoise", "osnoise-top"),
    ("guest-osnoise-hist.stdout", "osnoise", "osnoise-hist"),
])
def test_rtgate_parse_picks_the_reader(rtgate_cli: RunCli, tmp_path: Path, name: str,
                                       tool: str, fmt: str) -> None:
    out = tmp_path / "r.json"
    proc = rtgate_cli("parse", str(DATA / name), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    result = load_result(out)
    assert (result.tool.name, result.sources[0].format) == (tool, fmt)


def test_no_irq_leaves_the_thread_and_user_contexts() -> None:
    r = hist.parse(DATA / "guest-hist-noirq.stdout", lenient=True)
    assert set(r.contexts) == {"thread", "user"}
    assert [t[:3] + t[4:] for t in per_cpu(r, "thread")] == [(0, 2427, 32, 45679),
                                                             (1, 2356, 45, 46217)]
    assert [t[:3] + t[4:] for t in per_cpu(r, "user")] == [(0, 2427, 73, 45722),
                                                           (1, 2356, 57, 46371)]
    assert (r.totals.samples, r.totals.min_us, r.totals.max_us) == (4783, 32, 46217)


def test_a_bin_width_the_rows_do_not_prove_keeps_no_histogram() -> None:
    # rtla timerlat hist -b 10 -E 30: rows at multiples of 10 could as well be -b 5 or -b 10.
    alone = hist.parse(DATA / "guest-hist-b10.stdout", lenient=True)
    assert all(t.histogram is None for t in alone.threads) and alone.totals.p99 is None
    assert [t[:3] + t[4:] for t in per_cpu(alone, "thread")] == [(0, 4561, 42, 40175),
                                                                 (1, 4685, 70, 41564)]
    assert alone.totals.max_us == 41564
    given = hist.parse(DATA / "guest-hist-b10.stdout", limit_us=300, bucket_us=10,
                       lenient=True)
    histogram = given.threads[1].histogram
    assert histogram is not None and histogram.bucket_us == 10 and histogram.limit_known
    assert histogram.overflows == 2013
    assert given.totals.p99 is None  # percentiles only from 1 µs bins


def test_osnoise_is_judged_by_no_latency_budget(rtgate_cli: RunCli, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    assert rtgate_cli("parse", str(DATA / "doc-osnoise-top.txt"), "-o", str(out), "--board",
                      "b", "--scenario", "s", "--flavor", "rt").returncode == 0
    thresholds = tmp_path / "t.yml"
    thresholds.write_text(
        "schema: rtgate/thresholds/v2\nbudgets:\n"
        "  - {board: '*', flavor: '*', scenario: '*', max_us: 100, avg_us: 10, reason: c}\n"
        "  - {board: '*', flavor: '*', scenario: '*', tool: timerlat, max_us: 100, avg_us: 10,"
        " reason: t}\n")
    proc = rtgate_cli("check", str(out), "--thresholds", str(thresholds), "--junit",
                      str(tmp_path / "j.xml"))
    assert proc.returncode == 2 and "tool=osnoise" in proc.stdout + proc.stderr
