"""rtla outputs people published (issue 37): real files (tests/data/realworld/rtla/README.md and
tests/data/rtla/README.md); every number checked is one the file prints, or one its histogram
rows give."""

from __future__ import annotations

from pathlib import Path

import pytest
from clirun import RunCli

from rtgate.errors import InputError
from rtgate.result import load_result
from rtgate.timerlat import hist, top

DATA = Path(__file__).resolve().parents[1] / "data" / "realworld" / "rtla"
RTLA = Path(__file__).resolve().parents[1] / "data" / "rtla"


# -- class 8: osnoise hist's averages, unweighted in rtla 5.17-6.2 -----------------------------

def test_the_documentations_whole_number_osnoise_averages_are_not_used() -> None:
    # avg 0 on every CPU beside maxima of 20-50 µs: rtla's unweighted sum (fe137a4fe0e7).
    r = hist.parse(RTLA / "doc-osnoise-hist.txt", lenient=True)
    noise = r.contexts["noise"].threads  # type: ignore[index]
    assert [(t.cpu, t.samples, t.min_us, t.avg_us, t.max_us) for t in noise][:3] == [
        (0, 55215, 0, None, 30), (1, 54649, 0, None, 30), (2, 54703, 0, None, 20)]
    assert all(t.avg_us is None and not t.avg_truncated for t in noise)
    assert r.totals.avg_us is None and r.totals.samples == sum(t.samples for t in noise)
    assert any("fe137a4fe0e7" in n and "not used" in n for n in r.notes)


def test_two_decimal_osnoise_averages_postdate_the_fix_and_are_used() -> None:
    r = hist.parse(RTLA / "guest-osnoise-hist.stdout", lenient=True)
    assert [t.avg_us for t in r.threads] == pytest.approx([18.185, 18.615])
    assert not any("fe137a4fe0e7" in n for n in r.notes)


def test_the_lkml_report_with_its_rows_elided_is_refused_naming_the_line() -> None:
    path = DATA / "lkml-osnoise-hist-avg-zero.txt"
    with pytest.raises(InputError) as exc:
        hist.parse(path, lenient=True)
    assert exc.value.oneline() == (
        f"{path}: line 5: expected the header 'Index CPU-000 CPU-001 ...' (--no-index and "
        "--no-header output are not read)")


def test_an_osnoise_histogram_without_a_cpu_names_osnoise_not_timerlat() -> None:
    r = hist.parse(DATA / "osnoise-hist-no-cpu.edited.txt", lenient=True)
    assert r.status == "partial" and r.totals.samples == 0
    assert r.reasons == ["no CPU column: rtla osnoise hist prints only CPUs that saw noise, and "
                         "this one printed none: the result has no totals to judge"]


# -- class 1: a histogram pasted from its Index row on --------------------------------------------

@pytest.mark.parametrize("name, titled", [
    ("guest-hist-61-from-index.edited.session", "guest-hist-61.session"),
    ("guest-hist-61-from-index-indented.edited.txt", "guest-hist-61.stdout"),
])
def test_a_histogram_pasted_from_its_index_row_reads_as_the_whole(name: str, titled: str) -> None:
    cut = hist.parse(DATA / name, lenient=True)
    whole = hist.parse(RTLA / titled, lenient=True)
    assert cut.contexts == whole.contexts and cut.totals == whole.totals
    assert [(t.cpu, t.samples, t.min_us, t.max_us) for t in cut.threads] == [
        (t.cpu, t.samples, t.min_us, t.max_us) for t in whole.threads]
    assert cut.status == "complete" and cut.tool.name == "timerlat"
    assert any("pasted from the histogram's Index row on" in n for n in cut.notes)


def test_rtgate_parse_sniffs_a_headerless_histogram(rtgate_cli: RunCli, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    proc = rtgate_cli("parse", str(DATA / "guest-hist-61-from-index.edited.session"), "-o",
                      str(out))
    assert proc.returncode == 0, proc.stderr
    assert load_result(out).sources[0].format == "timerlat-hist"


def test_a_harness_file_from_its_index_row_stays_an_error() -> None:
    with pytest.raises(InputError, match="line 1: not rtla hist output"):
        hist.parse(DATA / "guest-hist-61-from-index-indented.edited.txt", limit_us=256)


# -- class 2 (and 1): a CPU without samples as rtla before 01b05fc0e5f3 printed it --------------

def test_the_lkml_histogram_with_a_cpu_without_samples_reads_every_other_series() -> None:
    r = hist.parse(DATA / "lkml-hist-cpu-without-samples.txt", lenient=True)
    assert r.tool.cmdline == "rtla timerlat hist -u -T50"

    def series(context: str) -> list[tuple]:
        return [(t.cpu, t.samples, t.min_us, t.avg_us, t.max_us, t.avg_truncated)
                for t in r.contexts[context].threads]  # type: ignore[index]

    # 1 µs bins (rows 2, 33, ... have no common divisor), no overflow: exact means.
    assert series("irq") == [(1, 1, 2, 2.0, 2, False), (2, 1, 49, 49.0, 49, False)]
    assert series("thread") == [(1, 1, 33, 33.0, 33, False), (2, 1, 52, 52.0, 52, False)]
    assert series("user") == [(1, 1, 36, 36.0, 36, False), (2, 0, None, None, None, False)]
    assert (r.totals.samples, r.totals.min_us, r.totals.max_us) == (2, 33, 52)
    assert r.status == "complete"
    assert any("user CPU 2: no sample, printed by an older rtla as min 18446744073709551615"
               in n for n in r.notes)
    assert any("hit stop tracing" in n for n in r.notes)


# -- class 3: timerlat top without its title line, CPUs elided -----------------------------------

def test_the_untitled_top_screen_with_cpus_elided_reads_the_cpus_shown_as_partial() -> None:
    r = top.parse(DATA / "lkml-top-untitled-elided.txt", lenient=True)
    assert r.tool.cmdline == "rtla timerlat top -a20 -c 1-127 -d 12h"
    assert [(t.cpu, t.samples, t.samples_relation, t.min_us, t.avg_us, t.max_us)
            for t in r.contexts["irq"].threads] == [  # type: ignore[index]
        (1, 43200096, "=", 0, 1, 2), (127, 43200096, "=", 0, 1, 2)]
    assert [(t.cpu, t.samples, t.samples_relation, t.min_us, t.avg_us, t.max_us)
            for t in r.threads] == [
        (1, 43200096, "<=", 2, 6, 12), (127, 43200096, "<=", 2, 5, 11)]
    # The shown CPUs' totals; the ALL line (over CPUs 1-127, its count overflowed) only checked.
    assert (r.totals.samples, r.totals.min_us, r.totals.max_us) == (86400192, 2, 12)
    assert r.totals.avg_us is None
    assert r.status == "partial"
    assert r.reasons == ["lkml-top-untitled-elided.txt: line 6: CPUs elided by the file's "
                         "author: the screen's CPUs are not all there, nor in its totals"]


def test_an_untitled_screen_in_a_harness_file_stays_an_error() -> None:
    with pytest.raises(InputError, match="no 'Timer Latency' screen"):
        top.parse(DATA / "lkml-top-untitled-elided.txt", lenient=False)


def test_rtgate_parse_sniffs_an_untitled_top_screen(rtgate_cli: RunCli, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    proc = rtgate_cli("parse", str(DATA / "lkml-top-untitled-elided.txt"), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert load_result(out).sources[0].format == "timerlat-top"
