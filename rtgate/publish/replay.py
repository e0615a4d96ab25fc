"""A board's A/B rounds decided again from their result files, with the plan the gate's trusted
plan job recorded (``rtgate.ab.loop.ABRun.replay``), never from ab.json or ab.md."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from rtgate import calibration
from rtgate.ab.loop import ABRun, Side
from rtgate.ab.settings import RoundSettings
from rtgate.board import spec as boardspec
from rtgate.board.spec import BoardSpec
from rtgate.errors import InputError
from rtgate.gate.thresholds import Thresholds
from rtgate.gate.verdict import Unjudged
from rtgate.publish.context import ABPlan
from rtgate.publish.judgement import BoardJudgement


def ab_board(name: str, directory: Path, spec: BoardSpec, flavors: list[str],
             scenarios: list[str], thresholds: Thresholds, plan: ABPlan) -> BoardJudgement:
    """Re-decide one board's A/B rounds from their results with the gate's plan, and with the
    calibration record it names (the default branch's: one that changed since is refused)."""
    record = None
    if plan.calibration_sha256:
        path = calibration.DIRECTORY / f"{boardspec.kind_of(spec)}.json"
        if not path.is_file() or calibration.sha256_of(path) != plan.calibration_sha256:
            why = (f"the plan names calibration record sha256 {plan.calibration_sha256[:12]}…, "
                   "which the default branch no longer holds: not re-decided")
            return BoardJudgement(name, [Unjudged(path, why)], instance=spec.name)
        record = calibration.load(path)
    settings = RoundSettings(out=directory, round_duration=plan.round_s,
                             max_time=plan.max_time_s, planned_rounds=plan.rounds,
                             calibration=record)
    run = ABRun(spec, (Side("A", "base", None, None), Side("B", "candidate", None, None)),
                [(f, s) for f in flavors for s in scenarios], thresholds, settings,
                Console(stderr=True, quiet=True))
    try:
        run.replay()
    except InputError as exc:
        return BoardJudgement(name, [Unjudged(Path(exc.path or directory), exc.oneline())],
                              instance=spec.name)
    # Only the candidate's rounds decide a budget; the base's are notes in the A/B section.
    return BoardJudgement(name, [v.evaluation for v in run.verdicts
                                 if v.side.role == "candidate"], run, spec.name)
