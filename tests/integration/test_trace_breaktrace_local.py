"""Breaktrace on this machine: tracefs mounted and armed, a local pipeline that breaks."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from test_trace_breaktrace import DATA

from rtgate.result import load_result
from rtgate.trace import breaktrace, ftrace

live = pytest.mark.skipif(
    os.geteuid() != 0 or not (ftrace.TRACEFS / "trace_marker").exists(),
    reason="needs root and a mounted tracefs")


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
