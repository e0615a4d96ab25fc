"""A bench Plan as a busybox shell script, for a guest that has no Python.

The script does in the guest what ``rtgate.harness.runner`` does on the host: start the loads (a
listening load must listen before the next starts), warm up, run the measuring tool (its part
of the script is the tool's: rtgate.tools) with a hang guard, then note which loads died early
and stop the rest. It prints markers on the console so the host can start the peer's loads and
time the measurement, and ends by sending every raw file back as base64 of a tar.gz between
``RTGATE-BEGIN`` and ``RTGATE-END <sha256>``.

cyclictest's -v stream is reduced in the guest, by the same awk program as on every board
(busybox awk here), reading it from a FIFO: the serial console carries ~10 KB/s, while the
stream is ~27 bytes per sample (~1 MB/s at -i100 on 4 CPUs); the block maxima are a line per
second per thread.
"""

from __future__ import annotations

import shlex
import time

from rtgate import tools
from rtgate.harness.plan import Plan
from rtgate.harness.runner import HANG_MARGIN_S

GUEST_ROOT = "/tmp/rtgate-out"
RAW = f"{GUEST_ROOT}/raw"
META = f"{GUEST_ROOT}/meta"
STATE = f"{GUEST_ROOT}/state"
SCRATCH = "/tmp/rtgate-scratch"
LISTEN_TIMEOUT_S = 10
STOP_GRACE_S = 5
TRACEFS = "/sys/kernel/tracing"
TRACE_TAIL_LINES = 4000
# The kernel's tracers, noted: a guest kernel without a tool's tracer says so in state/tracers.
_TRACEFS = [f"  mount -t tracefs nodev {TRACEFS} 2>/dev/null",
            f"  cat {TRACEFS}/available_tracers >{STATE}/tracers 2>/dev/null"]

PROBE = f"""\
set -u
rm -rf {GUEST_ROOT} && mkdir -p {META} && cd {META}
uname -a >uname-a; uname -r >uname-r; uname -v >uname-v; uname -m >uname-m
nproc >nproc; cat /proc/cmdline >cmdline
cat /sys/kernel/realtime >realtime 2>/dev/null
cat /sys/devices/system/cpu/isolated >isolated 2>/dev/null
cyclictest --help >cyclictest-help 2>&1
stress-ng --version >stress-ng-version 2>&1
iperf3 --version >iperf3-version 2>&1
rtla --version 2>&1 | sed -n 's/^rtla version //p' >rtla-version
"""

_HELPERS = f"""\
set -u
up() {{ cut -d. -f1 /proc/uptime; }}
listening() {{  # port: LISTEN state (0A) in /proc/net/tcp*, without connecting to it
  grep -qE "^ *[0-9]+: [0-9A-F]+:$(printf %04X "$1") [0-9A-F]+:[0-9A-F]+ 0A" \\
    /proc/net/tcp /proc/net/tcp6 2>/dev/null
}}
start_load() {{  # name argv...: own process group, exit status and time recorded by a watcher
  n=$1; shift
  ( setsid "$@" >"{RAW}/$n.stdout" 2>"{RAW}/$n.stderr" </dev/null & p=$!
    echo "$p" >"{STATE}/$n.pid"; wait "$p"; echo "$? $(up)" >"{STATE}/$n.exit" ) &
  while [ ! -s "{STATE}/$n.pid" ]; do sleep 0.05; done
  up >"{STATE}/$n.start"
}}
stop_load() {{  # name: SIGTERM the group, SIGKILL what is left after the grace time
  n=$1; p=$(cat "{STATE}/$n.pid")
  if [ -e "{STATE}/$n.exit" ]; then cp "{STATE}/$n.exit" "{STATE}/$n.early"; return; fi
  kill -TERM -"$p" 2>/dev/null; i=0
  while [ ! -e "{STATE}/$n.exit" ] && [ $i -lt {STOP_GRACE_S * 10} ]; do sleep 0.1; i=$((i+1)); done
  kill -KILL -"$p" 2>/dev/null
}}
"""


def _q(argv: list[str]) -> str:
    return " ".join(shlex.quote(a) for a in argv)


def render(plan: Plan, guest_loads: list[str], epoch: float | None = None,
           tracer: list[str] | None = None) -> str:
    """The script running ``plan`` in the guest; only loads named in ``guest_loads`` run there
    (the others are the peer's, started by the host on ``RTGATE-LOADS-UP``). With ``tracer``
    (rtgate.trace: a follow-up run at a breach), that program runs under the same loads instead
    of cyclictest, in ``raw/``, and must end on its own (its time cap)."""
    loads = [ld for ld in plan.loads if ld.name in guest_loads]
    lines = [_HELPERS,
             f"date -s @{int(epoch if epoch is not None else time.time())} >/dev/null 2>&1",
             f"rm -rf {RAW} {STATE} {SCRATCH} && mkdir -p {RAW} {STATE} {SCRATCH} && cd {SCRATCH}"]
    for load in loads:
        lines.append(f"start_load {load.name} {_q(load.argv)}")
        if load.listens_on is not None:
            lines += [f"i=0; until listening {load.listens_on}; do",
                      f"  [ -e {STATE}/{load.name}.exit ] && break",
                      f"  [ $i -ge {LISTEN_TIMEOUT_S * 10} ] && echo \"load '{load.name}' does "
                      f"not listen on port {load.listens_on} after {LISTEN_TIMEOUT_S} s\" "
                      f">{STATE}/infra && break",
                      "  sleep 0.1; i=$((i+1)); done"]
    lines += [
        f"if [ ! -e {STATE}/infra ]; then",
        "  echo RTGATE-LOADS-UP",
        f"  sleep {plan.warmup_s:g}",
        f"  cat /proc/loadavg >{STATE}/loadavg-before",
        "  echo RTGATE-MEASURE-START",
        *(_traced(tracer) if tracer else _measured(plan)),
        "  echo RTGATE-MEASURE-END",
        f"  cat /proc/loadavg >{STATE}/loadavg-after",
        "fi",
    ]
    # Reverse order: a client goes before its server, as in the local runner.
    lines += [f"stop_load {load.name}" for load in reversed(loads)]
    return "\n".join([*lines, send("raw", "meta", "state")])


def _traced(tracer: list[str]) -> list[str]:
    """The tracer in raw/ (where it saves its trace), the kernel's tracers noted, and only the
    tail of a saved trace kept: what precedes the stop explains it, and the console is slow."""
    return [
        *_TRACEFS,
        f"  ( cd {RAW} && {_q(tracer)} >{RAW}/tracer.stdout 2>{RAW}/tracer.stderr; "
        f"echo $? >{STATE}/tracer-rc )",
        f"  for f in {RAW}/*.txt; do [ -f \"$f\" ] && tail -n {TRACE_TAIL_LINES} \"$f\" "
        ">\"$f.tail\" && mv \"$f.tail\" \"$f\"; done",
    ]


def _guarded(plan: Plan, start: str) -> list[str]:
    """``start`` (a command line ending in ``&``) watched by the hang guard: SIGINT once it
    overruns the duration by the margin (cyclictest and rtla both still write their output on
    it); its exit status in state/TOOL-rc, the seconds it ran in state/measured-s."""
    hang_after = plan.duration_s + int(HANG_MARGIN_S)
    return [
        f"  {start}",
        "  ct=$!; t0=$(up)",
        "  while kill -0 $ct 2>/dev/null; do",
        f"    if [ ! -e {STATE}/hung ] && [ $(( $(up) - t0 )) -gt {hang_after} ]; then",
        f"      kill -INT $ct; echo $(( $(up) - t0 )) >{STATE}/hung; fi",
        "    sleep 0.2; done",
        f"  wait $ct; echo $? >{STATE}/{plan.tool}-rc; echo $(( $(up) - t0 )) "
        f">{STATE}/measured-s",
    ]


def _measured(plan: Plan) -> list[str]:
    """The measuring tool's part of the script, under the hang guard."""
    shell = tools.GuestShell(raw=RAW, state=STATE, quote=_q,
                             guarded=lambda start: _guarded(plan, start), tracefs=_TRACEFS)
    return tools.get(plan.tool).guest_lines(plan.command, shell)


def probe() -> str:
    """The script that describes the guest (kernel, CPUs, tool versions) into ``meta/``."""
    return PROBE + send("meta")


def send(*dirs: str) -> str:
    """Lines that send ``dirs`` of the guest root back over the console, checksummed."""
    return "\n".join([
        f"tar -C {GUEST_ROOT} -czf /tmp/rtgate-out.tgz {' '.join(dirs)}",
        "echo RTGATE-BEGIN",
        "base64 /tmp/rtgate-out.tgz",
        "echo \"RTGATE-END $(sha256sum </tmp/rtgate-out.tgz | cut -d' ' -f1)\"",
    ]) + "\n"
