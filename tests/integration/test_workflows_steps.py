"""The workflows' plan steps run as GitHub's runner does (bash, jq)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from test_workflows import GATE, ROOT, all_boards, load


@pytest.mark.parametrize(("event", "boards", "planned"), [
    ("workflow_run", '["qemu-arm64","rpi5","local"]', {"qemu-arm64", "rpi5"}),
    ("workflow_run", '["rpi5"]', {"rpi5"}),
    ("push", '["qemu-arm64","rpi5"]', set())])
def run_plan_step(tmp_path: Path, event: str, boards: str) -> subprocess.CompletedProcess[str]:
    """The plan job's "Boards to measure" script, run on the default branch's checkout (its
    boards' files) with the given lab boards; its outputs in tmp_path/output, the run context
    in tmp_path/ctx."""
    gate = load(GATE)
    script = next(s["run"] for s in gate["jobs"]["plan"]["steps"] if s.get("id") == "boards")
    env = {"PATH": os.environ["PATH"], "EVENT": event, "BOARD": "", "SCENARIOS": "",
           "LAB_BOARDS": boards, "HEAD_SHA": "b" * 40, "CONTEXT": str(tmp_path / "ctx"),
           "GATE_AB": gate["env"]["GATE_AB"], "GITHUB_OUTPUT": str(tmp_path / "output")}
    return subprocess.run(["bash", "-euo", "pipefail", "-c", script], env=env, cwd=ROOT,
                          capture_output=True, text=True)


def step_outputs(tmp_path: Path) -> dict[str, str]:
    lines = (tmp_path / "output").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines)


@pytest.mark.parametrize(("event", "boards", "planned"), [
    ("workflow_run", '["qemu-arm64","rpi5","local"]', {"qemu-arm64", "rpi5"}),
    ("workflow_run", '["rpi5"]', {"rpi5"}),
    ("push", '["qemu-arm64","rpi5"]', set())])
def test_only_a_pull_requests_context_carries_the_ab_plan(
        tmp_path: Path, event: str, boards: str, planned: set[str]) -> None:
    """The plan job's script, run: a pull request's context holds GATE_AB's plan of each of
    its boards that has one, as the publisher's Context model reads it; main's holds none."""
    from rtgate.publish import Context

    proc = run_plan_step(tmp_path, event, boards)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    context = Context.model_validate_json((tmp_path / "ctx" / "context.json").read_bytes())
    assert set(context.ab) == planned
    trust = "pr" if event == "workflow_run" else "main"
    assert step_outputs(tmp_path)["trust"] == trust


def test_the_plan_sends_lava_boards_to_the_hosted_job_and_the_rest_to_their_controllers(
        tmp_path: Path) -> None:
    """Every shipped board, routed by the plan's script from its board file: `driver: lava`
    to gate-lava with the kernel it boots, the others to their controllers; the run context
    still names every board, so the publisher expects each one's gate-BOARD artifact."""
    import json

    from rtgate.board.spec import load_board
    from rtgate.publish import Context

    everything = sorted(all_boards())
    proc = run_plan_step(tmp_path, "workflow_run", json.dumps(everything))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    outputs = step_outputs(tmp_path)
    specs = {b: load_board(b) for b in everything}
    lava = [b for b in everything if specs[b].driver == "lava"]
    assert lava, "no LAVA board ships: the routing is untested"
    assert json.loads(outputs["boards"]) == [b for b in everything if b not in lava]
    assert json.loads(outputs["lava"]) == [{"board": b, "kernel_target": specs[b].kernel_target}
                                           for b in lava]
    assert json.loads(outputs["kernel_targets"]) == sorted(
        {s.kernel_target for s in specs.values() if s.kernel_target})
    assert json.loads(outputs["lava_kernel_targets"]) == sorted(
        {specs[b].kernel_target for b in lava})
    context = Context.model_validate_json((tmp_path / "ctx" / "context.json").read_bytes())
    assert context.boards == everything


@pytest.mark.parametrize("boards", ['["../bench/boards/rpi5"]', '["no-such-board"]'])
def test_the_plan_refuses_a_board_that_is_not_a_board_file(tmp_path: Path, boards: str) -> None:
    proc = run_plan_step(tmp_path, "push", boards)
    assert proc.returncode == 2 and "in bench/boards" in proc.stdout
