"""--trace-on-breach on rpi5: cyclictest's breaktrace on the board, re-read by the controller.

The "Pi" is this machine behind a real sshd with a fake /boot/firmware
(tests/integration/test_rpi5_ssh.py sets it up); the board runs the real ``rtgate bench
--trace-breach`` over SSH, with the real cyclictest and this host's ftrace (set up and put back
by the board's rtgate), and the controller is the iperf3 peer. A budget of 1 µs fails every run,
so every run is traced. The board's bench is wrapped: one wrapper forges its trace.json (the
controller must not read it), one hides tracefs from it (a Pi kernel without ftrace), one fails
the trace run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import test_rpi5_ssh
from test_rpi5_ssh import RELEASE, FakePi, _kernel, _root
from test_trace_breaktrace_local import _tracing_settings

from rtgate import paths
from rtgate.result import Result, load_result
from rtgate.trace import ftrace

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240),
              pytest.mark.skipif(os.geteuid() != 0 or not (ftrace.TRACEFS / "trace_marker")
                                 .exists(), reason="needs root and a mounted tracefs")]

pi = test_rpi5_ssh.pi
"""The fake Pi behind a real sshd (a fixture)."""
TIGHT = Path(__file__).parents[1] / "data" / "trace" / "tight.yml"

FORGER = """#!{python}
# The real `rtgate bench`; after a trace run, a trace.json claiming another breach.
import json, subprocess, sys
from pathlib import Path

rc = subprocess.call([sys.executable, "-m", "rtgate", "bench", *sys.argv[1:]])
out = Path(sys.argv[sys.argv.index("--out") + 1])
if "--trace-breach" in sys.argv:
    claims = json.loads((out / "trace.json").read_text())
    claims["breaches"] = [{{"cpu": 7, "kind": "thread", "total_us": 5, "components": [],
                           "blocking_task": "forged:1", "stack": [], "tail": []}}]
    (out / "trace.json").write_text(json.dumps(claims))
sys.exit(rc)
"""

NO_TRACEFS = """#!/bin/sh
# The real `rtgate bench` where the kernel has no tracefs: unmounted, and not in
# /proc/filesystems (in a mount namespace of its own; the host keeps its tracefs).
exec unshare --mount --propagation private sh -c '
  umount {debug} 2>/dev/null; umount {tracefs} || exit 99
  grep -v tracefs /proc/filesystems >{root}/filesystems
  mount --bind {root}/filesystems /proc/filesystems || exit 99
  exec "$0" -m rtgate bench "$@"' {python} "$@"
"""

FAILING = """#!/bin/sh
# The real `rtgate bench` for the measurement; a trace run that dies at once, leaving nothing.
case " $* " in *" --trace-breach "*) echo "trace run: killed" >&2; exit 1 ;; esac
exec {python} -m rtgate bench "$@"
"""


def _wrapper(pi: FakePi, name: str, text: str) -> str:
    """A bench_command running ``text`` (a script taking `rtgate bench`'s arguments)."""
    script = pi.root / name
    script.write_text(text.format(python=sys.executable, root=pi.root, tracefs=ftrace.TRACEFS,
                                  debug="/sys/kernel/debug/tracing"))
    script.chmod(0o755)
    return f"RTGATE_ROOT={paths.ROOT} {script} --board local --scenario {{scenario}} " \
           "--duration {duration} --out {out}"


def _pipeline(tmp_path: Path, pi: FakePi, bench: str, scenario: str,
              **board: object) -> tuple[subprocess.CompletedProcess[str], Path]:
    kernels = tmp_path / "kernels"
    kernels.mkdir()
    (kernels / "rt").symlink_to(_kernel(tmp_path, RELEASE))
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "rtgate", "pipeline", "--board", "rpi5", "--kernels", str(kernels),
         "--flavors", "rt", "--scenarios", scenario, "--duration", "2s", "--scale", "0.5",
         "--thresholds", str(TIGHT), "--trace-on-breach", "--trace-cap", "20s",
         "--out", str(out)],
        env={**os.environ, "RTGATE_ROOT": str(_root(tmp_path, pi, bench_command=bench, **board))},
        capture_output=True, text=True, timeout=220)
    return proc, out


def _failure(out: Path) -> str:
    (failure,) = ET.parse(out / "junit.xml").getroot().iter("failure")
    return failure.text or ""


def _measured(run: Path) -> Result:
    """The run's result, its measurement judged as without a trace (the trace explains only)."""
    result = load_result(run / "result.json")
    assert result.status == "complete" and result.totals.max_us is not None, result.reasons
    assert result.totals.max_us > 1
    return result


def test_failure_carries_the_boards_breaktrace_read_by_the_controller(tmp_path: Path,
                                                                       pi: FakePi) -> None:
    # The Pi's own cyclictest, first on its PATH; root's PATH (like sudo's secure_path) lacks
    # it, so only a trace run given the checked PATH uses it.
    calls = pi.root / "cyclictest.calls"
    (pi.root / "bin" / "cyclictest").write_text(
        f"#!/bin/sh\necho \"$*\" >>{calls}\nexec {shutil.which('cyclictest')} \"$@\"\n")
    (pi.root / "bin" / "cyclictest").chmod(0o755)
    before = _tracing_settings()
    proc, out = _pipeline(tmp_path, pi, _wrapper(pi, "bench-forging-trace", FORGER), "net",
                          sudo="env PATH=/usr/sbin:/usr/bin:/sbin:/bin")
    assert proc.returncode == 1, proc.stderr[-3000:] + proc.stdout[-3000:]
    # The board's rtgate set this host's ftrace up and put it back.
    assert _tracing_settings() == before
    run = out / "rt" / "net"
    trace = _measured(run).trace
    assert trace is not None and trace.tool == "cyclictest breaktrace", trace
    assert trace.breached and trace.threshold_us == 1 and trace.cap_s == 20, trace.note
    (b,) = trace.breaches
    # From the raw files the controller pulled, not the board's claim (5 µs, forged:1).
    stdout = (run / "raw" / "trace-cyclictest.stdout").read_text()
    assert f"# Break value: {b.total_us:g}\n" in stdout and b.total_us > 1
    assert b.blocking_task != "forged:1" and b.cpu != 7 and b.tail
    assert json.loads((run / "trace-claims.json").read_text())["breaches"][0]["total_us"] == 5
    # The board's trace files and the peer's, beside the measurement's, each in trace.raw.
    for name in ("trace-ftrace.txt", "trace-cyclictest.stdout", "trace-ftrace-setup.txt",
                 "trace-cyclictest-rc", "trace-iperf3-server.stdout",
                 "trace-iperf3-client.stdout"):
        assert f"raw/{name}" in trace.raw and (run / "raw" / name).is_file(), trace.raw
    assert "tracing_mark_write: hit latency threshold" in (
        run / "raw" / "trace-ftrace.txt").read_text()
    assert (run / "raw" / "cyclictest.json").is_file()  # the measurement's, untouched
    text = _failure(out)
    assert "Trace at the breach (cyclictest breaktrace" in text
    assert f"thread latency {b.total_us:g} µs" in text and "a trace tail, not a stack" in text
    assert pi.reboots() == ["reboot 0 tryboot", "reboot "]
    assert any("--tracemark" in call for call in calls.read_text().splitlines())


def test_a_pi_kernel_without_tracefs_gets_the_note_and_the_verdict_stands(
        tmp_path: Path, pi: FakePi) -> None:
    before = _tracing_settings()
    proc, out = _pipeline(tmp_path, pi, _wrapper(pi, "bench-no-tracefs", NO_TRACEFS), "idle")
    assert proc.returncode == 1, proc.stderr[-3000:] + proc.stdout[-3000:]
    assert _tracing_settings() == before
    trace = _measured(out / "rt" / "idle").trace
    assert trace is not None and not trace.breached and not trace.breaches, trace
    assert trace.note == ("rpi5 took no trace; it says: the running kernel has no tracefs "
                          "(CONFIG_FTRACE off): no ftrace to stop")
    assert trace.note in _failure(out)


def test_a_failed_trace_run_is_a_note_and_the_verdict_stands(tmp_path: Path,
                                                              pi: FakePi) -> None:
    proc, out = _pipeline(tmp_path, pi, _wrapper(pi, "bench-failing-trace", FAILING), "idle")
    assert proc.returncode == 1, proc.stderr[-3000:] + proc.stdout[-3000:]
    run = out / "rt" / "idle"
    trace = _measured(run).trace
    assert trace is not None and trace.tool == "none" and not trace.breached, trace
    assert trace.note == (f"the trace run failed: {run / 'trace-bench.log'}: `rtgate bench "
                          "--trace-breach` on rpi5 left no trace (exit 1); its log kept")
    assert "trace run: killed" in (run / "trace-bench.log").read_text()
    assert "the trace run failed" in _failure(out)
    assert pi.reboots() == ["reboot 0 tryboot", "reboot "]
