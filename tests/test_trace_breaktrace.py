"""cyclictest's breaktrace, the breach tracer where the kernel has no timerlat (this VM's).

The captures (tests/data/trace/breaktrace-*) are real, taken on this development VM (a shared,
loaded 2-core guest whose kernel lists the function tracer but refuses it under lockdown, so the
tail is nop + sched/irq/timer events): `rtgate pipeline --board local --scenarios cpu --scale 0.5
--trace-on-breach 500`, which broke at 1600 µs, and a 2 s follow-up run armed at 1 s that never
broke. The live tests drive the real cyclictest and ftrace, and check that the host's tracing
settings are put back.
"""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from rtgate.errors import InputError
from rtgate.gate import markdown
from rtgate.gate.thresholds import load_thresholds
from rtgate.gate.verdict import judge
from rtgate.result import load_result
from rtgate.trace import breaktrace, explain, ftrace

DATA = Path(__file__).parent / "data" / "trace"
STDOUT = DATA / "breaktrace-cpu-load.stdout"
TAIL = DATA / "breaktrace-cpu-load.ftrace.txt"
QUIET = DATA / "breaktrace-no-breach.stdout"
CAPTURED_RUN = Path(__file__).parent / "data" / "report" / "qemu" / "stock-idle" / "result.json"

live = pytest.mark.skipif(
    os.geteuid() != 0 or not (ftrace.TRACEFS / "trace_marker").exists(),
    reason="needs root and a mounted tracefs")


def _trace(stdout: Path, tail: Path, rc: int = 0):
    return breaktrace.trace(stdout, DATA / "absent", tail, rc, threshold_us=500, cap_s=30,
                            version="2.40", raw=["raw/trace-ftrace.txt"])


def test_breach_under_cpu_load_names_cpu_task_split_and_tail() -> None:
    b = breaktrace.breach(STDOUT, TAIL)
    assert b is not None
    assert (b.cpu, b.kind, b.total_us) == (0, "thread", 1600)
    # The thread's wake-up (sched_waking of pid 6225) came 76 µs before its tracemark.
    assert [(c.name, c.us, c.share) for c in b.components] == [
        ("Timer expiry to wake-up", 1524.0, 95.25), ("Wake-up to tracemark", 76.0, 4.75)]
    assert b.blocking_task == "tokio-rt-worker:74"
    assert b.stack == []  # a trace tail is not a stack
    assert len(b.tail) == breaktrace.TAIL_ENTRIES
    assert b.tail[-1] == "12368.310029 tokio-rt-worker-74: softirq_exit: vec=9 [action=RCU]"
    stamps = [float(e.split()[0]) for e in b.tail]
    assert stamps == sorted(stamps) and stamps[-1] < 12368.310077  # oldest first, before the mark
    # Only the breach's CPU: CPU 1's entries of that time are left out.
    assert not any(" stress-ng-cpu-6220: " in e for e in b.tail)


def test_blocking_task_is_the_one_switched_from_when_the_switch_in_is_traced(
        tmp_path: Path) -> None:
    # This capture has no switch into the thread between its wake-up and its mark; with one,
    # the task switched from is the blocking task.
    text = TAIL.read_text()
    at = text.rindex("\n", 0, text.index("tracing_mark_write")) + 1
    switch = ("     kworker/0:1-33      [000] d..2. 12368.310070: sched_switch: "
              "prev_comm=kworker/0:1 prev_pid=33 prev_prio=120 prev_state=R ==> "
              "next_comm=cyclictest next_pid=6225 next_prio=0\n")
    tail = tmp_path / "switched.ftrace.txt"
    tail.write_text(text[:at] + switch + text[at:])
    b = breaktrace.breach(STDOUT, tail)
    assert b is not None and b.blocking_task == "kworker/0:1:33"
    assert b.tail[-1].startswith("12368.310070 kworker/0:1-33: sched_switch:")


def test_no_break_within_the_cap_says_so() -> None:
    assert breaktrace.breach(QUIET, DATA / "never-read") is None
    trace = _trace(QUIET, DATA / "never-read")
    assert trace.tool == "cyclictest breaktrace" and not trace.breached and not trace.breaches
    assert trace.note == ("no latency above 500 µs in the 30 s follow-up run: the breach did not "
                          "recur under the tracer")


def test_a_failed_cyclictest_is_not_read_as_a_quiet_run() -> None:
    trace = _trace(QUIET, DATA / "never-read", rc=1)
    assert not trace.breached and (trace.note or "").startswith("cyclictest ended with status 1")


def test_a_tail_cut_mid_line_is_a_one_line_error_naming_file_and_line(tmp_path: Path) -> None:
    text = TAIL.read_text()
    cut = tmp_path / "cut.ftrace.txt"
    cut.write_text(text[:text.index("tracing_mark_write") - 12])
    with pytest.raises(InputError) as err:
        breaktrace.breach(STDOUT, cut)
    line = err.value.oneline()
    assert "\n" not in line and line.startswith(f"{cut}: line ")
    assert "not an ftrace entry" in line
    # In the pipeline the same capture gives a note, and the raw files stay named.
    trace = _trace(STDOUT, cut)
    assert trace.breached and not trace.breaches and trace.raw == ["raw/trace-ftrace.txt"]
    assert str(cut) in (trace.note or "") and "not an ftrace entry" in (trace.note or "")


def test_a_tail_that_ends_before_the_tracemark_is_an_error(tmp_path: Path) -> None:
    text = TAIL.read_text()
    early = tmp_path / "early.ftrace.txt"
    early.write_text(text[:text.rindex("\n", 0, text.index("tracing_mark_write")) + 1])
    with pytest.raises(InputError, match="no tracemark of cyclictest thread 6225") as err:
        breaktrace.breach(STDOUT, early)
    assert err.value.path == str(early)


def test_a_cut_break_report_is_an_error_naming_stdout(tmp_path: Path) -> None:
    cut = tmp_path / "cut.stdout"
    cut.write_text(STDOUT.read_text().replace("# Break value: 1600\n", ""))
    with pytest.raises(InputError, match="Break value") as err:
        breaktrace.breach(cut, TAIL)
    assert err.value.path == str(cut)


def test_arm_breaks_above_the_threshold_in_whole_microseconds() -> None:
    # A breach is max > threshold; cyclictest breaks on a latency > -b, in whole µs.
    assert breaktrace.arm(["cyclictest", "-m"], 155.5)[-3:] == ["-b", "155", "--tracemark"]
    assert breaktrace.arm(["cyclictest"], 0.5)[-3:] == ["-b", "1", "--tracemark"]


def test_paragraph_and_summary_name_the_tail_as_a_tail(tmp_path: Path) -> None:
    trace = _trace(STDOUT, TAIL)
    text = explain.paragraph(trace)
    assert text.startswith("Trace at the breach (cyclictest breaktrace 2.40, stop at 500 µs")
    assert "CPU 0: thread latency 1600 µs" in text and "blocking task tokio-rt-worker:74" in text
    assert "a trace tail, not a stack" in text and "stack (innermost" not in text
    assert text.count(" | ") == explain.MAX_TAIL - 1
    hostile = trace.model_copy(update={"breaches": [trace.breaches[0].model_copy(
        update={"tail": [*trace.breaches[0].tail, "`evil`<b>@everyone"]})]})
    path = load_result(CAPTURED_RUN).model_copy(update={"trace": hostile}).write(
        tmp_path / "result.json")
    (outcome,) = judge([path], load_thresholds(DATA / "tight.yml"), allow_unbudgeted=False)
    line = next(x for x in markdown.render([outcome]).splitlines() if "trace tail" in x)
    # Each entry its own code span: a long or hostile one cannot hide the next.
    assert "`12368.310029 tokio-rt-worker-74: softirq_exit: vec=9 [action=RCU]`" in line
    assert "<b>" not in line.replace("`` `evil`<b>@everyone ``", "")


def _tracing_settings() -> dict[str, str]:
    return {name: (ftrace.TRACEFS / name).read_text().split("\n")[0].split(" (")[0]
            if name != "set_event" else (ftrace.TRACEFS / name).read_text()
            for name in ("current_tracer", "tracing_on", "buffer_size_kb", "set_event")}


@live
@pytest.mark.integration
def test_session_arms_events_and_puts_back_settings_that_were_not_the_defaults() -> None:
    before = _tracing_settings()
    tracefs = ftrace.TRACEFS
    # Unusual settings, so a restore to defaults cannot pass for a restore.
    (tracefs / "tracing_on").write_text("0")
    (tracefs / "buffer_size_kb").write_text("64")
    (tracefs / "set_event").write_text("sched:sched_process_exec\n")
    odd = _tracing_settings()
    try:
        with ftrace.Session() as session:
            armed = _tracing_settings()
        assert armed["tracing_on"] == "1" and "sched:sched_switch" in armed["set_event"]
        assert "sched:sched_process_exec" not in armed["set_event"]
        assert any(line.startswith("events sched:sched_switch") for line in session.setup)
        assert _tracing_settings() == odd
    finally:
        (tracefs / "set_event").write_text(before["set_event"])
        (tracefs / "buffer_size_kb").write_text(before["buffer_size_kb"])
        (tracefs / "tracing_on").write_text(before["tracing_on"])
    assert _tracing_settings() == before


@live
@pytest.mark.integration
def test_session_mounts_tracefs_when_absent_and_unmounts_it() -> None:
    # In a mount namespace of its own, so the host keeps its tracefs mounted meanwhile.
    script = ("from rtgate.trace import ftrace\n"
              "assert not (ftrace.TRACEFS / 'trace_marker').exists()\n"
              "assert ftrace.missing() is None\n"
              "with ftrace.Session() as s:\n"
              "    print(s.setup[0])\n"
              "    print((ftrace.TRACEFS / 'tracing_on').read_text().strip())\n"
              "print((ftrace.TRACEFS / 'trace_marker').exists())\n")
    before = _tracing_settings()
    proc = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c",
         f"umount {ftrace.TRACEFS} && exec \"$0\" -c \"$1\"", sys.executable, script],
        capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        f"mounted tracefs at {ftrace.TRACEFS} (unmounted afterwards)", "1", "False"]
    assert _tracing_settings() == before


@live
@pytest.mark.integration
def test_a_follow_up_run_that_does_not_break_says_so(tmp_path: Path) -> None:
    before = _tracing_settings()
    trace = breaktrace.run("idle", 1_000_000, 2, tmp_path, scale=None)
    assert not trace.breached and "did not recur" in (trace.note or "")
    assert (tmp_path / "raw" / "trace-ftrace.txt").is_file()
    assert "raw/trace-cyclictest.stdout" in trace.raw
    assert _tracing_settings() == before


@live
@pytest.mark.integration
def test_local_pipeline_failure_carries_the_breaktrace_paragraph(tmp_path: Path) -> None:
    """The real CLI on the local board: a 1 µs budget fails, the follow-up run breaks at the
    first latency above 1 µs, and the failure explains it from the trace."""
    before = _tracing_settings()
    proc = subprocess.run(
        [sys.executable, "-m", "rtgate", "pipeline", "--board", "local", "--scenarios", "idle",
         "--duration", "3s", "--thresholds", str(DATA / "tight.yml"), "--trace-on-breach",
         "--trace-cap", "20s", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert _tracing_settings() == before
    (path,) = tmp_path.rglob("result.json")
    trace = load_result(path).trace
    assert trace is not None and trace.tool == "cyclictest breaktrace", trace
    assert trace.breached and trace.threshold_us == 1 and trace.cap_s == 20, trace.note
    (b,) = trace.breaches
    assert b.kind == "thread" and b.total_us > 1 and b.cpu is not None and b.tail
    for name in ("raw/trace-ftrace.txt", "raw/trace-cyclictest.stdout",
                 "raw/trace-ftrace-setup.txt"):
        assert name in trace.raw and (path.parent / name).is_file()
    assert "tracing_mark_write: hit latency threshold" in (
        path.parent / "raw" / "trace-ftrace.txt").read_text()
    (failure,) = ET.parse(tmp_path / "junit.xml").getroot().iter("failure")
    assert "Trace at the breach (cyclictest breaktrace" in (failure.text or "")
    assert "a trace tail, not a stack" in (failure.text or "")
    assert "cyclictest breaktrace" in (tmp_path / "summary.md").read_text()
    site = tmp_path / "site"
    report = subprocess.run([sys.executable, "-m", "rtgate", "report", str(tmp_path),
                             "--thresholds", str(DATA / "tight.yml"), "--out", str(site)],
                            capture_output=True, text=True, timeout=300)
    assert report.returncode in (0, 1), report.stderr
    (page,) = list(site.rglob("runs/*/index.html"))
    assert "cyclictest breaktrace" in page.read_text()
    assert "a trace tail, not a stack" in page.read_text()
    assert (page.parent / "raw" / "trace-ftrace.txt").is_file()
