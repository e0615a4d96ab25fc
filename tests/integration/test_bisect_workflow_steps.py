"""The bisect workflow's own `run:` steps, run as GitHub's runner does (bash, jq, git)."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

from steps import run
from test_bisect_replay import MARGIN, PLANNED, ROUND, STEP, recorded
from test_bisect_workflow import BISECT, ROOT

DATA = ROOT / "tests" / "data" / "bisect"


def plan_args(tmp_path: Path, **inputs: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ["PATH"], "GITHUB_OUTPUT": str(tmp_path / "output"),
           "BOARD": "qemu-arm64", "FLAVOR": "stock", "SCENARIOS": "idle", "GOOD": "", "BAD": "",
           "ROUND": ROUND, "STEP": STEP, "PLANNED": PLANNED, "MARGIN": MARGIN,
           # The plan job's venv: this checkout's rtgate, reading its board files.
           "RTGATE_PYTHON": sys.executable, **inputs}
    return run(BISECT, "The bisect's settings", cwd=tmp_path, env=env)


def test_the_settings_are_checked_before_a_board_is_booked(tmp_path: Path) -> None:
    for bad in ({"GOOD": "1 --thresholds /tmp/mine.yml"}, {"SCENARIOS": "idle --alpha 0.5"},
                {"STEP": "1h; rm -rf /"}, {"FLAVOR": "evil"}, {"PLANNED": ""},
                {"MARGIN": "900 --alpha 0.5"}, {"MARGIN": "-5"}):
        proc = plan_args(tmp_path, **bad)
        assert proc.returncode == 2 and "Input error" in proc.stdout, bad


def publisher(tmp_path: Path, artifact: Path | None) -> tuple[subprocess.CompletedProcess[str],
                                                              Path]:
    """The plan's settings step, then the publisher's re-decide step as the runner runs them:
    a default-branch checkout (this tree's bench/, the rounds' budget) with the pull request's
    series laid over kernel/patches, the artifact downloaded to bisect/steps."""
    assert plan_args(tmp_path).returncode == 0
    output = (tmp_path / "output").read_text().splitlines()
    (args,) = [line.removeprefix("args=") for line in output if line.startswith("args=")]
    ws = tmp_path / "ws"
    (ws / "kernel").mkdir(parents=True)
    shutil.copytree(DATA, ws / "kernel" / "patches",
                    ignore=shutil.ignore_patterns("replay", "series", "*.yml", "*.md"))
    shutil.copy2(DATA / "series-4", ws / "kernel" / "patches" / "series")
    shutil.copytree(ROOT / "bench", ws / "bench")
    shutil.copy2(DATA / "replay" / "thresholds.yml", ws / "thresholds.yml")
    if artifact is not None:
        shutil.copytree(artifact / "steps", ws / "bisect" / "steps")
    temp = tmp_path / "runner"
    (temp / "run-context").mkdir(parents=True)
    (temp / "run-context" / "context.json").write_text(
        json.dumps({"pull_request": 7, "head_sha": "c" * 40}))
    # The venv's interpreter: this suite's, which has rtgate.
    python = temp / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    env = {"PATH": os.environ["PATH"], "BISECT_ARGS": args, "BOARD": "qemu-arm64",
           "RTGATE_ROOT": str(ws), "RUNNER_TEMP": str(temp),
           "GITHUB_STEP_SUMMARY": str(tmp_path / "summary"),
           "GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "rtgate/rtgate",
           "GITHUB_RUN_ID": "42"}
    proc = run(BISECT, "Re-decide the bisect from its rounds", cwd=ws, env=env, timeout=300)
    return proc, ws / "comment.md"


def test_the_publisher_posts_what_it_decided_from_the_rounds(tmp_path: Path) -> None:
    artifact = recorded(tmp_path)  # the real bisect's output
    # The lab job's own words, in the artifact, say otherwise: never read.
    for step in (artifact / "steps").iterdir():
        (step / "ab.json").write_text(json.dumps({"outcome": "same", "exit": 0}))
    proc, comment = publisher(tmp_path, artifact)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = comment.read_text()
    assert text.startswith("<!-- rtgate-bisect -->\n")
    assert f"at {'c' * 40} on qemu-arm64" in text
    assert "culprit found and confirmed" in text
    assert "Patch 3: `0005-rtgate-planted-latency-on.patch`" in text
    assert (tmp_path / "summary").read_text() == text


def test_no_artifact_is_no_verdict_not_a_pass(tmp_path: Path) -> None:
    proc, comment = publisher(tmp_path, None)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = comment.read_text()
    assert "no verdict: the bisect's rounds end before it finished" in text
    assert "culprit" not in text and "nothing to bisect" not in text


def _outputs(tmp_path: Path) -> dict[str, str]:
    """The settings step's outputs (GITHUB_OUTPUT, emptied for the next call)."""
    output = tmp_path / "output"
    lines = output.read_text().splitlines()
    output.unlink()
    return dict(line.split("=", 1) for line in lines)


def test_any_lab_board_is_bisectable_by_name_and_a_kind_must_name_one(tmp_path: Path) -> None:
    """The board input is text the plan job resolves from the default branch's board files: a
    second Pi (rpi5-b, kind rpi5) is bisectable by its name; the kind alone names two machines,
    and a bisect's steps must share one, so it is refused with their names; NAME.yml is the
    file named like the kind. LAVA and `local` have no controller build to bisect with."""
    root = tmp_path / "root"
    shutil.copytree(ROOT / "bench" / "boards", root / "bench" / "boards")
    pi = (root / "bench" / "boards" / "rpi5.yml").read_text()
    (root / "bench" / "boards" / "rpi5-b.yml").write_text(
        pi.replace("name: rpi5\n", "name: rpi5-b\nkind: rpi5\n"))
    for given, board in (("rpi5-b", "rpi5-b"), ("rpi5.yml", "rpi5"), ("qemu-arm64", "qemu-arm64")):
        proc = plan_args(tmp_path, BOARD=given, RTGATE_ROOT=str(root))
        assert proc.returncode == 0, proc.stdout + proc.stderr
        outputs = _outputs(tmp_path)
        # The lab job's label and the replay's --board are the board found, never the input.
        assert outputs["board"] == board and json.loads(outputs["args"])[:2] == ["--board", board]
    for given, said in (("rpi5", "kind rpi5 has boards rpi5, rpi5-b: name one"),
                        ("lava-qemu", "not bisected on a lab controller"),
                        ("local", "not bisected on a lab controller"),
                        ("rpi6", "no board or board kind rpi6 in bench/boards")):
        proc = plan_args(tmp_path, BOARD=given, RTGATE_ROOT=str(root))
        assert proc.returncode == 2 and said in proc.stdout, (given, proc.stdout)
