"""A pull request that edits its own judge (issue 10): the gate's real steps on a real git
history.

An origin repository holds main (this tree's rtgate, budgets, bench and kernel data) and a pull
request at refs/pull/7/head that loosens thresholds.yml, cuts the Pi 5's scenarios to idle,
turns all-in into `sleep` and adds a kernel patch. The gate's plan step reads the head as data
in a clone of main, the lab's kernel-inputs step lays what it read over a second clone, and the
lab judges with what it has: main's budgets, whatever the pull request wrote.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from steps import run, step

ROOT = Path(__file__).resolve().parents[2]
GATE = ROOT / ".github" / "workflows" / "latency-gate.yml"
REPORT = ROOT / ".github" / "workflows" / "latency-report.yml"
KERNEL_INPUTS = ROOT / ".github" / "actions" / "kernel-inputs" / "action.yml"
HEAD_INPUTS = ROOT / ".github" / "actions" / "head-kernel-inputs" / "action.yml"
RT = ROOT / "tests" / "data" / "results" / "paper-rpi5-rt-all-in.result.json"


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True,
                          text=True).stdout.strip()


def pull_request(origin: Path, edit: object) -> str:
    """A commit on top of main, published as GitHub publishes a pull request's head."""
    git(origin, "checkout", "-q", "-b", "feature", "main")
    edit(origin)  # type: ignore[operator]
    git(origin, "add", "-A")
    git(origin, "commit", "-q", "-m", "pull request")
    sha = git(origin, "rev-parse", "HEAD")
    git(origin, "update-ref", "refs/pull/7/head", sha)
    git(origin, "checkout", "-q", "main")
    git(origin, "branch", "-q", "-D", "feature")
    return sha


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    origin = tmp_path / "origin"
    origin.mkdir()
    git(origin, "init", "-q", "-b", "main")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("rtgate", "reports", "bench", "kernel", ".github"):
        shutil.copytree(ROOT / name, origin / name, ignore=ignore)
    shutil.copy2(ROOT / "thresholds.yml", origin / "thresholds.yml")
    git(origin, "add", "-A")
    git(origin, "commit", "-q", "-m", "main")
    return origin


def self_approving(repo: Path) -> None:
    t = repo / "thresholds.yml"
    t.write_text(t.read_text().replace("max_us: 155", "max_us: 5000"))
    b = repo / "bench" / "boards" / "rpi5.yml"
    b.write_text(b.read_text().replace("scenarios: [all-in]", "scenarios: [idle]"))
    (repo / "bench" / "scenarios" / "all-in.yml").write_text(
        "name: all-in\ndescription: nothing\nloads:\n  - name: s\n    argv: [sleep, '{timeout}']\n")
    (repo / "kernel" / "patches" / "0001-faster.patch").write_text("--- a/x\n+++ b/x\n")
    with (repo / "kernel" / "patches" / "series").open("a") as series:
        series.write("0001-faster.patch\n")
    with (repo / "kernel" / "configs" / "rt.config").open("a") as rt:
        rt.write("CONFIG_HZ_1000=y\n")


def plan(origin: Path, tmp: Path, head: str) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """The gate's plan job in a full clone of main; its run context directory."""
    clone = tmp / "plan"
    git(tmp, "clone", "-q", str(origin), str(clone))
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp), "EVENT": "workflow_run",
           "HEAD_SHA": head, "CONTEXT": "run-context", "GITHUB_OUTPUT": str(tmp / "out"),
           "BOARD": "", "SCENARIOS": "", "LAB_BOARDS": '["rpi5"]', "GITHUB_TOKEN": "unused",
           # The workflow's own env, as the runner sets it, but no A/B plan: these tests judge
           # one result per board by main's budgets (the A/B rounds have tests of their own).
           **{k: str(v) for k, v in yaml.safe_load(GATE.read_text()).get("env", {}).items()},
           "GATE_AB": "{}",
           # The plan job's rtgate (its venv): this checkout's, reading the clone's board files.
           "RTGATE_PYTHON": sys.executable}
    boards = run(GATE, "Boards to measure", cwd=clone, env=env)
    assert boards.returncode == 0, boards.stderr
    # The plan step's action (with its inputs as env), then the gate's own step after it.
    read = run(HEAD_INPUTS, "Read the kernel inputs of the head commit", cwd=clone, env=env)
    if read.returncode != 0:
        return clone / "run-context", read
    change = run(GATE, "Does the pull request change a kernel input", cwd=clone, env=env)
    if change.returncode != 0:
        return clone / "run-context", change
    return clone / "run-context", run(GATE, "Gate inputs the head commit changes, as data",
                                      cwd=clone, env=env)


def outputs(tmp: Path) -> dict[str, str]:
    """What the plan job's steps wrote to GITHUB_OUTPUT."""
    return dict(line.split("=", 1) for line in (tmp / "out").read_text().splitlines())


def planned(origin: Path, tmp: Path, edit: object) -> tuple[str, Path, dict[str, Any]]:
    """A pull request made by ``edit`` through the plan job: its head, run context directory and
    context.json."""
    head = pull_request(origin, edit)
    context, proc = plan(origin, tmp, head)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return head, context, json.loads((context / "context.json").read_text())


def renaming(repo: Path) -> None:
    (repo / "bench" / "scenarios" / "all-in.yml").rename(repo / "bench" / "scenarios" / "zzz.yml")
    (repo / "thresholds.yml").unlink()


def test_a_renamed_or_deleted_gate_input_is_listed_under_every_name(origin: Path,
                                                                     tmp_path: Path) -> None:
    # git diff detects renames by default: the banner would name only the new file, and the
    # deleted thresholds.yml was an empty file "that does not load".
    _, context, data = planned(origin, tmp_path, renaming)
    assert sorted(data["changed_inputs"]) == ["bench/scenarios/all-in.yml",
                                              "bench/scenarios/zzz.yml", "thresholds.yml"]
    assert not (context / "thresholds.yml").exists()


def test_a_self_approving_pull_request_changes_only_its_kernel(origin: Path,
                                                               tmp_path: Path) -> None:
    head, context, data = planned(origin, tmp_path, self_approving)
    assert data["head_sha"] == head and data["boards"] == ["rpi5"]
    # It changes kernel inputs: measured, as before.
    assert outputs(tmp_path)["measure"] == "true" and "kernel_inputs_changed" not in data
    assert sorted(data["changed_inputs"]) == ["bench/boards/rpi5.yml",
                                              "bench/scenarios/all-in.yml", "thresholds.yml"]

    lab = tmp_path / "lab"
    git(tmp_path, "clone", "-q", str(origin), str(lab))
    overlay = run(KERNEL_INPUTS, "Replace the kernel inputs", cwd=lab,
                  env={"PATH": os.environ["PATH"], "CONTEXT": str(context),
                       "RTGATE_PYTHON": sys.executable})
    assert overlay.returncode == 0, overlay.stderr
    # (Python's bytecode of the lab's own rtgate aside.)
    changed = [line for line in git(lab, "status", "--porcelain",
                                    "--untracked-files=all").splitlines()
               if "__pycache__" not in line]
    assert sorted(line.split(maxsplit=1)[1] for line in changed) == [
        "kernel/configs/rt.config", "kernel/patches/0001-faster.patch", "kernel/patches/series"]

    # The same 4800 µs result: main's budgets fail it, the pull request's would have passed it.
    result = tmp_path / "result.json"
    data = json.loads(RT.read_text())
    data["totals"]["max_us"] = 4800.0
    result.write_text(json.dumps(data))
    env = {**os.environ, "RTGATE_ROOT": str(lab)}

    def check(*extra: str) -> int:
        return subprocess.run([sys.executable, "-I", str(lab / ".github" / "rtgate"), "check",
                               str(result), "--junit", str(tmp_path / "j.xml"), *extra],
                              env=env, capture_output=True, text=True, timeout=120).returncode

    theirs = tmp_path / "theirs.yml"
    theirs.write_text(git(origin, "show", f"{head}:thresholds.yml") + "\n")
    assert check() == 1
    assert check("--thresholds", str(theirs)) == 0  # what the old gate did

    # The comment opens with the banner and the budget diff.
    data = json.loads((context / "context.json").read_text()) | {"pull_request": 7}
    (context / "context.json").write_text(json.dumps(data))
    art = tmp_path / "gate" / "gate-rpi5"
    for flavor in ("rt", "stock"):
        (art / flavor / "all-in").mkdir(parents=True)
        shutil.copy2(result, art / flavor / "all-in" / "result.json")
    shutil.copy2(ROOT / "tests/data/results/paper-rpi5-stock-all-in.result.json",
                 art / "stock" / "all-in" / "result.json")
    md = tmp_path / "comment.md"
    proc = subprocess.run([sys.executable, "-I", str(lab / ".github" / "rtgate"), "publish",
                           str(art), "--context", str(context), "--markdown", str(md)],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    banner = md.read_text().split("**❌")[0]
    assert "changes gate inputs" in banner and "`bench/scenarios/all-in.yml`" in banner
    assert "**loosens** `rpi5/rt/all-in`" in banner


def test_a_symlink_among_the_kernel_inputs_is_refused(origin: Path, tmp_path: Path) -> None:
    def link(repo: Path) -> None:
        (repo / "kernel" / "configs" / "rt.config").unlink()
        (repo / "kernel" / "configs" / "rt.config").symlink_to("/etc/passwd")

    head = pull_request(origin, link)
    context, proc = plan(origin, tmp_path, head)
    assert proc.returncode == 2 and "rt.config: kernel inputs must be regular files" in proc.stderr
    assert not (context / "kernel-inputs.tar").exists()


def test_the_lab_refuses_a_tar_with_more_than_kernel_inputs(tmp_path: Path) -> None:
    lab = tmp_path / "lab"
    (lab / "kernel" / "configs").mkdir(parents=True)
    (lab / "thresholds.yml").write_text("main's\n")
    # The lab's checkout: the default branch's rtgate does the check.
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "rtgate", lab / "rtgate", ignore=ignore)
    shutil.copytree(ROOT / ".github" / "rtgate", lab / ".github" / "rtgate", ignore=ignore)
    context = tmp_path / "context"
    (context / "thresholds.yml").parent.mkdir()
    (context / "thresholds.yml").write_text("theirs\n")
    subprocess.run(["tar", "-cf", str(context / "kernel-inputs.tar"), "-C", str(context),
                    "thresholds.yml"], check=True)
    (context / "kernel-inputs.json").write_text(json.dumps({"files": []}))
    proc = run(KERNEL_INPUTS, "Replace the kernel inputs", cwd=lab,
               env={"PATH": os.environ["PATH"], "CONTEXT": str(context),
                    "RTGATE_PYTHON": sys.executable})
    assert proc.returncode == 2
    assert "thresholds.yml: not a kernel input of the manifest; refused" in proc.stderr
    assert (lab / "thresholds.yml").read_text() == "main's\n"


# ---- A pull request that changes no kernel input: the required check, green, unmeasured ------

def docs_and_budgets(repo: Path) -> None:
    """Everything but a kernel input: docs, a budget, a board file."""
    (repo / "README.md").write_text("# a docs-only change\n")
    t = repo / "thresholds.yml"
    t.write_text(t.read_text().replace("max_us: 155", "max_us: 5000"))


def publish_check(context: Path, tmp: Path, *artifacts: Path) -> tuple[int, dict[str, Any], str]:
    """latency-report.yml's publisher on the run context: `rtgate publish` (the default
    branch's), then its Check run step's own jq on what that wrote, up to the GitHub API call;
    the exit code, the check run it would create and the comment."""
    work = tmp / "report"
    work.mkdir()
    proc = subprocess.run([sys.executable, "-I", "-m", "rtgate", "publish", *map(str, artifacts),
                           "--context", str(context), "--thresholds", str(ROOT / "thresholds.yml"),
                           "--boards", str(ROOT / "bench" / "boards"), "--markdown", "comment.md",
                           "--junit", "junit.xml", "--outcome", "outcome.json"],
                          cwd=work, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "RTGATE_ROOT": str(ROOT)})
    # The conclusion step computes the check (act stops there: tests/actlab.py), the Check run
    # step adds the commit and posts it.
    conclude = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c",
                               step(REPORT, "The check's conclusion")["run"]], cwd=work,
                              capture_output=True, text=True,
                              env={"PATH": os.environ["PATH"],
                                   "GITHUB_OUTPUT": str(work / "outputs")})
    assert conclude.returncode == 0, conclude.stderr
    script = step(REPORT, "Check run")["run"]
    assert script.count("| gh api") == 1, "the Check run step no longer pipes jq to gh api"
    payload = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c",
                              script.split("| gh api")[0]], cwd=work, capture_output=True,
                             text=True, env={"PATH": os.environ["PATH"], "SHA": "c" * 40})
    assert payload.returncode == 0, payload.stderr
    assert f"conclusion={json.loads(payload.stdout)['conclusion']}\n" in \
        (work / "outputs").read_text()
    return proc.returncode, json.loads(payload.stdout), (work / "comment.md").read_text()


def test_a_pull_request_changing_no_kernel_input_gets_the_check_green_unmeasured(
        origin: Path, tmp_path: Path) -> None:
    head, context, data = planned(origin, tmp_path, docs_and_budgets)
    # The plan job's own diff: nothing under kernel/patches or kernel/configs. No lab job runs
    # (their `if` reads this output: tests/unit/test_workflows.py).
    assert outputs(tmp_path)["measure"] == "false"
    assert data["kernel_inputs_changed"] is False and data["head_sha"] == head
    # Every path merging changes outside the kernel inputs, docs included (CODEOWNERS owns all).
    assert data["changed_inputs"] == ["README.md", "thresholds.yml"]

    rc, check, comment = publish_check(context, tmp_path)
    assert rc == 0
    assert check["name"] == "latency gate" and check["conclusion"] == "success"
    assert check["output"]["title"] == "✅ no kernel input changed: nothing measured, nothing " \
        "to judge"
    assert "changes nothing under `kernel/patches/` or `kernel/configs/`" in comment
    # The budget it loosens is still shown, and never used.
    assert "changes gate inputs" in comment and "`thresholds.yml`" in comment
    assert "latency verdict: every budget met" not in comment


def test_an_artifact_beside_an_unchanged_context_is_ignored_never_judged(
        origin: Path, tmp_path: Path) -> None:
    _, context, _ = planned(origin, tmp_path, docs_and_budgets)
    art = tmp_path / "gate" / "gate-rpi5"
    (art / "rt" / "all-in").mkdir(parents=True)
    shutil.copy2(RT, art / "rt" / "all-in" / "result.json")
    rc, check, comment = publish_check(context, tmp_path, art)
    assert rc == 0 and check["conclusion"] == "success"
    assert "Ignored (nothing was to be measured): `gate-rpi5`" in comment
    assert "Every check" not in comment


@pytest.mark.parametrize("edit", ["delete", "rename", "series"])
def test_any_change_to_a_kernel_input_is_measured(origin: Path, tmp_path: Path,
                                                  edit: str) -> None:
    """Deleting or renaming a kernel input, or one line of the series, is a change: the plan
    measures it, and the publisher then wants the boards' results (none: red, never green)."""
    def change(repo: Path) -> None:
        config = repo / "kernel" / "configs" / "rt.config"
        if edit == "delete":
            config.unlink()
        elif edit == "rename":
            config.rename(repo / "docs-rt.config")
        else:
            with (repo / "kernel" / "patches" / "series").open("a") as series:
                series.write("# nothing\n")

    _, context, data = planned(origin, tmp_path, change)
    assert outputs(tmp_path)["measure"] == "true" and "kernel_inputs_changed" not in data
    rc, check, _ = publish_check(context, tmp_path)
    assert rc == 3 and check["conclusion"] == "failure"
    assert "infrastructure failure" in check["output"]["title"]


def test_the_pull_request_cannot_claim_it_changes_no_kernel_input(origin: Path,
                                                                  tmp_path: Path) -> None:
    """What the pull request writes is never read for the decision: a head that adds a
    context.json saying `kernel_inputs_changed: false` (and a patch) is measured."""
    def claiming(repo: Path) -> None:
        (repo / "run-context").mkdir()
        (repo / "run-context" / "context.json").write_text(json.dumps(
            {"event": "workflow_run", "head_sha": "0" * 40, "boards": ["rpi5"],
             "kernel_inputs_changed": False}))
        (repo / "kernel" / "patches" / "0001-x.patch").write_text("--- a/x\n+++ b/x\n")

    _, _, data = planned(origin, tmp_path, claiming)
    assert outputs(tmp_path)["measure"] == "true" and "kernel_inputs_changed" not in data
