"""Real-world shapes of cyclictest output (issue 9), from real cyclictest 2.40 runs.

Every expected number comes from outside rtgate: the ``--json`` cyclictest wrote in the same run,
or numpy over the histogram rows of the file (see tests/data/realworld/README.md).
"""

from __future__ import annotations

import json
import math
import re
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from clirun import RunCli

from rtgate.cyclictest.parse import parse
from rtgate.errors import InputError
from rtgate.result import Result, load_result

RW = Path(__file__).parents[1] / "data" / "realworld"
JSON_ROUNDING = 0.005  # cyclictest prints the JSON average with "%.2f"


def cyclictest_json(name: str) -> list[dict[str, Any]]:
    doc = json.loads((RW / name).read_text())
    return [doc["thread"][str(n)] for n in range(doc["num_threads"])]


def json_overflows(thread: dict[str, Any]) -> int:
    return thread["cycles"] - sum(thread["histogram"].values())


def rows(name: str) -> np.ndarray:
    """The histogram rows ``latency count count ...`` of a file, by numpy alone."""
    lines = [ln for ln in (RW / name).read_text().splitlines() if re.match(r"\d{6} ", ln)]
    return np.loadtxt(lines, dtype=np.int64, ndmin=2)


def cli(rtgate_cli: RunCli,
        tmp_path: Path, *files: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    out = tmp_path / "result.json"
    proc = rtgate_cli("parse", *(str(RW / f) for f in files), "-o", str(out))
    return proc, out


def parsed(rtgate_cli: RunCli, tmp_path: Path, *files: str) -> Result:
    proc, out = cli(rtgate_cli, tmp_path, *files)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    return load_result(out)


def assert_cut_average(avg: float | None, true_mean: float) -> None:
    """An integer average cut toward zero from a mean that the JSON gives to two decimals."""
    assert avg is not None and float(avg).is_integer()
    assert avg <= true_mean + JSON_ROUNDING and true_mean - JSON_ROUNDING < avg + 1


def test_histfile_without_overflows_gives_the_exact_mean_of_its_bins(rtgate_cli: RunCli,
                                                                     tmp_path: Path) -> None:
    r = parsed(rtgate_cli, tmp_path, "histfile-exact.txt")
    table = rows("histfile-exact.txt")
    latency, counts = table[:, 0], table[:, 1:]
    js = cyclictest_json("histfile-exact.json")
    assert [json_overflows(t) for t in js] == [0, 0]
    for n, t in enumerate(r.threads):
        exact = float((latency * counts[:, n]).sum() / counts[:, n].sum())
        assert t.avg_us == pytest.approx(exact, rel=1e-12) and not t.avg_truncated
        assert abs(t.avg_us - js[n]["avg"]) <= JSON_ROUNDING  # cyclictest's own, to 2 decimals
        assert (t.samples, t.min_us, t.max_us) == (js[n]["cycles"], js[n]["min"], js[n]["max"])
    # Not the footer's integers (69 and 107), which the parser used to report.
    assert [math.floor(t.avg_us or 0) for t in r.threads] == [69, 107]
    assert [t.avg_us for t in r.threads] != [69, 107]
    everything = float((latency * counts.sum(axis=1)).sum() / counts.sum())
    assert r.totals.avg_us == pytest.approx(everything, rel=1e-12)
    assert not r.totals.avg_truncated and r.totals.p99 is not None and r.notes == []


def test_histfile_with_overflows_gives_the_footer_average_known_to_1us(rtgate_cli: RunCli,
                                                                       tmp_path: Path) -> None:
    r = parsed(rtgate_cli, tmp_path, "histfile-overflow.txt")
    js = cyclictest_json("histfile-overflow.json")
    for n, t in enumerate(r.threads):
        assert json_overflows(js[n]) > 0
        assert t.samples == js[n]["cycles"] and t.avg_truncated
        assert_cut_average(t.avg_us, js[n]["avg"])
    assert r.totals.avg_truncated
    weighted = sum(t["avg"] * t["cycles"] for t in js) / sum(t["cycles"] for t in js)
    assert r.totals.avg_us is not None
    assert r.totals.avg_us - JSON_ROUNDING <= weighted < r.totals.avg_us + 1
    assert str(r.totals.p99) == "≥50"  # -h 50: the 99th percentile overflowed


def test_histfile_with_its_json_is_one_run_although_119_00_and_118_differ(rtgate_cli: RunCli,
                                                                          tmp_path: Path) -> None:
    # Thread 0's true mean is 118.99x: the footer cuts it to 118, the JSON rounds it to 119.00.
    js = cyclictest_json("histfile-overflow.json")
    assert js[0]["avg"] == 119.0
    r = parsed(rtgate_cli, tmp_path, "histfile-overflow.json", "histfile-overflow.txt")
    assert [t.avg_us for t in r.threads] == [t["avg"] for t in js]
    assert not any(t.avg_truncated for t in r.threads) and not r.totals.avg_truncated


def test_exact_histogram_mean_beats_the_json_two_decimals(rtgate_cli: RunCli,
                                                          tmp_path: Path) -> None:
    r = parsed(rtgate_cli, tmp_path, "histfile-exact.json", "histfile-exact.txt")
    table = rows("histfile-exact.txt")
    for n, t in enumerate(r.threads):
        exact = float((table[:, 0] * table[:, n + 1]).sum() / table[:, n + 1].sum())
        assert t.avg_us == pytest.approx(exact, rel=1e-12) and not t.avg_truncated


def summary_lines(name: str) -> list[dict[str, int]]:
    found = re.findall(r"^T: *(\d+) .*C: *(\d+) +Min: *(\d+) .*Avg: *(\d+) +Max: *(\d+)",
                       (RW / name).read_text(), re.M)
    return [dict(zip(("thread", "cycles", "min", "avg", "max"), map(int, f), strict=True))
            for f in found]


def test_quiet_summary_averages_are_known_to_1us(rtgate_cli: RunCli, tmp_path: Path) -> None:
    r = parsed(rtgate_cli, tmp_path, "summary.txt")
    js = cyclictest_json("summary.json")
    lines = summary_lines("summary.txt")
    for n, t in enumerate(r.threads):
        assert (t.samples, t.min_us, t.avg_us, t.max_us) == (
            lines[n]["cycles"], lines[n]["min"], lines[n]["avg"], lines[n]["max"])
        assert t.avg_truncated
        assert_cut_average(t.avg_us, js[n]["avg"])
    assert r.totals.avg_truncated and r.totals.p99 is None and r.totals.stddev_us is None
    assert r.notes == ["summary.txt line 1: cyclictest's message, skipped: "
                       "'# /dev/cpu_dma_latency set to 0us'"]


def test_warn_line_of_a_2_and_1_capture_is_a_note(rtgate_cli: RunCli, tmp_path: Path) -> None:
    r = parsed(rtgate_cli, tmp_path, "warn-hist.txt")
    assert r.notes == ["warn-hist.txt line 1: cyclictest's message, skipped: "
                       "'WARN: open /dev/cpu_dma_latency: Permission denied'"]
    js = cyclictest_json("warn-hist.json")
    table = rows("warn-hist.txt")
    for n, t in enumerate(r.threads):
        assert t.samples == js[n]["cycles"]
        # Per thread: exact where no sample overflowed, the footer's integer where one did.
        if json_overflows(js[n]):
            assert t.avg_truncated
            assert_cut_average(t.avg_us, js[n]["avg"])
        else:
            exact = float((table[:, 0] * table[:, n + 1]).sum() / table[:, n + 1].sum())
            assert t.avg_us == pytest.approx(exact, rel=1e-12) and not t.avg_truncated
    assert [json_overflows(t) > 0 for t in js] == [False, True]
    assert r.totals.avg_truncated  # exact only when every thread's is


@pytest.mark.parametrize("name, warnings", [
    ("warn-summary.txt", {1: "WARN: open /dev/cpu_dma_latency: Permission denied"}),
    ("warn-inserted.txt", {1: "WARN: open /dev/cpu_dma_latency: Permission denied",
                           3: "WARN: Running on unknown kernel version...YMMV"}),
])
def test_warn_lines_anywhere_are_skipped(rtgate_cli: RunCli, tmp_path: Path, name: str,
                                         warnings: dict[int, str]) -> None:
    r = parsed(rtgate_cli, tmp_path, name)
    assert r.notes == [f"{name} line {n}: cyclictest's message, skipped: {text!r}"
                       for n, text in warnings.items()]
    js = cyclictest_json("warn-summary.json")
    lines = summary_lines(name)
    assert [(t.samples, t.avg_us) for t in r.threads] == [(x["cycles"], x["avg"]) for x in lines]
    for n, t in enumerate(r.threads):
        assert_cut_average(t.avg_us, js[n]["avg"])


def test_footer_only_histogram_states_samples_min_avg_max_and_no_more(rtgate_cli: RunCli,
                                                                      tmp_path: Path) -> None:
    r = parsed(rtgate_cli, tmp_path, "footer-only.txt")
    js = cyclictest_json("footer-only.json")
    text = (RW / "footer-only.txt").read_text()

    def footer(key: str) -> list[int]:
        m = re.search(rf"^# {key}:(.*)$", text, re.M)
        assert m is not None
        return [int(x) for x in m[1].split()]

    samples = [a + b for a, b in zip(footer("Total"), footer("Histogram Overflows"), strict=True)]
    assert [t.samples for t in r.threads] == samples == [t["cycles"] for t in js]
    assert [(t.min_us, t.max_us) for t in r.threads] == [(t["min"], t["max"]) for t in js]
    for n, t in enumerate(r.threads):
        assert t.histogram is None and t.avg_truncated
        assert_cut_average(t.avg_us, js[n]["avg"])
    totals = r.totals
    assert totals.samples == sum(samples) and totals.avg_truncated
    assert (totals.min_us, totals.max_us) == (min(footer("Min Latencies")),
                                              max(footer("Max Latencies")))
    # No histogram, so no percentile and no deviation: absent, not invented.
    assert [totals.p50, totals.p99, totals.p99_9, totals.p99_99, totals.stddev_us] == [None] * 5
    assert r.status == "complete" and [s.format for s in r.sources] == ["histogram"]


def test_a_footer_only_histogram_without_overflows_is_refused(tmp_path: Path) -> None:
    cut = tmp_path / "footer.txt"
    cut.write_text("".join(ln for ln in (RW / "footer-only.txt").read_text().splitlines(True)
                           if not ln.startswith("# Histogram Overflow")))
    with pytest.raises(InputError, match="'# Histogram Overflows' is missing"):
        parse([cut], lenient=True)


SESSION_NOTES = [
    "session.txt line 1: before cyclictest's output: 'imx8mp-rt-idle.txt'",
    "session.txt line 2: shell prompt, read as the command line: "
    "'root@vm:~# cyclictest -m -p99 -i1000 -t -D2 -q -h 400 --json=session.json'",
    "session.txt line 3: cyclictest's message, skipped: '# /dev/cpu_dma_latency set to 0us'",
    "session.txt line 414: shell prompt after cyclictest's output: 'root@vm:~#'",
]


def test_lines_around_the_output_of_a_users_file_are_notes(rtgate_cli: RunCli,
                                                           tmp_path: Path) -> None:
    r = parsed(rtgate_cli, tmp_path, "session.txt")
    assert r.notes == SESSION_NOTES
    doc = json.loads((RW / "session.json").read_text())
    assert r.tool.cmdline == doc["cmdline:"]
    js = cyclictest_json("session.json")
    table = rows("session.txt")
    for n, t in enumerate(r.threads):
        exact = float((table[:, 0] * table[:, n + 1]).sum() / table[:, n + 1].sum())
        assert t.avg_us == pytest.approx(exact, rel=1e-12) and not t.avg_truncated
        assert abs(t.avg_us - js[n]["avg"]) <= JSON_ROUNDING
        assert (t.samples, t.max_us) == (js[n]["cycles"], js[n]["max"])
    # The command line read off the prompt agrees with the JSON's: one run.
    both = parsed(rtgate_cli, tmp_path, "session.json", "session.txt")
    assert both.tool.cmdline == doc["cmdline:"] and both.notes == SESSION_NOTES


def test_the_harness_reads_its_own_raw_files_strictly() -> None:
    # parse() is strict unless told otherwise: rtgate bench never passes lenient.
    with pytest.raises(InputError, match=r"line 1: not cyclictest output: 'imx8mp-rt-idle.txt'"):
        parse([RW / "session.txt"])
    # cyclictest's own messages are no foreign lines, in either mode.
    assert parse([RW / "warn-hist.txt"]).notes == parse([RW / "warn-hist.txt"], lenient=True).notes


def session_variant(tmp_path: Path, edit: Any) -> Path:
    lines = (RW / "session.txt").read_text().splitlines(True)
    path = tmp_path / "session.txt"
    path.write_text("".join(edit(lines)))
    return path


@pytest.mark.parametrize("prompt, command", [
    ("pi@raspberrypi:~ $ sudo cyclictest -m -p99 -h 400 | tee out.txt",
     "cyclictest -m -p99 -h 400"),
    ("[user@nuc rt-tests]$ sudo ./cyclictest -q -h 400 -t 2>&1 > log", "./cyclictest -q -h 400 -t"),
    ("# cyclictest -q -h400", "cyclictest -q -h400"),
    ("$ echo cyclictest.txt", None),  # not a cyclictest command: no command line
])
def test_the_command_line_from_a_prompt(tmp_path: Path, prompt: str, command: str | None) -> None:
    path = session_variant(tmp_path, lambda lines: [lines[0], prompt + "\n", *lines[2:]])
    assert parse([path], lenient=True).tool.cmdline == command


@pytest.mark.parametrize("edit, problem", [
    # Lines before output that is cut short: no complete output, no guessing.
    (lambda lines: [ln for ln in lines if not ln.startswith("# Max")],
     "line 1: not cyclictest output: 'imx8mp-rt-idle.txt'"),
    (lambda lines: lines[:300], "line 1: not cyclictest output: 'imx8mp-rt-idle.txt'"),
    # After the output only shell prompts; a footer cut to a bare "#" line is no prompt.
    (lambda lines: [*lines[:-1], "Segmentation fault\n"],
     "line 414: not cyclictest output: 'Segmentation fault'"),
    (lambda lines: [*lines[:-1], "# Max Latenc\n"], "line 414: not cyclictest output: '# Max"),
    (lambda lines: [*lines[:-1], "root@vm:~# ls\n", "session.json\n"],
     "line 415: not cyclictest output after the shell prompt on line 414: 'session.json'"),
    (lambda lines: [*lines[:-1], "root@vm:~# \n", lines[3]],
     "line 415: not cyclictest output after the shell prompt on line 414"),
    # A foreign line inside the output stays an error.
    (lambda lines: [*lines[:100], "imx8mp\n", *lines[100:]],
     "line 101: not cyclictest output: 'imx8mp'"),
])
def test_a_file_without_complete_cyclictest_output_is_still_refused(
        rtgate_cli: RunCli, tmp_path: Path, edit: Any, problem: str) -> None:
    path = session_variant(tmp_path, edit)
    proc = rtgate_cli("parse", str(path), "-o", str(tmp_path / "r.json"))
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"rtgate: {path}: {problem}"), proc.stderr
    assert len(proc.stderr.splitlines()) == 1 and not (tmp_path / "r.json").exists()


def test_a_typed_command_line_is_never_checked_against_cyclictests_own(tmp_path: Path) -> None:
    # Typed with quotes, the prompt's command differs from the JSON's "cmdline:" as a string, yet
    # it is the same run: the JSON's own command line is the result's.
    path = session_variant(tmp_path, lambda lines: [
        lines[0], lines[1].replace("--json=session.json", '--json="session.json"'), *lines[2:]])
    r = parse([RW / "session.json", path], lenient=True)
    assert r.tool.cmdline == json.loads((RW / "session.json").read_text())["cmdline:"]
    assert parse([path], lenient=True).tool.cmdline.endswith('--json="session.json"')


def test_lines_before_the_output_that_look_like_a_row_or_a_summary_are_notes(
        tmp_path: Path) -> None:
    path = session_variant(tmp_path, lambda lines: [
        "20 min idle run on imx8\n", "T: 0 run on pi4\n", *lines[1:]])
    r = parse([path], lenient=True)
    assert r.notes[:2] == ["session.txt line 1: before cyclictest's output: "
                           "'20 min idle run on imx8'",
                           "session.txt line 2: before cyclictest's output: 'T: 0 run on pi4'"]
    own = parse([RW / "session.json"])
    assert [t.samples for t in r.threads] == [t.samples for t in own.threads]


def value_lines(name: str) -> np.ndarray:
    """``thread: cycle: latency`` lines of a verbose log, by numpy alone."""
    lines = [ln for ln in (RW / name).read_text().splitlines()
             if re.fullmatch(r" *\d+: *\d+: *\d+", ln)]
    return np.loadtxt([ln.replace(":", " ") for ln in lines], dtype=np.int64, ndmin=2)


def test_a_verbose_log_between_shell_prompts(rtgate_cli: RunCli, tmp_path: Path) -> None:
    r = parsed(rtgate_cli, tmp_path, "verbose-session.txt")
    samples = value_lines("verbose-session.txt")[:, 2]
    (t,) = r.threads
    assert (t.samples, t.min_us, t.max_us) == (len(samples), samples.min(), samples.max())
    assert t.avg_us == pytest.approx(samples.mean(), rel=1e-12)
    own = json.loads((RW / "verbose-session.json").read_text())["cmdline:"]
    assert r.tool.cmdline == own  # typed before "| tee run.log": the same words
    assert r.notes[0].startswith("verbose-session.txt line 1: shell prompt, read as the command")
    assert ("verbose-session.txt line 1005: shell prompt after cyclictest's output: "
            "'root@vm:~# '") in r.notes
    # One thread: its printed interval may include -d, so the block size is the user's to give.
    assert t.blocks is None and any("thread 0: no block maxima" in n for n in r.notes)
    # With the run's JSON: one run, cyclictest's final numbers for the whole run.
    both = parsed(rtgate_cli, tmp_path, "verbose-session.json", "verbose-session.txt")
    assert both.threads[0].samples == cyclictest_json("verbose-session.json")[0]["cycles"]


@pytest.mark.parametrize("edit, problem", [
    (lambda lines: [*lines, lines[-2]], "line 1006: a sample after the shell prompt on line 1005"),
    (lambda lines: [*lines[:500], "imx8mp\n", *lines[500:]],
     "line 501: expected 'thread: cycle: latency', got 'imx8mp'"),
])
def test_a_verbose_log_with_foreign_lines_inside_is_refused(tmp_path: Path, edit: Any,
                                                           problem: str) -> None:
    path = tmp_path / "v.txt"
    path.write_text("".join(edit((RW / "verbose-session.txt").read_text().splitlines(True))))
    with pytest.raises(InputError, match=re.escape(problem)):
        parse([path], lenient=True)
    # The harness's own raw files: the prompt before the samples is already an error.
    with pytest.raises(InputError, match=re.escape("line 1: expected 'thread: cycle: latency'")):
        parse([RW / "verbose-session.txt"])


def test_empty_file_is_exit_2_naming_it(rtgate_cli: RunCli, tmp_path: Path) -> None:
    proc, out = cli(rtgate_cli, tmp_path, "empty.txt")
    assert proc.returncode == 2 and not out.exists()
    assert proc.stderr == f"rtgate: {RW / 'empty.txt'}: empty file: no cyclictest output in it\n"
