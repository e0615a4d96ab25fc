"""The workflows' plan steps run as GitHub's runner does (bash, jq)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_workflows import GATE, ROOT, all_boards, load


@pytest.mark.parametrize(("event", "boards", "planned"), [
    ("workflow_run", '["qemu-arm64","rpi5","local"]', {"qemu-arm64", "rpi5"}),
    ("workflow_run", '["rpi5"]', {"rpi5"}),
    ("push", '["qemu-arm64","rpi5"]', set())])
def run_plan_step(tmp_path: Path, event: str, boards: str, root: Path = ROOT,
                  board: str = "") -> subprocess.CompletedProcess[str]:
    """The plan job's "Boards to measure" script, run on the default branch's checkout (its
    boards' files) with the given lab boards; its outputs in tmp_path/output, the run context
    in tmp_path/ctx."""
    gate = load(GATE)
    script = next(s["run"] for s in gate["jobs"]["plan"]["steps"] if s.get("id") == "boards")
    env = {"PATH": os.environ["PATH"], "EVENT": event, "BOARD": board, "SCENARIOS": "",
           "LAB_BOARDS": boards, "HEAD_SHA": "b" * 40, "CONTEXT": str(tmp_path / "ctx"),
           "GATE_AB": gate["env"]["GATE_AB"], "GITHUB_OUTPUT": str(tmp_path / "output"),
           # The plan job's venv: this checkout's rtgate, reading ``root``'s board files.
           "RTGATE_PYTHON": sys.executable}
    return subprocess.run(["bash", "-euo", "pipefail", "-c", script], env=env, cwd=root,
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
    from rtgate.publish.context import Context

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
    from rtgate.board.spec import load_board
    from rtgate.publish.context import Context

    everything = sorted(all_boards())
    proc = run_plan_step(tmp_path, "workflow_run", json.dumps(everything))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    outputs = step_outputs(tmp_path)
    specs = {b: load_board(b) for b in everything}
    lava = [b for b in everything if specs[b].driver == "lava"]
    assert lava, "no LAVA board ships: the routing is untested"
    # A pull request's jobs ask for a kind each (today every board is its own kind).
    assert json.loads(outputs["boards"]) == [{"board": "", "kind": b, "label": b}
                                             for b in everything if b not in lava]
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


def _with_rpi5_b(tmp_path: Path) -> Path:
    """The default branch's boards plus a second Pi: one board file naming its kind."""
    import shutil

    import yaml

    root = tmp_path / "checkout"
    shutil.copytree(ROOT / "bench" / "boards", root / "bench" / "boards")
    board = yaml.safe_load((ROOT / "bench" / "boards" / "rpi5.yml").read_text())
    board.update(name="rpi5-b", kind="rpi5")
    board["options"].update(host="rpi5-b-lab")
    (root / "bench" / "boards" / "rpi5-b.yml").write_text(yaml.safe_dump(board))
    return root


def test_a_second_pi_is_one_board_file_and_a_pull_request_takes_the_free_one(
        tmp_path: Path) -> None:
    """rpi5-b (kind: rpi5) added: a pull request's gate still asks for one rpi5 job, which
    runs on whichever rpi5-labelled runner is free; main's pushes and the nightly measure each
    Pi on its own runner; both Pis build the rpi5 kernel target."""
    from rtgate.board.spec import load_board
    from rtgate.publish.context import Context

    root = _with_rpi5_b(tmp_path)
    load_board("rpi5-b", root / "bench" / "boards")  # a valid board file
    lab = '["qemu-arm64","rpi5"]'
    (tmp_path / "pr").mkdir()
    (tmp_path / "push").mkdir()
    proc = run_plan_step(tmp_path / "pr", "workflow_run", lab, root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    outputs = step_outputs(tmp_path / "pr")
    assert json.loads(outputs["boards"]) == [
        {"board": "", "kind": "qemu-arm64", "label": "qemu-arm64"},
        {"board": "", "kind": "rpi5", "label": "rpi5"}]
    context = Context.model_validate_json((tmp_path / "pr" / "ctx" / "context.json").read_bytes())
    assert context.boards == ["qemu-arm64", "rpi5"] and "rpi5" in context.ab

    proc = run_plan_step(tmp_path / "push", "push", lab, root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    outputs = step_outputs(tmp_path / "push")
    assert sorted(json.loads(outputs["boards"]), key=lambda e: e["board"]) == [
        {"board": "qemu-arm64", "kind": "qemu-arm64", "label": "board-qemu-arm64"},
        {"board": "rpi5", "kind": "rpi5", "label": "board-rpi5"},
        {"board": "rpi5-b", "kind": "rpi5", "label": "board-rpi5-b"}]
    assert json.loads(outputs["kernel_targets"]) == ["qemu-arm64", "rpi5"]
    context = Context.model_validate_json(
        (tmp_path / "push" / "ctx" / "context.json").read_bytes())
    assert context.boards == ["qemu-arm64", "rpi5", "rpi5-b"]


@pytest.mark.parametrize(("board", "measured"), [
    # The kind: every Pi, each on its own runner (docs/lab.md, "Several boards of one kind").
    ("rpi5", ["rpi5", "rpi5-b"]),
    # A board that is no kind: that board alone; NAME.yml: the one file even when NAME is a kind.
    ("rpi5-b", ["rpi5-b"]),
    ("rpi5.yml", ["rpi5"])])
def test_a_dispatch_names_any_board_or_kind_in_bench_boards(tmp_path: Path, board: str,
                                                           measured: list[str]) -> None:
    """The dispatch's board input is text the plan job checks against the board files, so a
    board a lab adds (rpi5-b) is dispatchable without editing the workflow."""
    root = _with_rpi5_b(tmp_path)
    proc = run_plan_step(tmp_path, "workflow_dispatch", "[]", root, board)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    entries = json.loads(step_outputs(tmp_path)["boards"])
    assert sorted(e["board"] for e in entries) == measured
    assert {e["label"] for e in entries} == {f"board-{b}" for b in measured}


@pytest.mark.parametrize("board", ["rpi5; rm -rf /", "../rpi5", "rpi6.yml", "RPI5"])
def test_a_dispatch_naming_no_board_or_kind_stops_the_plan(tmp_path: Path, board: str) -> None:
    proc = run_plan_step(tmp_path, "workflow_dispatch", "[]", ROOT, board)
    assert proc.returncode == 2 and "::error" in proc.stdout, proc.stdout + proc.stderr


def _serves(root: Path, tmp_path: Path, runner: str, board: str, kind: str,
            env_board: str | None = None) -> subprocess.CompletedProcess[str]:
    """The gate job's first step on a runner named ``runner`` (with RTGATE_BOARD from its
    .env, if given), for a matrix entry."""
    gate = load(GATE)
    step = next(s for s in gate["jobs"]["gate"]["steps"]
                if s.get("name") == "The board this runner serves")
    (tmp_path / "plan").mkdir(exist_ok=True)
    (tmp_path / "plan" / "output").unlink(missing_ok=True)
    plan = run_plan_step(tmp_path / "plan", "push", "[]", root, board or env_board or runner)
    files = step_outputs(tmp_path / "plan")["board_files"] if plan.returncode == 0 else "{}"
    env = {"PATH": os.environ["PATH"], "RUNNER_NAME": runner, "WANT_BOARD": board,
           "WANT_KIND": kind, "GITHUB_ENV": str(tmp_path / "env"), "BOARD_FILES": files,
           **({"RTGATE_BOARD": env_board} if env_board is not None else {})}
    return subprocess.run(["bash", "-euo", "pipefail", "-c", step["run"]], env=env, cwd=root,
                          capture_output=True, text=True)


def test_the_runner_that_takes_a_kinds_job_measures_its_own_board(tmp_path: Path) -> None:
    root = _with_rpi5_b(tmp_path)
    proc = _serves(root, tmp_path, "rpi5-b", "", "rpi5")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "env").read_text().splitlines() == [
        "BOARD=rpi5-b", "KIND=rpi5", "KERNEL_TARGET=rpi5"]
    # A named board (main's push, the nightly) is that board, whatever the runner's name.
    (tmp_path / "env").unlink()
    assert _serves(root, tmp_path, "ctl-1", "rpi5", "rpi5").returncode == 0
    assert (tmp_path / "env").read_text().startswith("BOARD=rpi5\n")
    # A runner labelled for another kind, or named after no board, is refused.
    proc = _serves(root, tmp_path, "rpi5-b", "", "qemu-arm64")
    assert proc.returncode == 2 and "of kind rpi5, not qemu-arm64" in proc.stdout
    proc = _serves(root, tmp_path, "controller-7", "", "rpi5")
    assert proc.returncode == 2 and "serves no board in bench/boards" in proc.stdout
    # The supervisor's runners (rtgate lab runner) are named BOARD-xxxxxxxx, one per
    # registration: the board comes from RTGATE_BOARD in the .env rtgate lab setup wrote.
    (tmp_path / "env").unlink()
    proc = _serves(root, tmp_path, "rpi5-b-0badf00d", "", "rpi5", env_board="rpi5-b")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "env").read_text().startswith("BOARD=rpi5-b\n")
    assert _serves(root, tmp_path, "rpi5-b-0badf00d", "", "rpi5").returncode == 2


def test_a_board_kinds_calibration_record_is_its_plan_else_the_stated_default(
        tmp_path: Path) -> None:
    """A pull request's context: a board with a record in bench/calibration/ (default branch)
    carries the record's plan and sha256 (the publisher replays with that record); one without
    carries GATE_AB's conservative default with a note, and the job says so. The shipped lab
    data has both kinds: qemu-arm64 calibrated here, rpi5 not yet."""
    import hashlib

    from rtgate import calibration
    from rtgate.publish.context import Context

    proc = run_plan_step(tmp_path, "workflow_run", '["qemu-arm64","rpi5"]')
    assert proc.returncode == 0, proc.stdout + proc.stderr
    context = Context.model_validate_json((tmp_path / "ctx" / "context.json").read_bytes())
    defaults = json.loads(load(GATE)["env"]["GATE_AB"])
    seen = set()
    for board, plan in context.ab.items():
        path = ROOT / "bench" / "calibration" / f"{board}.json"
        if path.is_file():
            record = calibration.load(path)
            assert (plan.rounds, plan.round_s) == (record.plan.rounds, round(record.plan.round_s))
            assert plan.calibration_sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
            # Its keys: what its rates and cap are for, in the record's order.
            assert plan.flavors == list(dict.fromkeys(k.flavor for k in record.keys))
            assert plan.scenarios == list(dict.fromkeys(k.scenario for k in record.keys))
            assert plan.note is None
            seen.add("record")
        else:
            assert plan.model_dump(exclude={"note", "calibration_sha256", "scenarios"}) \
                == defaults[board]
            assert plan.scenarios == []  # the run's
            assert plan.note and "no calibration record" in plan.note
            assert f"::notice title=No calibration record for {board}::" in proc.stdout
            seen.add("default")
    assert seen == {"record", "default"}
    assert json.loads(step_outputs(tmp_path)["ab"]) == json.loads(
        (tmp_path / "ctx" / "context.json").read_text())["ab"]


def test_a_calibration_record_that_is_not_every_flavor_with_every_scenario_is_refused(
        tmp_path: Path) -> None:
    """The gate measures the plan's flavors x scenarios (rtgate ab), so a record whose keys
    are (stock, idle) and (rt, net) would have (stock, net) and (rt, idle) measured without
    its rates and in its cap's time: the plan job refuses it, naming the record."""
    import shutil

    root = tmp_path / "checkout"
    shutil.copytree(ROOT / "bench" / "boards", root / "bench" / "boards")
    (root / "bench" / "calibration").mkdir()
    record = json.loads((ROOT / "bench" / "calibration" / "qemu-arm64.json").read_text())
    first = record["keys"][0]
    record["keys"] = [{**first, "flavor": "stock", "scenario": "idle"},
                      {**first, "flavor": "rt", "scenario": "net"}]
    (root / "bench" / "calibration" / "qemu-arm64.json").write_text(json.dumps(record))
    proc = run_plan_step(tmp_path, "workflow_run", '["qemu-arm64"]', root=root)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert ("::error title=Calibration record::bench/calibration/qemu-arm64.json: its keys are "
            "not every flavor with every scenario") in proc.stdout
    # Every flavor with every scenario: planned, those keys carried.
    record["keys"] += [{**first, "flavor": "stock", "scenario": "net"},
                       {**first, "flavor": "rt", "scenario": "idle"}]
    (root / "bench" / "calibration" / "qemu-arm64.json").write_text(json.dumps(record))
    proc = run_plan_step(tmp_path, "workflow_run", '["qemu-arm64"]', root=root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    plan = json.loads(step_outputs(tmp_path)["ab"])["qemu-arm64"]
    assert (plan["flavors"], plan["scenarios"]) == (["stock", "rt"], ["idle", "net"])


def test_a_board_files_kind_is_read_as_yaml_whatever_its_spelling(tmp_path: Path) -> None:
    """`kind: "rpi5"  # comment` is rpi5 to rtgate, so to the workflow too: the plan and the
    runner's step read the board files through `rtgate board list --json`, never a sed."""
    root = _with_rpi5_b(tmp_path)
    path = root / "bench" / "boards" / "rpi5-b.yml"
    text = path.read_text().replace("kind: rpi5\n", 'kind: "rpi5"  # the second Pi\n')
    assert '"rpi5"  #' in text
    path.write_text(text)
    (tmp_path / "pr").mkdir()
    proc = run_plan_step(tmp_path / "pr", "workflow_run", '["rpi5"]', root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    outputs = step_outputs(tmp_path / "pr")
    assert json.loads(outputs["boards"]) == [{"board": "", "kind": "rpi5", "label": "rpi5"}]
    assert json.loads(outputs["board_files"])["rpi5-b"] == {"kind": "rpi5",
                                                            "kernel_target": "rpi5"}
    proc = _serves(root, tmp_path, "rpi5-b", "", "rpi5")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "KIND=rpi5" in (tmp_path / "env").read_text().splitlines()


def test_a_dispatch_for_a_kind_no_board_file_is_named_after_measures_its_boards(
        tmp_path: Path) -> None:
    """Boards rpi5-a and rpi5-b, kind rpi5, no rpi5.yml: a dispatch (or a call) for rpi5 measures
    both, never a green run that measured nothing; a name that is neither is an error."""
    root = _with_rpi5_b(tmp_path)
    boards = root / "bench" / "boards"
    (boards / "rpi5.yml").rename(boards / "rpi5-a.yml")
    path = boards / "rpi5-a.yml"
    path.write_text(path.read_text().replace("name: rpi5\n", "name: rpi5-a\nkind: rpi5\n"))
    (tmp_path / "a").mkdir()
    proc = run_plan_step(tmp_path / "a", "push", "[]", root, "rpi5")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [e["board"] for e in json.loads(step_outputs(tmp_path / "a")["boards"])] == [
        "rpi5-a", "rpi5-b"]
    (tmp_path / "b").mkdir()
    proc = run_plan_step(tmp_path / "b", "push", "[]", root, "rpi6")
    assert proc.returncode == 2 and "::error::no board or board kind rpi6 in bench/boards" \
        in proc.stdout


def _source_step(tmp_path: Path, trust: str, sources: dict[str, str],
                 record: str | None = None) -> subprocess.CompletedProcess[str]:
    """The gate job's "The kernel source A and B build from" for rpi5, main's cache in tmp."""
    step = next(s for s in load(GATE)["jobs"]["gate"]["steps"]
                if s.get("name") == "The kernel source A and B build from")
    cache = tmp_path / "cache"
    (cache / "bases").mkdir(parents=True, exist_ok=True)
    (tmp_path / "env").unlink(missing_ok=True)
    if record is not None:
        (cache / "bases" / "rpi5.source").write_text(record + "\n")
    env = {"PATH": os.environ["PATH"], "TRUST": trust, "KERNEL_TARGET": "rpi5",
           "RTGATE_CACHE_MAIN": str(cache), "GITHUB_ENV": str(tmp_path / "env"),
           "KERNEL_SOURCES": json.dumps(sources)}
    return subprocess.run(["bash", "-euo", "pipefail", "-c", step["run"]], env=env, cwd=ROOT,
                          capture_output=True, text=True)


def test_the_gate_builds_from_the_plan_jobs_pin_and_a_pull_request_from_mains_record(
        tmp_path: Path) -> None:
    pin = "git:https://git.example.invalid/linux.git@" + "1" * 40
    older = "git:https://git.example.invalid/linux.git@" + "0" * 40
    # Main's push: the plan's pin, recorded beside the trusted cache.
    proc = _source_step(tmp_path, "main", {"rpi5": pin})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "env").read_text() == f"KERNEL_SOURCE={pin}\n"
    assert (tmp_path / "cache" / "bases" / "rpi5.source").read_text() == pin + "\n"
    # A pull request: main's record (what A was built from), else this run's pin.
    proc = _source_step(tmp_path, "pr", {"rpi5": pin}, record=older)
    assert (tmp_path / "env").read_text() == f"KERNEL_SOURCE={older}\n"
    (tmp_path / "cache" / "bases" / "rpi5.source").unlink()
    proc = _source_step(tmp_path, "pr", {"rpi5": pin})
    assert (tmp_path / "env").read_text() == f"KERNEL_SOURCE={pin}\n"
    # No pin for the target: no build from an unpinned branch.
    proc = _source_step(tmp_path, "main", {"qemu-arm64": pin})
    assert proc.returncode == 3 and "pinned no kernel source for rpi5" in proc.stdout


def _refuse_step(tmp_path: Path, out: Path) -> subprocess.CompletedProcess[str]:
    """keep-results' check before the upload, run as GitHub runs a `shell: bash` step (bash
    --noprofile --norc -eo pipefail)."""
    from test_workflows import KEEP_RESULTS

    step = next(s for s in load(KEEP_RESULTS)["runs"]["steps"]
                if s["name"] == "Refuse links and other non-regular files")
    script = tmp_path / "step.sh"
    script.write_text(step["run"])
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                          env={"PATH": os.environ["PATH"], "DIR": str(out)}, cwd=tmp_path,
                          capture_output=True, text=True)


def test_a_link_or_fifo_in_a_gate_output_is_removed_before_the_upload_saying_so(
        tmp_path: Path) -> None:
    """What upload-artifact would zip as a runner's file (a link: its target's content; a
    linked directory: its tree) or hang on (a FIFO) is gone before the upload, each named in a
    one-line annotation; the results and the target files are untouched."""
    import socket

    secret = tmp_path / "runner" / ".env"
    secret.parent.mkdir()
    secret.write_text("TOKEN=not-for-an-artifact\n")
    out = tmp_path / "gate-rpi5"
    (out / "rt" / "all-in" / "raw").mkdir(parents=True)
    (out / "rt" / "all-in" / "result.json").write_text("{}\n")
    (out / "rt" / "all-in" / "raw" / "cyclictest.json").symlink_to(secret)
    (out / "builds").symlink_to(secret.parent, target_is_directory=True)
    (out / "dangling").symlink_to(tmp_path / "nowhere")
    (out / ".hidden").symlink_to(secret)
    odd = "100%\nsaid ::error::"
    (out / odd).symlink_to(secret)
    os.mkfifo(out / "rt" / "fifo")
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(out / "sock"))
    # kernels/ is not uploaded (the upload's own exclusion): its links stay.
    (out / "kernels" / "rt").mkdir(parents=True)
    (out / "kernels" / "rt" / "Image").symlink_to(secret)

    proc = _refuse_step(tmp_path, out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    left = sorted(str(p.relative_to(out)) for p in out.rglob("*"))
    assert left == ["kernels", "kernels/rt", "kernels/rt/Image", "rt", "rt/all-in",
                    "rt/all-in/raw", "rt/all-in/result.json"]
    assert secret.read_text() == "TOKEN=not-for-an-artifact\n"
    lines = proc.stdout.splitlines()
    assert len(lines) == 7 and all(line.startswith("::warning title=Not uploaded::")
                                   for line in lines), lines
    said = "\n".join(lines)
    assert f"::rt/all-in/raw/cyclictest.json is a symbolic link to {secret}, not a regular " \
           "file: removed, not uploaded" in said
    assert "::rt/fifo is a fifo, not a regular file" in said
    assert "::sock is a socket, not a regular file" in said
    # A name cannot end the annotation or start a workflow command of its own.
    assert f"::100%25%0Asaid ::error:: is a symbolic link to {secret}" in said


def test_the_check_refuses_an_upload_directory_that_is_a_link_and_passes_a_missing_one(
        tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "result.json").write_text("{}\n")
    (tmp_path / "gate-rpi5").symlink_to(tmp_path / "real")
    proc = _refuse_step(tmp_path, tmp_path / "gate-rpi5")
    assert proc.returncode == 1 and "is a symbolic link: refused" in proc.stdout
    assert (tmp_path / "real" / "result.json").exists()
    # No output at all (an infrastructure failure before any): the upload warns, as before.
    assert _refuse_step(tmp_path, tmp_path / "absent").returncode == 0


@pytest.mark.parametrize(("plan", "scenarios", "ab_keys"), [
    # A record's plan: its keys, whatever the run's scenarios.
    ({"flavors": ["rt"], "scenarios": ["idle"]}, "", "--flavors rt --scenarios idle"),
    ({"flavors": ["rt"], "scenarios": ["idle"]}, "net", "--flavors rt --scenarios idle"),
    # GATE_AB's default: stock and rt, the run's scenarios (none given: the board's own).
    ({"flavors": ["stock", "rt"]}, "", "--flavors stock,rt"),
    ({"flavors": ["stock", "rt"]}, "net", "--flavors stock,rt --scenarios net")])
def test_the_gate_jobs_ab_step_measures_the_plans_keys(
        tmp_path: Path, plan: dict[str, list[str]], scenarios: str, ab_keys: str) -> None:
    """The gate job's measuring step, its `run:` as latency-gate.yml has it, for a pull
    request's A/B: it builds B for the plan's flavors and runs `rtgate ab` on the plan's keys,
    round, cap and planned rounds. rtgate itself is not what is tested here: RTGATE_PYTHON
    records each command line (the A/B command runs in the lab e2e, tests/actlab.py)."""
    gate = load(GATE)
    step = next(s for s in gate["jobs"]["gate"]["steps"] if s.get("id") == "pipeline")
    calls = tmp_path / "calls"
    rtgate = tmp_path / "rtgate"
    rtgate.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> {calls}\n')
    rtgate.chmod(0o755)
    ab_plan = {"round_s": 40, "max_time_s": 5400, "rounds": 8, **plan}
    env = {"PATH": os.environ["PATH"], "RTGATE_PYTHON": str(rtgate), "TRUST": "pr",
           "AB_PLAN": json.dumps(ab_plan), "BOARD": "rpi5-a", "KIND": "rpi5",
           "KERNEL_TARGET": "rpi5", "KERNEL_SOURCE": "git:https://example.org/linux@" + "a" * 40,
           "SCENARIOS": scenarios, "DURATION": "", "KERNELS_FROM": "controller",
           "GATE_DURATIONS": gate["env"]["GATE_DURATIONS"], "RUNNER_TEMP": str(tmp_path / "t"),
           "RTGATE_RESULTS_DIR": str(tmp_path / "results"), "GITHUB_RUN_ID": "7",
           "GITHUB_RUN_ATTEMPT": "1", "GITHUB_OUTPUT": str(tmp_path / "output"),
           # The step's own check wants a filesystem of its own: / is one.
           "RTGATE_CACHE_PR": "/"}
    proc = subprocess.run(["bash", "-eo", "pipefail", "-c", step["run"]], env=env,
                          capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = calls.read_text().splitlines()
    built = [line.split("--flavor ")[1].split()[0] for line in lines if " kernel build " in line]
    assert built == plan["flavors"]
    assert all("--runtime docker --cache-trust untrusted" in line for line in lines[:-1])
    out = tmp_path / "results" / "7-1" / "gate-rpi5-a"
    assert lines[-1] == (
        f"-I .github/rtgate ab --board rpi5-a --base {tmp_path}/t/ab/base --cand "
        f"{tmp_path}/t/ab/cand {ab_keys.split(' --scenarios')[0]} --round-duration 40s "
        f"--max-time 5400s --planned-rounds 8 --out {out}"
        + (f" --scenarios {ab_keys.split('--scenarios ')[1]}" if "--scenarios" in ab_keys
           else ""))
    assert step_outputs(tmp_path) == {"dir": str(out), "rc": "0"}
