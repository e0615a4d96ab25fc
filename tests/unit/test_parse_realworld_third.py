"""Real outputs, third pass (issue 37): cyclictest shapes people published. Every file's
source is in the README beside it; every number checked is one the file prints."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clirun import RunCli

from rtgate.cyclictest.parse import parse
from rtgate.errors import InputError
from rtgate.result import Result, load_result

REAL = Path(__file__).resolve().parents[1] / "data" / "realworld"


def per_thread(path: Path, *, lenient: bool = True) -> list[tuple]:
    r = parse([path], lenient=lenient)
    return [(t.thread, t.samples, t.min_us, t.avg_us, t.max_us) for t in r.threads]


# -- class 7: a -v snippet without its final newline keeps its last sample ---------------------

@pytest.mark.parametrize("lenient", [True, False])
def test_a_verbose_snippet_without_its_final_newline_keeps_its_last_sample(
        lenient: bool) -> None:
    one = REAL / "verbose-no-newline" / "chromiumos-one-thread.txt"
    samples = [9, 18, 15, 14, 14, 14, 24, 16, 15, 14]
    assert per_thread(one, lenient=lenient) == [
        (0, 10, 9, pytest.approx(sum(samples) / 10), 24)]
    two = REAL / "verbose-no-newline" / "chromiumos-two-threads.txt"
    assert per_thread(two, lenient=lenient) == [
        (0, 5, 64, pytest.approx(326 / 5), 66), (1, 5, 55, pytest.approx(288 / 5), 65)]
    r = parse([two], lenient=lenient)
    assert r.status == "complete"
    assert any("lacks its newline" in n for n in r.notes)


def test_a_last_line_that_may_have_lost_digits_is_still_dropped(tmp_path: Path) -> None:
    # The same log cut one character earlier: "      5" may have been "      55".
    cut = tmp_path / "cut.txt"
    cut.write_bytes((REAL / "verbose-no-newline" / "chromiumos-two-threads.txt").read_bytes()[:-1])
    r = parse([cut], lenient=True)
    assert r.status == "partial" and r.threads[1].samples == 4
    assert r.reasons == ["cut.txt: last line 15 is cut off; it was dropped"]


# -- class 5: authors' notes after or inside the output -----------------------------------------

NOTES = REAL / "notes"


def cli_result(rtgate_cli: RunCli, tmp_path: Path, path: Path) -> Result:
    out = tmp_path / f"{path.name}.result.json"
    proc = rtgate_cli("parse", str(path), "-o", str(out))
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    return load_result(out)


def test_a_caret_note_under_the_t_lines_is_a_note_and_the_numbers_hold(
        rtgate_cli: RunCli, tmp_path: Path) -> None:
    # Mike Galbraith's LKML posting: '^^^ hmm' under the Avg column, then a line of prose.
    r = cli_result(rtgate_cli, tmp_path, NOTES / "lkml-summary-caret-note.txt")
    assert r.status == "complete"
    assert [(t.thread, t.samples, t.min_us, t.avg_us, t.max_us) for t in r.threads] == [
        (0, 297014, 1, 79, 9584), (1, 198401, 1, 118, 9995), (2, 149137, 1, 125, 8863),
        (3, 119519, 1, 218, 9704), (4, 99760, 1, 134, 11108), (5, 85731, 1, 234, 9649),
        (6, 75321, 2, 139, 7351), (7, 66929, 3, 191, 6469)]
    assert all(t.avg_truncated for t in r.threads)  # the T: lines' integer averages
    assert r.notes[-2:] == [
        "lkml-summary-caret-note.txt line 12: an author's note between parts of cyclictest's "
        "output: '" + " " * 63 + "^^^ hmm'",
        "lkml-summary-caret-note.txt line 13: an author's note between parts of cyclictest's "
        "output: 'Those Avg: numbers follow the custom slice.'"]


def test_a_note_among_the_t_lines_is_refused_two_runs_never_read_as_one(
        rtgate_cli: RunCli, tmp_path: Path) -> None:
    # The LKML posting with its note moved up between T: 3 and T: 4 (lines 0-3, '^^^ hmm',
    # lines 4-7): as two pastes one under the other, it must not read as one 8-thread run.
    lines = (NOTES / "lkml-summary-caret-note.txt").read_text().splitlines(keepends=True)
    assert lines[6].startswith("T: 3 ") and lines[11].lstrip().startswith("^^^ hmm")
    path = tmp_path / "spliced.txt"
    path.write_text("".join(lines[:7] + [lines[11]] + lines[7:11]))
    proc = rtgate_cli("parse", str(path), "-o", str(tmp_path / "r.json"))
    assert proc.returncode != 0 and not (tmp_path / "r.json").exists()
    assert proc.stderr.strip().splitlines()[-1].endswith(
        f"{path}: line 9: a 'T:' line after the note on line 8: notes go after the 'T:' lines "
        "(two runs pasted together?)"), proc.stderr


def test_an_indented_note_is_quoted_from_its_first_visible_character(tmp_path: Path) -> None:
    # The same lines as the harness's own raw file (strict): the note is named, not as ' '.
    raw = tmp_path / "stdout.txt"
    raw.write_text("".join((NOTES / "lkml-summary-caret-note.txt").read_text()
                           .splitlines(keepends=True)[2:]))
    with pytest.raises(InputError) as exc:
        parse([raw])
    assert exc.value.oneline() == (f"{raw}: line 10: not cyclictest output: '^^^ hmm' "
                                   "(indented 63 blank character(s))")


SCREEN_HIST = [  # cyclictest's own --json of the run (screen-hist.json)
    (0, 200, 17, 30.75, 51),
    # 4 overflows: the footer's integer average (the JSON's 46.13 cut toward zero)
    (1, 200, 14, 46, 2309)]


@pytest.mark.parametrize("name, line, note", [
    ("screen-hist-comment-before-histogram.edited.txt", 86,
     "an author's note between parts of cyclictest's output: '# note: the 2309 us max on "
     "thread 1 came while a kernel build ran'"),
    ("screen-hist-row-comment.edited.txt", 138,
     "a comment beside a histogram row: 'thread 0 max'"),
    ("screen-hist-gbk-note.edited.txt", 196,
     "after cyclictest's output: " + repr(
         "测试通过：线程 1 的 2309 微秒来自内核编译".encode("gbk").decode(
             "ascii", "backslashreplace"))),
])
def test_an_authors_note_in_a_histogram_file_is_a_note_and_the_numbers_hold(
        rtgate_cli: RunCli, tmp_path: Path, name: str, line: int, note: str) -> None:
    doc = json.loads((NOTES / "screen-hist.json").read_text())
    assert [(n, t["cycles"], t["min"], t["avg"], t["max"])
            for n, t in ((int(k), v) for k, v in doc["thread"].items())] == [
        (0, 200, 17, 30.75, 51), (1, 200, 14, 46.13, 2309)]
    for path in (NOTES / "screen-hist.txt", NOTES / name):
        r = cli_result(rtgate_cli, tmp_path, path)
        assert r.status == "complete"
        assert [(t.thread, t.samples, t.min_us, t.avg_us, t.max_us)
                for t in r.threads] == SCREEN_HIST
    assert f"{name} line {line}: {note}" in r.notes
    with pytest.raises(InputError, match=f"line {line}: "):
        parse([NOTES / name])  # the harness's own files stay strict


def test_a_line_among_histogram_rows_is_still_refused(tmp_path: Path) -> None:
    # Between rows a foreign line may be two files spliced: not a note.
    lines = (NOTES / "screen-hist.txt").read_text().splitlines(keepends=True)
    path = tmp_path / "spliced.txt"
    path.write_text("".join([*lines[:120], "second board:\n", *lines[120:]]))
    with pytest.raises(InputError, match="line 121: not cyclictest output: 'second board:'"):
        parse([path], lenient=True)


# -- class 5: an offending line of blanks is said to be one -------------------------------------

def test_a_line_of_blanks_in_a_verbose_log_is_named_as_such(tmp_path: Path) -> None:
    # A real -v log (tests/data/cyclictest/verbose.txt) with three spaces for its 7th line.
    lines = (REAL.parent / "cyclictest" / "verbose.txt").read_text().splitlines(keepends=True)
    path = tmp_path / "blanks.txt"
    path.write_text("".join(lines[:6] + ["   \n"] + lines[6:]))
    with pytest.raises(InputError) as exc:
        parse([path])
    assert exc.value.oneline() == (
        f"{path}: line 7: expected 'thread: cycle: latency', got a line of only 3 "
        "blank character(s)")


# -- class 6: footer lines grep'd out of a longer file ------------------------------------------

def test_footer_lines_without_a_count_are_refused_saying_why() -> None:
    path = REAL / "pasted" / "openshift-rt-grep-latencies.txt"
    with pytest.raises(InputError) as exc:
        parse([path], lenient=True)
    assert exc.value.oneline() == (
        f"{path}: line 2: '# Min Latencies' without the '# Histogram' section it ends (footer "
        "lines cut out of a longer file?): no sample count, and without one no budget can "
        "judge min, avg or max")


# -- class 4: a live screen's 'T:' line cut mid-update -------------------------------------------

def test_a_screen_line_cut_after_max_is_dropped_and_the_rest_reads() -> None:
    path = REAL / "screen-cut" / "live-cut-after-max.txt"
    r = parse([path], lenient=True)
    # Thread 1 keeps the screen before's line; the cut one is dropped, the result partial.
    assert [(t.thread, t.samples, t.min_us, t.avg_us, t.max_us, t.avg_truncated)
            for t in r.threads] == [(0, 1998, 13, 26, 282, True), (1, 1308, 13, 31, 3898, True)]
    assert r.status == "partial"
    last = path.read_bytes().count(b"\n") + 1
    assert r.reasons == [f"live-cut-after-max.txt: line {last}: a 'T:' line cut off (a screen "
                         "copied mid-update); it was dropped"]


def test_a_harness_screen_cut_mid_line_stays_an_error() -> None:
    with pytest.raises(InputError, match="summary line cut off or malformed"):
        parse([REAL / "screen-cut" / "live-cut-after-max.txt"])
    # A -q summary cut at its end loses a thread's only line: refused in a user's file too.
    with pytest.raises(InputError, match="line 3: summary line cut off or malformed"):
        parse([REAL.parent / "malformed" / "summary-cut-at-end.txt"], lenient=True)
