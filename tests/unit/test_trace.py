"""rtla timerlat's auto-analysis, captured in the qemu-arm64 guest, parsed and explained.

The captures (tests/data/trace/) are real: rtla built here from the kernel source, run in the
guest on the stock kernel with tracing.config (a thread breach at 5 ms under TCG; a 10 s run
under a 1 s threshold that never breached) and on a kernel without timerlat (rtla's error).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from rtgate import paths
from rtgate.gate import junit, markdown
from rtgate.gate.thresholds import load_thresholds
from rtgate.gate.verdict import Evaluation, judge
from rtgate.result import Result, TraceBreach, load_result
from rtgate.trace import autoanalysis, explain

DATA = Path(__file__).parents[1] / "data" / "trace"
BREACH = DATA / "timerlat-thread-breach.stdout"
QUIET = DATA / "timerlat-no-breach.stdout"
NO_TRACER = DATA / "timerlat-kernel-without-timerlat.stderr"
CAPTURED_RUN = Path(__file__).parents[1] / "data" / "report" / "qemu" / "stock-idle" / "result.json"
EMPTY = DATA / "absent"  # rtla wrote nothing


def _trace(stdout: Path, rc: int = 0, tracers: str | None = "timerlat osnoise nop"):
    return autoanalysis.trace(stdout, NO_TRACER, rc, threshold_us=5000, cap_s=30,
                          version="rtla version 6.12.117", raw=["raw/trace-tracer.stdout"],
                          tracers=tracers)


def test_thread_breach_is_split_into_its_components_task_and_stack() -> None:
    (b,) = autoanalysis.parse(BREACH.read_text())
    assert (b.cpu, b.kind, b.total_us) == (0, "thread", 5632.45)
    parts = {c.name: (c.us, c.share) for c in b.components}
    assert parts["IRQ handler delay"] == (996.75, 17.70)
    assert parts["IRQ latency"] == (1003.50, None)
    assert parts["Timerlat IRQ duration"] == (16.29, 0.29)
    assert parts["Blocking thread"] == (108.45, 1.93)
    assert parts["IRQ interference"] == (114.94, 2.04)
    assert parts["Softirq interference"] == (4379.14, 77.75)
    assert b.blocking_task == "swapper/0:0"
    assert b.stack[0] == "timerlat_save_stack.constprop.0" and b.stack[-1] == "__primary_switched"
    assert len(b.stack) == 20 and "do_idle" in b.stack


def test_irq_breach_takes_the_task_from_the_line_after_blocking_thread() -> None:
    # rtla prints an IRQ breach's blocking task alone on the line after "Blocking thread:".
    text = BREACH.read_text().replace(
        "  Blocking thread:                                         108.45 us (1.93 %)\n"
        "                       swapper/0:0                         108.45 us\n",
        "  Blocking thread:\n                      rtgate_planted:64       \n").replace(
        "  Thread latency:                                         5632.45 us (100%)",
        "     IRQ latency:                                         1003.50 us (100%)")
    (b,) = autoanalysis.parse(text)
    assert (b.kind, b.total_us, b.blocking_task) == ("irq", 1003.5, "rtgate_planted:64")


def test_trace_sections_breach_quiet_and_no_tracer() -> None:
    breached = _trace(BREACH)
    assert breached.breached and len(breached.breaches) == 1 and breached.note is None
    quiet = _trace(QUIET)
    assert not quiet.breached and not quiet.breaches
    assert "did not recur" in (quiet.note or "") and "5000 µs" in (quiet.note or "")
    missing = _trace(EMPTY, rc=1, tracers="")
    assert not missing.breached and "no timerlat tracer" in (missing.note or "")
    failed = _trace(EMPTY, rc=1)  # timerlat listed, rtla failed anyway: its error is kept
    assert "Could not init osnoise top" in (failed.note or "")


def _failed_result(tmp_path: Path, breach: TraceBreach) -> Path:
    base = load_result(CAPTURED_RUN)
    trace = _trace(BREACH).model_copy(update={"breaches": [breach]})
    result: Result = base.model_copy(update={"trace": trace})
    return result.write(tmp_path / "result.json")


def test_failure_text_carries_the_paragraph(tmp_path: Path) -> None:
    (b,) = autoanalysis.parse(BREACH.read_text())
    path = _failed_result(tmp_path, b)
    thresholds = load_thresholds(DATA / "tight.yml")
    (outcome,) = judge([path], thresholds, boards=paths.BOARDS, allow_unbudgeted=False)
    assert isinstance(outcome, Evaluation)
    failures = [f.text or "" for f in ET.fromstring(junit.render([outcome])).iter("failure")]
    assert failures and all("do_idle" in f and "swapper/0:0" in f and
                            "Softirq interference 4379.14 µs (77.75 %)" in f for f in failures)
    summary = markdown.render([outcome])
    assert "Root cause at the breach" in summary and "`do_idle`" in summary


@pytest.mark.parametrize("frame", ["`evil`<b>@everyone", "x" * 400])
def test_hostile_frames_stay_code_in_markdown(tmp_path: Path, frame: str) -> None:
    (b,) = autoanalysis.parse(BREACH.read_text())
    hostile = b.model_copy(update={"stack": [frame, "rtgate_planted_latency"]})
    (outcome,) = judge([_failed_result(tmp_path, hostile)], load_thresholds(DATA / "tight.yml"),
                       boards=paths.BOARDS, allow_unbudgeted=False)
    line = next(x for x in markdown.render([outcome]).splitlines() if "stack:" in x)
    # Every frame is its own code span, so a long or hostile one cannot hide the next.
    assert "`rtgate_planted_latency`" in line
    assert "<b>" not in line.replace("`` `evil`<b>@everyone ``", "")
    assert explain.MAX_FRAMES >= 2


def test_planted_irq_breach_names_the_function_and_the_kthread() -> None:
    """The capture of the planted latency (kernel/patches/testing) on qemu-arm64: 300 ms with
    interrupts off delays the timer IRQ; its stack runs through rtgate_planted_latency."""
    (b,) = autoanalysis.parse((DATA / "timerlat-planted-irq-breach.stdout").read_text())
    assert (b.cpu, b.kind, b.total_us) == (0, "irq", 299535.79)
    assert [(c.name, c.us, c.share) for c in b.components] == [
        ("IRQ handler delay", 45.79, 0.02), ("IRQ latency", 299535.79, None)]
    # rtla's analysis says swapper/0:39 (a stale name); --dump-tasks has pid 39 as the kthread.
    assert b.blocking_task == "rtgate_planted:39"
    assert b.stack[b.stack.index("el1h_64_irq") + 1:] == [
        "rtgate_planted_latency", "rtgate_planted_thread", "kthread", "ret_from_fork"]


def test_rt_kernel_under_net_load_names_the_interrupted_network_path() -> None:
    """A real breach of a 5 ms threshold on the PREEMPT_RT kernel under the net scenario (the
    host's iperf3 client): the timer IRQ waited while iperf3 allocated an skb."""
    (b,) = autoanalysis.parse((DATA / "timerlat-rt-net-irq-breach.stdout").read_text())
    assert (b.cpu, b.kind, b.total_us) == (1, "irq", 13156.98)
    assert b.blocking_task == "iperf3:103"
    interrupted = b.stack[b.stack.index("el1h_64_irq") + 1:]
    assert interrupted[0] == "allocate_slab" and "tcp_recvmsg_locked" in interrupted
