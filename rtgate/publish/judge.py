"""A gate's artifacts judged from their result files alone: each kept only where the gate writes
it, for a board the default branch knows, with the default branch's budgets."""

from __future__ import annotations

import re
from pathlib import Path

from rtgate.board import spec as boardspec
from rtgate.board.spec import BoardSpec, flavors_of, load_board, scenarios_of
from rtgate.errors import InputError
from rtgate.gate import written
from rtgate.gate.thresholds import Thresholds
from rtgate.gate.verdict import Crash, Infra, Ruling, Unjudged, judge_result
from rtgate.layout import RUNNING, run_home
from rtgate.publish.context import ABPlan
from rtgate.publish.judgement import BoardJudgement, Judgement
from rtgate.publish.replay import ab_board
from rtgate.result import load_result

ARTIFACT_PREFIX = "gate-"
_NAME = re.compile(r"[a-z0-9][a-z0-9._-]*")


def judge_artifacts(artifacts: list[Path], thresholds: Thresholds, boards_root: Path,
                    expected: list[str] | None, scenarios: list[str] | None,
                    ab_plans: dict[str, ABPlan] | None = None, *,
                    by_kind: bool = False) -> Judgement:
    """Judge each board's expected runs from the result files alone.

    ``by_kind``: a pull request's gate, whose lab jobs each ask for a board KIND and run on
    whichever of its boards is free: names (artifacts, expected, plans) are kinds (a LAVA
    board's its own, ``_gated_as``), and each artifact's results are those of the board of that
    kind they name (kept for provenance). A kind needs no board file of its own name (rpi5-a
    and rpi5-b, both ``kind: rpi5``)."""

    files = {p.stem for p in boards_root.glob("*.yml")}
    kinds = {name: _gated_as(load_board(name, boards_root)) for name in files} if by_kind else {}
    known = set(kinds.values()) if by_kind else files
    found: dict[str, Path] = {}
    ignored: list[str] = []
    for directory in artifacts:
        board = directory.name.removeprefix(ARTIFACT_PREFIX)
        if (directory.name.startswith(ARTIFACT_PREFIX) and _NAME.fullmatch(board)
                and board in known and directory.is_dir() and not directory.is_symlink()):
            found[board] = directory
        else:
            ignored.append(directory.name)
    wanted = expected if expected is not None else sorted(found)
    result: list[BoardJudgement] = []
    accepted: list[Path] = []
    for name in wanted:
        if name not in known:
            raise InputError(f"{'no board of kind' if by_kind else 'board'} {name!r} "
                             f"{'in' if by_kind else 'is not in'} bench/boards")
        instances = sorted(b for b, k in kinds.items() if k == name) if by_kind else [name]
        spec = load_board(_instance(found.get(name), instances), boards_root)
        plan = ab_plans.get(name) if ab_plans else None
        # An A/B board measured its plan's keys (its calibration record's), nothing else.
        flavors = flavors_of(spec, plan.flavors if plan else None)
        measured = scenarios_of(spec, (plan.scenarios or scenarios) if plan else scenarios)
        runs = [(f or RUNNING, s) for f in flavors for s in measured]
        if name not in found:
            result.append(BoardJudgement(name, [Infra(name, f, s, Path(f"{ARTIFACT_PREFIX}{name}"),
                                             "the gate uploaded no artifact for this board")
                                       for f, s in runs]))
            continue
        if plan is not None:
            result.append(ab_board(name, found[name], spec, flavors, measured, thresholds, plan))
            continue
        outcomes = [_run(found[name], spec, f, s, thresholds, boards_root, accepted)
                    for f, s in runs]
        result.append(BoardJudgement(name, outcomes, instance=spec.name))
    return Judgement(result, ignored, accepted)


def judge_run(directory: Path, board: str, thresholds: Thresholds, boards_root: Path,
              scenarios: list[str] | None, flavors: list[str] | None = None) -> BoardJudgement:
    """One board's run directory (``rtgate pipeline --out``), judged as its gate-BOARD
    artifact would be."""
    spec = load_board(board, boards_root)
    accepted: list[Path] = []
    return BoardJudgement(board, [_run(directory, spec, f or RUNNING, s, thresholds, boards_root,
                                       accepted)
                                  for f in flavors_of(spec, flavors)
                                  for s in scenarios_of(spec, scenarios)], instance=spec.name)


def _gated_as(spec: BoardSpec) -> str:
    """The name a pull request's gate measures a board under: its kind on a lab controller (any
    free board of the kind), its own on a LAVA lab (gate-lava runs a job per board)."""
    return spec.name if spec.driver == "lava" else boardspec.kind_of(spec)


def _instance(directory: Path | None, instances: list[str]) -> str:
    """The board of a kind whose results an artifact holds: the one its first result names when
    that is an instance of the kind, else the kind's first board (its results are then refused
    as claiming another board)."""
    if directory is not None and len(instances) > 1:
        for path in written.results(directory):
            try:
                claimed = load_result(path).board.name
            except InputError:
                continue
            return claimed if claimed in instances else instances[0]
    return instances[0]


def _run(directory: Path, spec: BoardSpec, flavor: str, scenario: str, thresholds: Thresholds,
         boards: Path, accepted: list[Path]) -> Ruling:
    home = run_home(directory, flavor, scenario)
    read = written.read_back(directory, home, spec.name, None if flavor == RUNNING else flavor,
                             scenario)
    if read.refused is not None:
        return Unjudged(read.path, read.said)
    if read.result is None:
        # A crash is believed only with its evidence beside the record (infrarecord.load), and
        # only for the run where the gate writes it: the record's own names are not read.
        if isinstance(read.failed, Crash):
            return Crash(spec.name, flavor, scenario, home, read.failed.message,
                         said=read.failed.said, evidence=read.failed.evidence)
        return Infra(spec.name, flavor, scenario, home,
                     "no result.json: the run did not finish (its logs are in the artifact)")
    accepted.append(read.path)
    return judge_result(read.result, read.path, thresholds, boards=boards,
                        allow_unbudgeted=False)
