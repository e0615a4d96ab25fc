"""`rtgate publish` from a workspace holding a bench/ of its own: run as a process, as that
workspace is its data root."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from clirun import RunProcess
from junitparser import JUnitXml
from test_publish import (
    HOSTILE,
    STOCK,
    Published,
    ab_run,
    assert_inert,
)


def test_the_ab_outcome_is_re_decided_from_the_rounds_never_from_ab_json(
        rtgate_process: RunProcess, tmp_path: Path) -> None:
    art, _, args = ab_run(tmp_path, "idle", "idle-loaded")
    # What the measuring job wrote about itself: ignored.
    (art / "ab.json").write_text(json.dumps({"outcome": "same", "exit": 0}))
    (art / "ab.md").write_text(f"## rtgate ab: same {HOSTILE}\n")
    run = Published(rtgate_process, tmp_path, art, args=args)
    assert run.proc.returncode == 1, run.proc.stderr
    assert run.outcome["outcome"] == "regression" and run.outcome["boards"] == {
        "local": "regression"}
    assert "### A/B on `local`: main's kernel (A) against this pull request's (B)" in run.comment
    assert "❌ worse" in run.comment and "| `local` | `stock` | `idle` | **worse** |" \
        in run.comment
    # The effect with its interval, the rounds used, the budget.
    row = next(line for line in run.comment.splitlines() if "**worse**" in line)
    assert "p99.9 +" in row and "µs) at 0." in row and "`max ≤ 100000 · avg ≤ 1000 µs" in row
    # Decided at the first look (3 rounds a side): the later rounds are not looked at, and the
    # JUnit holds the budget verdicts of the candidate's three rounds (the base's decide nothing).
    assert "| 3/3 |" in row
    suites = list(JUnitXml.fromfile(str(run.junit)))
    sources = [p.value for s in suites for p in s.properties() if "result.json" in p.value]
    assert sorted(sources) == [str(art / "B" / f"round-{n}" / "running" / "idle" / "result.json")
                               for n in (1, 2, 3)]
    assert "Effect: the primary metric's change B/A" in run.comment and "re-decided from the " \
        "rounds' results" in run.comment and "same within ± 50 % (at least 1 µs)" in row
    assert "approved by" not in run.comment and "same (exit 0)" not in run.comment
    assert_inert(run.comment)


def test_a_plan_naming_a_calibration_record_the_default_branch_lacks_is_not_re_decided(
        rtgate_process: RunProcess, tmp_path: Path) -> None:
    """The plan job copied a record's sha256 into the run context; the publisher's checkout
    holds no such record (or another one): the board is not judged, never judged with
    another record's primary metrics."""
    art, context, args = ab_run(tmp_path, "idle", "idle-loaded")
    data = json.loads((context / "context.json").read_text())
    data["ab"]["local"]["calibration_sha256"] = "0" * 64
    (context / "context.json").write_text(json.dumps(data))
    run = Published(rtgate_process, tmp_path, art, args=args)
    assert run.proc.returncode != 0, run.proc.stderr
    assert "which the default branch no longer holds: not re-decided" in run.comment
    assert "**worse**" not in run.comment


def test_ab_rounds_that_cannot_tell_the_kernels_apart_are_undecided_not_a_lab_failure(
        rtgate_process: RunProcess, tmp_path: Path) -> None:
    art, _, args = ab_run(tmp_path, "idle", "idle-again")
    run = Published(rtgate_process, tmp_path, art, args=args)
    assert run.proc.returncode == 4, run.proc.stderr
    assert run.outcome == {**run.outcome, "outcome": "undecided", "exit": 4}
    assert "undecided at the time cap" in run.outcome["title"]
    assert "the rounds end after 6 a side" in run.comment
    assert "infrastructure" not in run.comment.lower()
    assert_inert(run.comment)


def test_a_missing_ab_round_is_an_infrastructure_failure(
        rtgate_process: RunProcess, tmp_path: Path) -> None:
    art, _, args = ab_run(tmp_path, "idle", "idle-again")
    (art / "B" / "round-4" / "running" / "idle" / "result.json").unlink()
    run = Published(rtgate_process, tmp_path, art, args=args)
    assert run.proc.returncode == 3 and run.outcome["outcome"] == "infrastructure"
    assert "candidate round 4 (running/idle): infrastructure failure" in run.comment
    assert "): 🛠️ infrastructure failure: a round has no measurement" in run.comment
    assert "not decided from the data" not in run.comment


def test_an_ab_round_claiming_another_run_is_refused(
        rtgate_process: RunProcess, tmp_path: Path) -> None:
    art, _, args = ab_run(tmp_path, "idle", "idle-loaded")
    shutil.copy(STOCK, art / "A" / "round-2" / "running" / "idle" / "result.json")
    run = Published(rtgate_process, tmp_path, art, args=args)
    assert run.proc.returncode == 2 and run.outcome["outcome"] == "input"
    assert "the result claims rpi5/stock/all-in" in run.comment
