"""The publisher (latency-report.yml's `publish` job) run by act on a lab's results: the check's
conclusion a pull request gets, computed from the gate's artifacts (act has no checks API: the
conclusion the job computes is the green check here).

What GitHub does between the workflows, and how it is stood in for here:
- The gate's jobs upload their output as artifacts (`keep-results`: the run's directory without
  its kernels, one zip per artifact) and the publisher downloads them with the run's id; both
  actions run here as stand-ins on a local store (tests/actstandins/, their rules cited there
  from the pinned commits' source), handed to act in place of the pinned actions
  (`act --local-repository`).
- GitHub starts the publisher by `workflow_run` when the gate run completes; its event is written
  here as GitHub documents the payload
  (docs.github.com/en/webhooks/webhook-events-and-payloads#workflow_run: `workflow_run.id`,
  `path`, `event`, `conclusion`, `head_branch`, `head_sha`, `head_repository.full_name`, and the
  `repository` with its `default_branch`). A pull request's gate run is itself started by
  `workflow_run` (latency-pr.yml's completion), so its `event` is `workflow_run` and it runs on
  the default branch.
- The run context is the gate's plan job's: `plan` runs that job's own steps on the default
  branch (the boards, the A/B plans from GATE_AB and the calibration records, the head's kernel
  inputs as data), all but the two that need GitHub or the kernel source's remote (which pull
  request has the head: given; the kernel base's pin: a lab controller's build, unused here).
- What needs GitHub itself (which pull request, the App token, the check run, the comment) is
  skipped under act by the workflow (`!env.ACT`); the conclusion step before it runs.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from steps import cache_mount_check, run

ROOT = Path(__file__).resolve().parents[1]
STANDINS = ROOT / "tests" / "actstandins"
REPORT = ".github/workflows/latency-report.yml"
GATE = ".github/workflows/latency-gate.yml"
HEAD_INPUTS = ".github/actions/head-kernel-inputs/action.yml"
REPOSITORY = "OWNER/rtgate"

sys.path.insert(0, str(STANDINS))
from artifacts import upload  # noqa: E402 - the stand-ins' own module, stdlib only

__all__ = ["Published", "default_branch", "gate_pr_job", "keep_context", "keep_results", "plan",
           "publish", "pull_request", "upload"]


def remote_actions(workflow: Path, job: str) -> set[str]:
    """Every remote action a job uses (act loads them all, whatever their `if:`)."""
    steps = yaml.safe_load(workflow.read_text())["jobs"][job]["steps"]
    return {s["uses"] for s in steps if "uses" in s and not s["uses"].startswith("./")}


def stand_ins(workflow: Path, job: str) -> list[str]:
    """`--local-repository` arguments: each pinned action of the job to its stand-in."""
    args = []
    for uses in sorted(remote_actions(workflow, job)):
        name = uses.split("@")[0].split("/")[1]
        folder = STANDINS / name
        assert (folder / "action.yml").is_file(), f"{uses}: no stand-in in {STANDINS}"
        args += ["--local-repository", f"{uses}={folder}"]
    return args


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          check=True).stdout


def default_branch(into: Path, checkout: str = "main", message: str = "main") -> Path:
    """A clone (``into``/``checkout``) of a default branch holding this work tree (uncommitted
    work included) as one commit, with a bare `origin` beside it, as a lab's repository: the
    publisher's checkout, or the admin's."""
    seed = into / "seed"
    files = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "-co", "--exclude-standard"],
                           capture_output=True, check=True).stdout.split(b"\0")
    for name in filter(None, (f.decode() for f in files)):
        src = ROOT / name
        if src.is_file():
            (seed / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, seed / name)
    git(seed, "init", "-q", "-b", "main")
    git(seed, "add", "-A")
    git(seed, "-c", "user.name=admin", "-c", "user.email=admin@lab", "commit", "-qm", message)
    subprocess.run(["git", "clone", "-q", "--bare", str(seed), str(into / "origin.git")],
                   check=True, capture_output=True)
    shutil.rmtree(seed)
    clone = into / checkout
    subprocess.run(["git", "clone", "-q", str(into / "origin.git"), str(clone)], check=True,
                   capture_output=True)
    return clone


def pull_request(main: Path, number: int, edit: Callable[[Path], None], message: str) -> str:
    """A commit on top of main made by ``edit`` in the checkout, published on its origin as
    GitHub publishes a pull request's head (refs/pull/N/head); the checkout stays on main."""
    git(main, "switch", "-q", "-c", f"pr-{number}")
    edit(main)
    git(main, "add", "-A")
    git(main, "-c", "user.name=dev", "-c", "user.email=dev@lab", "commit", "-qm", message)
    sha = git(main, "rev-parse", "HEAD").strip()
    git(main, "push", "-q", "origin", f"HEAD:refs/pull/{number}/head")
    git(main, "switch", "-q", "main")
    git(main, "branch", "-q", "-D", f"pr-{number}")
    return sha


def plan(main: Path, tmp: Path, *, head_sha: str, pull_request: int, lab_boards: list[str],
         scenarios: str = "") -> dict[str, Any]:
    """The gate's plan job for a pull request (event workflow_run), its own steps run in a full
    clone of the default branch (tests/steps.py): the boards and A/B plans, the head's kernel
    inputs read as data and whether they change. Its `The pull request of the head commit`
    step asks GitHub which pull request has the head (gh api): its answer is ``pull_request``.
    ``scenarios``: as a dispatch's input would give them (a pull request's gate has none: the
    boards' own). The run context written, as a dict (also in DIR/run-context)."""
    clone = tmp / "plan"
    subprocess.run(["git", "clone", "-q", git(main, "remote", "get-url", "origin").strip(),
                    str(clone)], check=True, capture_output=True)
    workflow = yaml.safe_load((main / GATE).read_text())
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp), "EVENT": "workflow_run",
           "HEAD_SHA": head_sha, "CONTEXT": "run-context", "GITHUB_OUTPUT": str(tmp / "outputs"),
           "BOARD": "", "SCENARIOS": scenarios, "LAB_BOARDS": json.dumps(lab_boards),
           "GITHUB_TOKEN": "unused", **{k: str(v) for k, v in workflow["env"].items()},
           # The plan job's rtgate: the suite's interpreter on the clone's code and data.
           "RTGATE_PYTHON": sys.executable}
    for file, name in ((main / GATE, "Boards to measure"),
                       (main / HEAD_INPUTS, "Read the kernel inputs of the head commit"),
                       (main / GATE, "Does the pull request change a kernel input"),
                       (main / GATE, "Gate inputs the head commit changes, as data")):
        proc = run(file, name, cwd=clone, env=env)
        assert proc.returncode == 0, f"plan job, {name}: exit {proc.returncode}\n" \
                                     f"{proc.stdout}{proc.stderr}"
    path = clone / "run-context" / "context.json"
    context = {**json.loads(path.read_text()), "pull_request": pull_request}
    path.write_text(json.dumps(context))
    return context


def keep_results(store: Path, run_id: int, name: str, out: Path) -> Path | None:
    """The gate's `keep-results` step (.github/actions/keep-results): the run's directory as
    artifact NAME, its kernels left out."""
    return upload(store, str(run_id), name, f"{out}\n!{out}/kernels", overwrite=True)


def keep_context(store: Path, run_id: int, tmp: Path) -> None:
    """The plan job's `Keep the run context` step: run-context/ as the artifact run-context."""
    upload(store, str(run_id), "run-context", str(tmp / "plan" / "run-context"), overwrite=True)


def gate_pr_job(*, origin: str, ab_plan: dict[str, Any], base: str, cand: str) -> str:
    """The `run:` script of a pull request's lab gate job (latency-gate.yml's `gate` job) for a
    runner stand-in: the default branch checked out (actions/checkout, here a clone of
    ``origin``), the board the runner serves (its .env), the untrusted cache with the step's
    own check that it is a filesystem of its own (exit 3 if not), and the measuring step's A/B
    command with the run context's plan (its flavors and scenarios: the calibration record's
    keys), into RESULTS/RUN-ATTEMPT/gate-BOARD. What it cannot do here: build main's and the
    pull request's kernels (``base``, ``cand``: built elsewhere) and the preflight; the Verdict
    step's job failure is its exit status."""
    flavors = ",".join(ab_plan["flavors"])
    # Without the plan's scenarios (GATE_AB's default) the option is left out: the board's own.
    scenarios = ",".join(ab_plan.get("scenarios", []))
    scenarios = f"--scenarios {shlex.quote(scenarios)} " if scenarios else ""
    return f"""git clone -q --depth 1 --branch main {shlex.quote(origin)} .
export RTGATE_ROOT=$GITHUB_WORKSPACE
board=${{RTGATE_BOARD:?no RTGATE_BOARD in the runner .env}}
export RTGATE_CACHE="${{RTGATE_CACHE_PR:?no RTGATE_CACHE_PR in the runner .env}}"
export RTGATE_CACHE_TRUST=untrusted
{cache_mount_check("latency-gate.yml")}
out="$RTGATE_RESULTS_DIR/$GITHUB_RUN_ID-$GITHUB_RUN_ATTEMPT/gate-$board"
mkdir -p "$(dirname "$out")"
mkdir "$out"
rc=0
"$RTGATE_PYTHON" -I .github/rtgate ab --board "$board" --base {shlex.quote(base)} \\
  --cand {shlex.quote(cand)} --flavors {shlex.quote(flavors)} \\
  {scenarios}\\
  --round-duration {ab_plan["round_s"]}s --max-time {ab_plan["max_time_s"]}s \\
  --planned-rounds {ab_plan["rounds"]} --out "$out" || rc=$?
echo "gate output: $out (rtgate ab exit $rc)"
exit "$rc"
"""


def workflow_run_event(*, run_id: int, event: str, head_sha: str, conclusion: str,
                       main_sha: str) -> dict[str, Any]:
    """The `workflow_run` (completed) payload of the gate's run, as GitHub documents it."""
    repo = {"full_name": REPOSITORY, "name": REPOSITORY.split("/")[1],
            "owner": {"login": REPOSITORY.split("/")[0]}}
    return {"action": "completed",
            "workflow_run": {"id": run_id, "name": "latency-gate", "path": GATE,
                             "event": event, "status": "completed", "conclusion": conclusion,
                             "head_branch": "main", "head_sha": main_sha if event ==
                             "workflow_run" else head_sha, "run_attempt": 1,
                             "head_repository": repo, "repository": repo,
                             "pull_requests": []},
            "repository": {**repo, "default_branch": "main"}}


@dataclass(frozen=True)
class Published:
    returncode: int
    conclusion: str | None  # the check's conclusion the job computed; None: it never got there
    outcome: dict[str, Any] | None  # outcome.json of the publisher's latency-report artifact
    comment: str
    log: str


def publish(main: Path, store: Path, *, gate_run: int, event: str, head_sha: str,
            gate_conclusion: str = "success", tmp: Path) -> Published:
    """latency-report.yml's publish job, under act, in the checkout ``main`` (the default
    branch), for the gate run ``gate_run`` whose artifacts are in ``store``."""
    act = shutil.which("act")
    if act is None:
        raise AssertionError("act is not installed: run scripts/deps.sh ci (make test does)")
    tmp.mkdir(parents=True, exist_ok=True)
    payload = workflow_run_event(run_id=gate_run, event=event, head_sha=head_sha,
                                 conclusion=gate_conclusion,
                                 main_sha=git(main, "rev-parse", "HEAD").strip())
    (tmp / "event.json").write_text(json.dumps(payload))
    publisher_run = 900_000 + gate_run  # its own run, apart from any gate run's artifacts
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    proc = subprocess.run(
        [act, "workflow_run", "-W", str(main / REPORT), "-j", "publish",
         "-e", str(tmp / "event.json"), "-P", "ubuntu-latest=-self-hosted",
         *stand_ins(main / REPORT, "publish"),
         "--env", f"GITHUB_REPOSITORY={REPOSITORY}", "--env", f"GITHUB_RUN_ID={publisher_run}",
         "--env", f"RTGATE_PYTHON={sys.executable}",
         "--env", f"ACTLAB_ARTIFACTS={store}", "--env", f"ACTLAB_STANDINS={STANDINS}",
         # download-artifact reads another run's artifacts only with a token (its README).
         "-s", "GITHUB_TOKEN=ghs_actlab_not_a_token",
         "--action-cache-path", str(tmp / "act-cache"), "--action-offline-mode"],
        cwd=main, env=env, capture_output=True, text=True, timeout=600)
    log = proc.stdout + proc.stderr
    (tmp / "act.log").write_text(log)
    found = re.findall(r"::set-output:: conclusion=(\S+)", log)
    kept = store / str(publisher_run) / "latency-report.zip"
    outcome, comment = None, ""
    if kept.is_file():
        with zipfile.ZipFile(kept) as archive:
            names = archive.namelist()
            if "outcome.json" in names:
                outcome = json.loads(archive.read("outcome.json"))
            if "comment.md" in names:
                comment = archive.read("comment.md").decode()
    return Published(proc.returncode, found[-1] if found else None, outcome, comment, log)
