"""The controller's reading of what the board left: nothing the board says is taken on trust.
The result is computed from the raw cyclictest files it pulled, with the harness's own strict
parser; the board's ``result.json`` is kept as data (``CLAIMS``) and lends only descriptions,
and can only make a status worse. The firmware's throttling readings around the run, and the
peer's load records, are the controller's own."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from pydantic import ValidationError

from rtgate.board.loadreport import LoadReport
from rtgate.board.peer import peer_records
from rtgate.board.rawrun import RawRun
from rtgate.board.rpi5 import throttle
from rtgate.errors import InfraError, InputError
from rtgate.harness.assemble import RunInfo, assemble
from rtgate.harness.environment import Environment, Throttled, preempt_rt
from rtgate.harness.runner import RunLog
from rtgate.layout import RAW
from rtgate.result import Result, Status, Trace, load_result

CLAIMS = "bench-claims.json"
"""The board's own result.json, kept as data beside the controller's result (never judged)."""
TRACE_CLAIMS = "trace-claims.json"
"""The board's own reading of its trace run, kept as data; only its note is ever shown."""
SAID_CHARS = 300
"""Of that note, shown in the failure: one line, this long at most."""
_WORSE: dict[Status, int] = {"complete": 0, "degraded": 1, "partial": 2}


def claims(name: str, raw: RawRun) -> Result:
    """The board's own result of ``raw``: an InfraError when it wrote none, or none readable."""
    path = raw.out / CLAIMS
    if not path.is_file():
        raise InfraError(f"`rtgate bench` on {name} wrote no result (exit "
                         f"{raw.board_exit}); see bench.log", path=raw.out)
    try:
        return load_result(path)
    except InputError as exc:
        raise InfraError(f"`rtgate bench` on {name} wrote an unreadable result: "
                         f"{exc.oneline()}", path=path) from exc


def computed(raw: RawRun, claimed: Result, *, board: str, virtual: bool,
             flavor: str | None) -> Result:
    """The result the controller computes from the raw files it pulled (read strictly, all
    together), described by the board's ``claimed`` result, with the peer's loads and the
    throttling readings; ``flavor`` when ``raw`` names none (else the running kernel's)."""
    plan, running, version = raw.plan, raw.kernel, raw.cyclictest_version
    assert plan is not None and running is not None and version is not None  # run() sets them
    rt = preempt_rt(running.version, running.realtime)
    info = RunInfo(run_id=raw.run_id, board=board, virtual=virtual,
                   flavor=raw.flavor or flavor or ("rt" if rt else "stock"),
                   cyclictest_version=version)
    env = described(board, raw, claimed).updated(
        kernel_release=running.release, kernel_version=running.version,
        machine=running.machine, sys_kernel_realtime=running.realtime, preempt_rt=rt,
        tool_sha256=raw.tool_sha256, privileges=raw.privileges)
    run_log = RunLog(start=raw.start, end=raw.end,
                     loadavg_before=env.loadavg_before, loadavg_after=env.loadavg_after,
                     max_temp_c=env.max_temp_c, max_temp_zone=env.max_temp_zone)
    rawdir = (raw.out / RAW).resolve()
    result = _described(assemble(plan, run_log, env, rawdir, info, strict=True), claimed)
    try:
        end = datetime.fromisoformat(result.end) if result.end else None
    except ValueError:
        end = None  # every early exit of the peer's loads then counts: degraded, not a pass
    result = LoadReport(peer_records(raw.peer_loads, end)).apply(result)
    return _unthrottled(result, *(raw.throttled or [None, None]))


def described(name: str, raw: RawRun, claimed: Result) -> Environment:
    """The board's own account of its environment, typed: an InfraError when a key it wrote
    has the wrong type (it is read, not trusted)."""
    try:
        return Environment.of(claimed)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        raise InfraError(f"`rtgate bench` on {name} wrote an unreadable result: environment."
                         f"{where}: {first['msg']}", path=raw.out / CLAIMS) from exc


def said(path: Path) -> str | None:
    """The note of the board's trace reading (its first line, cut short), None without one."""
    try:
        note = Trace.model_validate_json(path.read_bytes()).note
    except (OSError, ValueError):
        return None
    first = note.strip().splitlines()[0] if note and note.strip() else ""
    return first[:SAID_CHARS] or None


def _unthrottled(result: Result, before: int | None, after: int | None) -> Result:
    """``result`` with the firmware's throttling record; degraded when the Pi throttled or
    saw under-voltage while it measured (it measured its supply or cooling, not the kernel), or
    when the readings cannot tell (a sticky bit already set before, no reading after)."""
    env = Environment.of(result).updated(throttled=Throttled(
        before=None if before is None else hex(before),
        after=None if after is None else hex(after)))
    update: dict[str, object] = {"environment": env.written()}
    reasons = []
    if happened := throttle.during(before, after):
        reasons.append(f"the Pi reported {', '.join(happened)} during the run (vcgencmd "
                       f"get_throttled {hex(before or 0)} -> {hex(after or 0)})")
    if why := throttle.unseen(before, after):
        reasons.append(f"cannot tell whether the Pi throttled during the run: {why}")
    if reasons:
        update["status"] = "partial" if result.status == "partial" else "degraded"
        update["reasons"] = [*result.reasons, *reasons]
    return Result.model_validate(result.model_copy(update=update).model_dump(by_alias=True))


def _described(result: Result, claimed: Result) -> Result:
    """``result`` with the board's load records and its own account of what went wrong: a claim
    can make the status worse, never better, and brings no number."""
    worse = _WORSE[claimed.status] > _WORSE[result.status]
    updated = result.model_copy(update={
        "loads": [*result.loads, *claimed.loads],
        "status": claimed.status if worse else result.status,
        "reasons": list(dict.fromkeys(
            [*result.reasons, *(claimed.reasons if claimed.status != "complete" else [])])),
    })
    return Result.model_validate(updated.model_dump(by_alias=True))
