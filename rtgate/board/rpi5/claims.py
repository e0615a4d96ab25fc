"""What the board says about its own run, read by the controller and never taken on trust. The
result is computed from the raw cyclictest files it pulled, by the collect step with the
harness's strict parser (rtgate.board.collect); the board's ``result.json`` is kept as data
(``CLAIMS``) and lends only descriptions (its environment, its loads' records, a status that can
only make the result's worse). The firmware's throttling readings around the run, and the peer's
load records, are the controller's own."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from rtgate.board.rawrun import Claims
from rtgate.board.rpi5 import throttle
from rtgate.board.rpi5.session import RunningKernel
from rtgate.errors import InfraError, InputError
from rtgate.harness.environment import Environment, Throttled, preempt_rt
from rtgate.result import Result, Trace, load_result

CLAIMS = "bench-claims.json"
"""The board's own result.json, kept as data beside the controller's result (never judged)."""
TRACE_CLAIMS = "trace-claims.json"
"""The board's own reading of its trace run, kept as data; only its note is ever shown."""
SAID_CHARS = 300
"""Of that note, shown in the failure: one line, this long at most."""


def claims(name: str, out: Path, board_exit: int) -> Result:
    """The board's own result of the run in ``out``: an InfraError when it wrote none, or none
    readable."""
    path = out / CLAIMS
    if not path.is_file():
        raise InfraError(f"`rtgate bench` on {name} wrote no result (exit "
                         f"{board_exit}); see bench.log", path=out)
    try:
        return load_result(path)
    except InputError as exc:
        raise InfraError(f"`rtgate bench` on {name} wrote an unreadable result: "
                         f"{exc.oneline()}", path=path) from exc


def described(name: str, out: Path, claimed: Result) -> Environment:
    """The board's own account of its environment, typed: an InfraError when a key it wrote
    has the wrong type (it is read, not trusted)."""
    try:
        return Environment.of(claimed)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        raise InfraError(f"`rtgate bench` on {name} wrote an unreadable result: environment."
                         f"{where}: {first['msg']}", path=out / CLAIMS) from exc


def environment(name: str, out: Path, claimed: Result, running: RunningKernel, *,
                tool_sha256: dict[str, str], privileges: dict[str, str]) -> Environment:
    """The run's environment: the board's description, with the kernel the controller read,
    the tools' digests it checked and the privileges the trial found."""
    return described(name, out, claimed).updated(
        kernel_release=running.release, kernel_version=running.version,
        machine=running.machine, sys_kernel_realtime=running.realtime,
        preempt_rt=preempt_rt(running.version, running.realtime),
        tool_sha256=tool_sha256, privileges=privileges)


def readings(before: int | None, after: int | None) -> Throttled:
    """The firmware's get_throttled around the run, as the environment records it."""
    return Throttled(before=None if before is None else hex(before),
                     after=None if after is None else hex(after))


def lent(claimed: Result) -> Claims:
    """What the board's result may lend the controller's: its loads' records, its status and
    reasons (only ever to make the result's worse)."""
    return Claims(status=claimed.status, reasons=claimed.reasons, loads=claimed.loads)


def throttling(before: int | None, after: int | None) -> list[str]:
    """Why the run is degraded by the firmware's readings: the Pi throttled or saw
    under-voltage while it measured (it measured its supply or cooling, not the kernel), or
    the readings cannot tell (a sticky bit already set before, no reading after)."""
    reasons = []
    if happened := throttle.during(before, after):
        reasons.append(f"the Pi reported {', '.join(happened)} during the run (vcgencmd "
                       f"get_throttled {hex(before or 0)} -> {hex(after or 0)})")
    if why := throttle.unseen(before, after):
        reasons.append(f"cannot tell whether the Pi throttled during the run: {why}")
    return reasons


def said(path: Path) -> str | None:
    """The note of the board's trace reading (its first line, cut short), None without one."""
    try:
        note = Trace.model_validate_json(path.read_bytes()).note
    except (OSError, ValueError):
        return None
    first = note.strip().splitlines()[0] if note and note.strip() else ""
    return first[:SAID_CHARS] or None
