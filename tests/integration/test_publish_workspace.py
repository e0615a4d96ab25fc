"""`rtgate publish` from a workspace holding a bench/ of its own: run as a process, as that
workspace is its data root."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from clirun import RunProcess
from junitparser import JUnitXml
from test_publish import (
    HOSTILE,
    ROOT,
    RT,
    STOCK,
    Published,
    ab_run,
    assert_inert,
    place,
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
        "rounds' results" in run.comment
    assert "same within ×1.5 either way, B/A in [0.667, 1.5] (at least 1 µs)" in row
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


@pytest.mark.parametrize("planned, outcome", [(["idle"], "regression"),
                                               (["idle", "cpu"], "infrastructure")])
def test_the_ab_keys_replayed_are_the_plans(rtgate_process: RunProcess, tmp_path: Path,
                                            planned: list[str], outcome: str) -> None:
    """The plan job copies its calibration record's keys into the plan (latency-gate.yml): the
    record's cap and rates are for those, and the gate job measures those. The publisher replays
    the plan's scenarios, not the run's (here the board's own, cpu): a key the plan names and
    the artifact lacks is a round without a measurement."""
    art, context, args = ab_run(tmp_path, "idle", "idle-loaded")
    data = json.loads((context / "context.json").read_text())
    data["scenarios"] = []
    data["ab"]["local"]["scenarios"] = planned
    (context / "context.json").write_text(json.dumps(data))
    run = Published(rtgate_process, tmp_path, art, args=args)
    assert run.outcome["boards"] == {"local": outcome}, run.comment
    assert ("running/cpu" in run.comment) == ("cpu" in planned), run.comment


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


# ---- A pull request's gate asks for a board kind: any of its boards may measure ---------------

def _lab(tmp: Path, boards: dict[str, str], like: str) -> Path:
    """A workspace whose bench/boards holds these boards (name: kind), each a copy of ``like``'s
    file, and the default branch's scenarios; its bench/boards directory."""
    root = tmp / "bench" / "boards"
    root.mkdir(parents=True)
    shutil.copytree(ROOT / "bench" / "scenarios", tmp / "bench" / "scenarios")
    board = yaml.safe_load((ROOT / "bench" / "boards" / f"{like}.yml").read_text())
    for name, kind in boards.items():
        (root / f"{name}.yml").write_text(yaml.safe_dump({**board, "name": name, "kind": kind}))
    return root


def _pr_context(tmp: Path, kinds: list[str], ab: dict[str, object] | None = None) -> Path:
    context = tmp / "context"
    context.mkdir()
    (context / "context.json").write_text(json.dumps({
        "event": "workflow_run", "head_sha": "a" * 40, "pull_request": 7, "boards": kinds,
        "ab": ab or {}}))
    return context


@pytest.mark.parametrize("boards", [{"rpi5": "rpi5", "rpi5-b": "rpi5"},
                                    {"rpi5-a": "rpi5", "rpi5-b": "rpi5"}],
                         ids=["kind-has-a-board-file", "kind-has-none"])
def test_a_kinds_artifact_measured_on_another_of_its_boards_is_judged(
        rtgate_process: RunProcess, tmp_path: Path, boards: dict[str, str]) -> None:
    """A pull request's rpi5 job ran on rpi5-b: its artifact is gate-rpi5 (the kind the run
    context expects) and its results name rpi5-b. They are judged with rpi5's budgets and the
    comment says which Pi measured; with or without a board file named rpi5."""
    root = _lab(tmp_path, boards, "rpi5")
    gate = tmp_path / "gate"
    place(gate, "rpi5", "rt", "all-in", RT, board__name="rpi5-b")
    place(gate, "rpi5", "stock", "all-in", STOCK, board__name="rpi5-b")
    context = _pr_context(tmp_path, ["rpi5"])
    run = Published(rtgate_process, tmp_path, gate / "gate-rpi5",
                    args=("--boards", str(root), "--context", str(context)))
    assert run.proc.returncode == 0, run.comment + run.proc.stderr
    assert run.outcome["boards"] == {"rpi5": "pass"}
    assert "- `rpi5` (on `rpi5-b`): ✅" in run.comment
    cases = {c.name for suite in JUnitXml.fromfile(str(run.junit)) for c in suite}
    assert "rpi5-b/rt/all-in: max_us <= 155" in cases
    assert_inert(run.comment)
    # The same results named by the instance (main's push measures each board): refused.
    (gate / "gate-rpi5").rename(gate / "gate-rpi5-b")
    run = Published(rtgate_process, tmp_path, gate / "gate-rpi5-b",
                    args=("--boards", str(root), "--context", str(context)))
    assert run.outcome["outcome"] == "infrastructure" and "`gate-rpi5-b`" in run.comment


def test_a_kinds_artifact_claiming_a_board_of_another_kind_is_refused(
        rtgate_process: RunProcess, tmp_path: Path) -> None:
    root = _lab(tmp_path, {"rpi5-a": "rpi5", "rpi5-b": "rpi5", "pi-x": "pi-x"}, "rpi5")
    gate = tmp_path / "gate"
    place(gate, "rpi5", "rt", "all-in", RT, board__name="pi-x")
    place(gate, "rpi5", "stock", "all-in", STOCK, board__name="pi-x")
    run = Published(rtgate_process, tmp_path, gate / "gate-rpi5",
                    args=("--boards", str(root), "--context", str(_pr_context(tmp_path, ["rpi5"]))))
    assert run.proc.returncode == 2 and run.outcome["outcome"] == "input"
    assert "the result claims pi-x/rt/all-in, where the gate writes rpi5-a/rt/all-in" \
        in run.comment


def test_a_kind_no_board_file_is_of_is_an_input_error(
        rtgate_process: RunProcess, tmp_path: Path) -> None:
    root = _lab(tmp_path, {"rpi5-a": "rpi5"}, "rpi5")
    md = tmp_path / "c.md"
    proc = rtgate_process("publish", "--boards", root, "--markdown", md, "--thresholds",
                          ROOT / "thresholds.yml",
                          "--context", _pr_context(tmp_path, ["rpi6"]), cwd=tmp_path)
    assert proc.returncode == 2 and "no board of kind 'rpi6' in bench/boards" in proc.stderr


def test_a_kinds_ab_rounds_on_another_of_its_boards_are_re_decided(
        rtgate_process: RunProcess, tmp_path: Path) -> None:
    """The A/B plan and the rounds of a kind measured on its second board: replayed with the
    kind's plan, the rounds naming the instance."""
    art, context, args = ab_run(tmp_path, "idle", "idle-loaded")
    root = _lab(tmp_path, {"local-a": "local", "local-b": "local"}, "local")
    for path in art.glob("[AB]/round-*/running/idle/result.json"):
        data = json.loads(path.read_text())
        data["board"]["name"] = "local-b"
        path.write_text(json.dumps(data))
    run = Published(rtgate_process, tmp_path, art, args=(*args, "--boards", str(root)))
    assert run.proc.returncode == 1, run.comment + run.proc.stderr
    assert run.outcome["boards"] == {"local": "regression"}
    assert "### A/B on `local`" in run.comment and "(on `local-b`)" in run.comment


def test_a_lava_board_of_a_kind_is_judged_by_its_own_name_in_a_pull_requests_gate(
        rtgate_process: RunProcess, tmp_path: Path) -> None:
    """gate-lava runs one job per LAVA board, in a pull request's gate too (gate-BOARD): a LAVA
    board whose kind is another name is still expected and judged under its own."""
    root = _lab(tmp_path, {"lava-pi": "rpi5"}, "rpi5")
    board = yaml.safe_load((ROOT / "bench" / "boards" / "lava-qemu.yml").read_text())
    (root / "lava-pi.yml").write_text(yaml.safe_dump({**board, "name": "lava-pi", "kind": "rpi5"}))
    gate = tmp_path / "gate"
    place(gate, "lava-pi", "rt", "all-in", RT, board__name="lava-pi")
    place(gate, "lava-pi", "stock", "all-in", STOCK, board__name="lava-pi")
    run = Published(rtgate_process, tmp_path, gate / "gate-lava-pi",
                    args=("--boards", str(root), "--scenarios", "all-in",
                          "--context", str(_pr_context(tmp_path, ["lava-pi"]))))
    assert run.proc.returncode == 0, run.comment + run.proc.stderr
    assert run.outcome["boards"] == {"lava-pi": "pass"}
