"""cyclictest output as people paste it (issue 24): prompts starting with '[', rows the author
cut, histograms without '# Total:', comments in any script beside and after the footer. Real
files (tests/data/realworld/pasted/README.md); every number checked is one the file prints, or
for bracket-session.txt one cyclictest's own --json of the same run holds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rtgate.cyclictest.parse import parse
from rtgate.errors import InputError

DATA = Path(__file__).resolve().parents[1] / "data" / "realworld" / "pasted"


def threads(path: Path) -> list[tuple]:
    r = parse([path], lenient=True)
    return [(t.samples, t.min_us, t.avg_us, t.max_us) for t in r.threads]


def test_a_bracket_prompt_is_no_json() -> None:
    path = DATA / "bracket-session.txt"
    r = parse([path], lenient=True)
    own = json.loads((DATA / "bracket-session.json").read_text())["thread"]
    assert r.status == "complete"
    assert r.tool.cmdline == ("cyclictest -m -p99 -i1000 -t -D2 -q -h 400 "
                              "--json=bracket-session.json")
    assert [(t.samples, t.min_us, t.max_us) for t in r.threads] == [
        (own[n]["cycles"], own[n]["min"], own[n]["max"]) for n in ("0", "1")]
    # Overflows: the footer's integer average, within 1 µs of cyclictest's own.
    for t, n in zip(r.threads, ("0", "1"), strict=True):
        assert t.avg_truncated and t.avg_us <= own[n]["avg"] < t.avg_us + 1  # type: ignore


def test_rows_cut_without_a_mark_fall_back_to_the_footer() -> None:
    # hypriot/rpi-kernel's README: rows 13-25 of -h400, a footer with max 76 and no overflow.
    path = DATA / "hypriot-rpi-cut-rows.md"
    r = parse([path], lenient=True)
    assert r.status == "complete"
    assert threads(path) == [(10000000, 14, 16, 76)]
    assert r.threads[0].histogram is None and r.totals.p99 is None
    assert r.threads[0].avg_truncated
    assert any("max 76 µs beyond the last row (25 µs)" in n for n in r.notes)
    # The README's prose after the code block is kept aside.
    assert any("Timing buffered disk reads" in n for n in r.notes)


def test_rows_elided_with_a_line_fall_back_to_the_footer() -> None:
    # OpenShift's "Example of good results": "More histogram entries ..." among the rows.
    totals = [600000, 600000, 600000, 599999, 599999, 599999, 599998, 599998, 599998, 599997,
              599997, 599996, 599996, 599995, 599995, 599995]
    maxima = [5, 5, 4, 5, 4, 4, 5, 5, 6, 5, 4, 5, 4, 4, 5, 4]
    assert threads(DATA / "openshift-cut-rows.txt") == [
        (n, 2, 2, m) for n, m in zip(totals, maxima, strict=True)]
    # "Example of bad results": overflows; samples are the footer's Total plus them.
    totals = [599999, 599999, 599999, 599997, 599997, 599998, 599998, 599997, 599997, 599996,
              599995, 599996, 599995, 599995, 599995, 599993]
    overflows = [1, 1, 1, 2, 2, 1, 0, 1, 1, 1, 2, 1, 1, 1, 1, 2]
    maxima = [493, 387, 271, 619, 541, 513, 9, 389, 252, 215, 539, 498, 363, 204, 68, 520]
    r = parse([DATA / "openshift-cut-rows-overflows.txt"], lenient=True)
    assert [(t.samples, t.max_us) for t in r.threads] == [
        (n + o, m) for n, o, m in zip(totals, overflows, maxima, strict=True)]
    assert r.totals.max_us == 619 and r.totals.p99 is None


def test_no_total_line_and_comments_beside_the_footer() -> None:
    path = DATA / "zh-no-total-comments.txt"
    r = parse([path], lenient=True)
    assert r.status == "complete"
    assert r.tool.cmdline == "cyclictest -p 98 -i 1000 -t 2 -D 1m -h 1000 -m"
    # The rows (all of them: they sum to the 60000 cycles of -D 1m at 1 ms) give exact means.
    assert [(t.samples, t.min_us, t.max_us) for t in r.threads] == [(60000, 10, 27),
                                                                    (60000, 10, 31)]
    assert [round(t.avg_us or 0, 4) for t in r.threads] == [16.5066, 14.147]
    assert not r.totals.avg_truncated
    assert [n.split(": ", 2)[2] for n in r.notes if "comment beside" in n] == [
        "'每个线程的最小延迟'", "'每个线程的平均延迟'", "'每个线程的最大延迟'"]


def test_harness_files_stay_strict(tmp_path: Path) -> None:
    raw = tmp_path / "raw.txt"
    raw.write_text("".join((DATA / "openshift-cut-rows.txt").read_text().splitlines(True)[1:]))
    with pytest.raises(InputError, match="line 5: not cyclictest output: 'More histogram"):
        parse([raw])
    # A comment after a complete footer: a note for a user's file, an error in the harness's.
    lines = (DATA / "bracket-session.txt").read_text().splitlines()[1:-1]
    raw.write_text("\n".join([*lines, "# 注释：空闲系统"]) + "\n")
    assert parse([raw], lenient=True).status == "complete"
    with pytest.raises(InputError, match="binary data"):
        parse([raw])


def test_a_crash_after_the_footer_is_no_comment(tmp_path: Path) -> None:
    path = tmp_path / "crash.txt"
    lines = (DATA / "bracket-session.txt").read_text().splitlines()[:-1]
    path.write_text("\n".join([*lines, "Segmentation fault"]) + "\n")
    with pytest.raises(InputError, match="not cyclictest output: 'Segmentation fault'"):
        parse([path], lenient=True)
