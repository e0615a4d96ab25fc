"""The collect step: one board run's raw files and facts (a RawRun) into ``OUT/result.json``.

Every board goes through it, the local bench too (``rtgate bench`` on any machine): the run's
id, the parse of the measuring tool's raw output with what the runner saw
(rtgate.harness.assemble), the board's own claims, its loads and the controller's, the board's
own readings that degrade the run, and the tuning profile's verification, in that order. A
driver only supplies what differs, in the RawRun; nothing here talks to a board.
"""

from __future__ import annotations

from datetime import datetime

from rtgate.board.base import MeasuredRun
from rtgate.board.loadreport import LoadReport
from rtgate.board.peer import peer_records
from rtgate.board.rawrun import Claims, RawRun, TuningReadings
from rtgate.board.tuning import Applied, recorded
from rtgate.harness.assemble import RunInfo, assemble, run_id
from rtgate.harness.environment import Environment, Throttled
from rtgate.layout import RAW, RESULT
from rtgate.result import Result, Status

_WORSE: dict[Status, int] = {"complete": 0, "degraded": 1, "partial": 2}


def collect(raw: RawRun) -> MeasuredRun:
    """The run's result, written to ``raw.out/result.json``."""
    plan, env = raw.plan, raw.environment
    rawdir = (raw.out / RAW).resolve()
    info = RunInfo(run_id=run_id(raw.board, plan.scenario, raw.log.start, job=raw.job),
                   board=raw.board, virtual=raw.virtual,
                   flavor=raw.flavor or ("rt" if env.preempt_rt else "stock"),
                   cyclictest_version=raw.cyclictest_version, rtla_version=raw.rtla_version)
    result = assemble(plan, raw.log, env, rawdir, info, strict=raw.strict)
    if raw.claims is not None:
        result = _claimed(result, raw.claims)
    records = [*raw.loads, *peer_records(raw.peer_loads, _until(raw, result))]
    if records:
        result = LoadReport(records).apply(result)
    if raw.throttled is not None or raw.degraded_by:
        result = _degraded(result, raw.throttled, raw.degraded_by)
    if raw.tuning is not None:
        result = _tuned(result, raw.tuning, raw.board)
    path = result.write(raw.out / RESULT)
    return MeasuredRun(result=result, result_path=path, raw_dir=rawdir)


def _until(raw: RawRun, result: Result) -> datetime | None:
    if raw.measured_until == "seen":
        return raw.log.end
    try:
        return datetime.fromisoformat(result.end) if result.end else None
    except ValueError:
        return None  # every early exit of the peer's loads then counts: degraded, not a pass


def _claimed(result: Result, claims: Claims) -> Result:
    """``result`` with the board's load records and its own account of what went wrong: a claim
    can make the status worse, never better, and brings no number."""
    worse = _WORSE[claims.status] > _WORSE[result.status]
    updated = result.model_copy(update={
        "loads": [*result.loads, *claims.loads],
        "status": claims.status if worse else result.status,
        "reasons": list(dict.fromkeys(
            [*result.reasons, *(claims.reasons if claims.status != "complete" else [])])),
    })
    return Result.model_validate(updated.model_dump(by_alias=True))


def _degraded(result: Result, throttled: Throttled | None, reasons: list[str]) -> Result:
    """``result`` with the board's readings recorded and what they say degraded it."""
    update: dict[str, object] = {}
    if throttled is not None:
        update["environment"] = Environment.of(result).updated(throttled=throttled).written()
    if reasons:
        update["status"] = "partial" if result.status == "partial" else "degraded"
        update["reasons"] = [*result.reasons, *reasons]
    return Result.model_validate(result.model_copy(update=update).model_dump(by_alias=True))


def _tuned(result: Result, readings: TuningReadings, board: str) -> Result:
    """``result`` with its tuning profile's record; a failed check makes it incomplete."""
    tuned = Applied(readings.profile, board, readings.cpus)
    checks = [*readings.boot,
              *tuned.verify_tasks(readings.during, readings.programs, root=readings.root),
              *tuned.verify(readings.end, "end")]
    return recorded(result, tuned.record(checks))
