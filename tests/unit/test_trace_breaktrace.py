"""cyclictest's breaktrace, the breach tracer where the kernel has no timerlat (this VM's).

The captures (tests/data/trace/breaktrace-*) are real, taken on this development VM (a shared,
loaded 2-core guest whose kernel lists the function tracer but refuses it under lockdown, so the
tail is nop + sched/irq/timer events): `rtgate pipeline --board local --scenarios cpu --scale 0.5
--trace-on-breach 500`, which broke at 1600 µs, and a 2 s follow-up run armed at 1 s that never
broke. The live tests drive the real cyclictest and ftrace, and check that the host's tracing
settings are put back.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rtgate import paths
from rtgate.errors import InputError
from rtgate.gate import markdown
from rtgate.gate.thresholds import load_thresholds
from rtgate.gate.verdict import judge
from rtgate.result import load_result
from rtgate.trace import breaktrace, explain

DATA = Path(__file__).parents[1] / "data" / "trace"
STDOUT = DATA / "breaktrace-cpu-load.stdout"
TAIL = DATA / "breaktrace-cpu-load.ftrace.txt"
QUIET = DATA / "breaktrace-no-breach.stdout"
CAPTURED_RUN = Path(__file__).parents[1] / "data" / "report" / "qemu" / "stock-idle" / "result.json"


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
    # cyclictest compares -b in its own unit: a -N measurement is traced in µs.
    assert breaktrace.arm(["cyclictest", "-N", "-h1000000"], 155.5) == [
        "cyclictest", "-h1000000", "-b", "155", "--tracemark"]


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
    (outcome,) = judge([path], load_thresholds(DATA / "tight.yml"), boards=paths.BOARDS,
                        allow_unbudgeted=False)
    line = next(x for x in markdown.render([outcome]).splitlines() if "trace tail" in x)
    # Each entry its own code span: a long or hostile one cannot hide the next.
    assert "`12368.310029 tokio-rt-worker-74: softirq_exit: vec=9 [action=RCU]`" in line
    assert "<b>" not in line.replace("`` `evil`<b>@everyone ``", "")
