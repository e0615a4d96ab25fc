"""The security rules of .github/ (issue 6), checked on the YAML itself.

act ignores `permissions`, `environment`, `concurrency` and `timeout-minutes`, and GitHub only
enforces them once a workflow is merged: these tests are where a weakened rule shows first.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
GITHUB = ROOT / ".github"
WORKFLOWS = sorted((GITHUB / "workflows").glob("*.yml"))
ACTIONS = sorted((GITHUB / "actions").glob("*/action.yml"))
FILES = WORKFLOWS + ACTIONS

# Environments a fork's pull request may reach a lab runner through; docs/lab.md configures
# them with required reviewers (maintainers) and no secrets.
PROTECTED_ENVIRONMENTS = {"lab"}
PAGES_WORKFLOW = "pages.yml"
PUBLISHING_PERMISSIONS = {"checks", "pull-requests"}

PINNED = re.compile(r"^[\w.-]+/[\w.-]+(/[\w./-]+)?@[0-9a-f]{40}$")
VERSION_COMMENT = re.compile(r"#\s*v\d+(\.\d+)*\s*$")


def load(path: Path) -> dict[str, Any]:
    # PyYAML reads the key `on` as the boolean True (YAML 1.1): give it its name back.
    data = yaml.safe_load(path.read_text())
    if True in data:
        data["on"] = data.pop(True)
    return data


def triggers(workflow: dict[str, Any]) -> set[str]:
    on = workflow["on"]
    return {on} if isinstance(on, str) else set(on)


def jobs(workflow: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    yield from workflow.get("jobs", {}).items()


def steps(data: dict[str, Any]) -> Iterator[dict[str, Any]]:
    if "runs" in data:  # a composite action
        yield from data["runs"].get("steps", [])
    for _, job in jobs(data):
        yield from job.get("steps", [])


def runs_on(job: dict[str, Any]) -> list[str]:
    labels = job.get("runs-on", [])
    return [labels] if isinstance(labels, str) else list(labels)


def is_self_hosted(job: dict[str, Any]) -> bool:
    return "self-hosted" in runs_on(job)


def granted(permissions: Any) -> dict[str, str]:
    if permissions in ({}, None):
        return {}
    if isinstance(permissions, str):  # read-all / write-all
        return {"*": permissions.removesuffix("-all")}
    return dict(permissions)


# --- a small evaluator for the expressions the rules depend on --------------------------------
# GitHub's expression language, restricted to what an `environment:` needs: literals, context
# paths, ==, !=, !, &&, || and parentheses; && and || return operands as GitHub does.

TOKEN = re.compile(r"\s*(?:(\|\||&&|==|!=|!|\(|\))|'((?:[^']|'')*)'|([A-Za-z_][\w.\-]*))")


def evaluate(expression: str, context: dict[str, Any]) -> Any:
    text = expression.strip()
    if text.startswith("${{") and text.endswith("}}"):
        text = text[3:-2]
    tokens: list[tuple[str, Any]] = []
    pos = 0
    while pos < len(text.rstrip()):
        m = TOKEN.match(text, pos)
        assert m, f"cannot evaluate {expression!r} at {text[pos:]!r}"
        op, literal, name = m.groups()
        if op:
            tokens.append(("op", op))
        elif literal is not None:
            tokens.append(("value", literal.replace("''", "'")))
        else:
            value: Any = context
            for part in name.split("."):
                value = value.get(part) if isinstance(value, dict) else None
            tokens.append(("value", {"true": True, "false": False}.get(name, value)))
        pos = m.end()

    def parse_or(i: int) -> tuple[Any, int]:
        left, i = parse_and(i)
        while i < len(tokens) and tokens[i] == ("op", "||"):
            right, i = parse_and(i + 1)
            left = left if left else right
        return left, i

    def parse_and(i: int) -> tuple[Any, int]:
        left, i = parse_cmp(i)
        while i < len(tokens) and tokens[i] == ("op", "&&"):
            right, i = parse_cmp(i + 1)
            left = right if left else left
        return left, i

    def parse_cmp(i: int) -> tuple[Any, int]:
        left, i = parse_unary(i)
        if i < len(tokens) and tokens[i] in (("op", "=="), ("op", "!=")):
            right, j = parse_unary(i + 1)
            same = str(left).lower() == str(right).lower()
            return (same if tokens[i][1] == "==" else not same), j
        return left, i

    def parse_unary(i: int) -> tuple[Any, int]:
        kind, value = tokens[i]
        if (kind, value) == ("op", "!"):
            inner, j = parse_unary(i + 1)
            return not inner, j
        if (kind, value) == ("op", "("):
            inner, j = parse_or(i + 1)
            assert tokens[j] == ("op", ")"), f"unbalanced parentheses in {expression!r}"
            return inner, j + 1
        return value, i + 1

    result, end = parse_or(0)
    assert end == len(tokens), f"cannot evaluate {expression!r}"
    return result


def pull_request_context(head_repo: str) -> dict[str, Any]:
    """The gate's context when latency-pr.yml of a pull request from head_repo completed."""
    return {"github": {"event_name": "workflow_run", "repository": "rtgate/rtgate",
                       "event": {"workflow_run": {"event": "pull_request",
                                                  "head_repository": {"full_name": head_repo}}}}}


def test_evaluator_follows_github_semantics() -> None:
    ctx = {"github": {"event_name": "push", "a": "x"}}
    assert evaluate("${{ github.event_name == 'PUSH' && 'yes' || 'no' }}", ctx) == "yes"
    assert evaluate("${{ !(github.a != 'x') && github.missing || 'fallback' }}", ctx) == "fallback"
    assert evaluate("${{ 'it''s' }}", ctx) == "it's"


# --- the rules -------------------------------------------------------------------------------


def test_the_workflows_exist() -> None:
    names = {p.name for p in WORKFLOWS}
    assert {"ci.yml", "kernels.yml", "latency-pr.yml", "latency-gate.yml", "pages.yml",
            "latency-report.yml", "latency-bisect.yml"} <= names


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_top_level_permissions_are_empty_or_read_only(path: Path) -> None:
    workflow = load(path)
    assert "permissions" in workflow, f"{path.name}: no top-level permissions"
    for scope, level in granted(workflow["permissions"]).items():
        assert level in ("read", "none"), f"{path.name}: top-level {scope}: {level}"


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_every_job_declares_its_own_permissions(path: Path) -> None:
    for name, job in jobs(load(path)):
        assert "permissions" in job, f"{path.name}: job {name} inherits its permissions"


def test_only_the_pages_deploy_job_writes_pages_or_mints_id_tokens() -> None:
    holders = []
    for path in WORKFLOWS:
        workflow = load(path)
        scopes = [(None, workflow.get("permissions"))] + [
            (name, job.get("permissions")) for name, job in jobs(workflow)]
        for job_name, permissions in scopes:
            grant = granted(permissions)
            if grant.get("pages") == "write" or grant.get("id-token") == "write" \
                    or grant.get("*") == "write":
                holders.append((path.name, job_name))
    assert holders == [(PAGES_WORKFLOW, "deploy")]
    deploy = load(GITHUB / "workflows" / PAGES_WORKFLOW)["jobs"]["deploy"]
    assert granted(deploy["permissions"]) == {"pages": "write", "id-token": "write"}


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_publishing_permissions_only_where_no_pull_request_code_runs(path: Path) -> None:
    # A fork's token never has checks/pull-requests write: such jobs belong in workflow_run (or
    # a maintainer's dispatch), GitHub-hosted, running no lab job's code.
    workflow = load(path)
    for name, job in jobs(workflow):
        writes = {s for s, level in granted(job.get("permissions")).items() if level == "write"}
        if writes & PUBLISHING_PERMISSIONS:
            assert triggers(workflow) <= {"workflow_run", "workflow_dispatch"}, \
                f"{path.name}: job {name}"
            assert runs_on(job) == ["ubuntu-latest"], f"{path.name}: job {name}"


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(GITHUB)))
def test_every_action_is_pinned_to_a_commit_with_its_version(path: Path) -> None:
    uses = [line for line in path.read_text().splitlines()
            if re.match(r"^\s*(-\s+)?uses:", line)]
    for line in uses:
        ref = line.split("uses:", 1)[1].split("#", 1)[0].strip()
        if ref.startswith("./"):
            assert (ROOT / ref).exists(), f"{path.name}: {ref} does not exist"
            continue
        assert PINNED.match(ref), f"{path.name}: not pinned to a full commit SHA: {ref}"
        assert VERSION_COMMENT.search(line), f"{path.name}: no '# vX.Y.Z' after {ref}"


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(GITHUB)))
def test_no_expression_is_interpolated_into_a_script(path: Path) -> None:
    # `${{ github.event.* }}`, a head ref, a PR title or an input spliced into a script is code
    # injection; every value reaches run: through env:, where the shell sees it as data.
    for step in steps(load(path)):
        script = step.get("run", "")
        assert "${{" not in script, f"{path.name}: step {step.get('name')!r} interpolates"


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_checkouts_do_not_persist_credentials(path: Path) -> None:
    for step in steps(load(path)):
        if step.get("uses", "").startswith("actions/checkout@"):
            assert step.get("with", {}).get("persist-credentials") is False, \
                f"{path.name}: step {step.get('name')!r}"


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_pull_request_target_is_never_a_trigger(path: Path) -> None:
    assert "pull_request_target" not in triggers(load(path))


def self_hosted_jobs() -> list[tuple[str, str, dict[str, Any]]]:
    return [(p.name, name, job) for p in WORKFLOWS for name, job in jobs(load(p))
            if is_self_hosted(job)]


def test_only_the_gate_and_the_bisect_run_on_lab_runners() -> None:
    assert [(w, j) for w, j, _ in self_hosted_jobs()] == [("latency-bisect.yml", "bisect"),
                                                          ("latency-gate.yml", "gate")]


@pytest.mark.parametrize("workflow,name,job", self_hosted_jobs(),
                         ids=[f"{w}:{j}" for w, j, _ in self_hosted_jobs()])
def test_lab_jobs_are_guarded(workflow: str, name: str, job: dict[str, Any]) -> None:
    labels = runs_on(job)
    assert labels[:3] == ["self-hosted", "linux", "rtgate-lab"]
    board = labels[3]
    # The bisect's board is the one the plan job found in the board files (its own label).
    assert board in ("${{ matrix.label }}", "board-${{ needs.plan.outputs.board }}")

    # A fork's pull request reaches the runner only through a protected environment; a
    # bisect builds a pull request's series whoever it comes from.
    environment = job["environment"]
    expression = environment["name"] if isinstance(environment, dict) else environment
    if "${{" not in expression:
        assert expression in PROTECTED_ENVIRONMENTS
    else:
        assert evaluate(expression, pull_request_context("someone/rtgate")) \
            in PROTECTED_ENVIRONMENTS
        assert evaluate(expression, pull_request_context("rtgate/rtgate")) == "lab-trusted"

    # One job per board at a time, never cancelled half-way through a boot: the board's one
    # runner takes one job at a time. The gate has no concurrency group (GitHub would cancel
    # all but one pending job of a group: a queued pull request would get no check); the
    # bisect, dispatched by hand, keeps one per board as well.
    if name == "gate":
        assert "concurrency" not in job
    else:
        concurrency = job["concurrency"]
        assert concurrency["group"] == "rtgate-board-${{ needs.plan.outputs.board }}"
        assert concurrency["cancel-in-progress"] is False
    assert isinstance(job["timeout-minutes"], int)

    # Lab jobs run the code under review: they get no secrets and a read-only token.
    assert "secrets." not in yaml.safe_dump(job)
    assert all(level in ("read", "none") for level in granted(job["permissions"]).values())


def test_the_gate_is_dispatchable_per_board_and_runs_after_the_kernels() -> None:
    gate = load(GITHUB / "workflows" / "latency-gate.yml")
    inputs = gate["on"]["workflow_dispatch"]["inputs"]
    assert {"board", "scenarios", "duration"} <= set(inputs)
    # Free text the plan job checks against the board files (any board or kind, rpi5-b too):
    # a choice list would have to be edited for every board a lab adds.
    assert inputs["board"]["type"] == "string" and "options" not in inputs["board"]
    assert "kernels" in gate["jobs"]["gate"]["needs"]
    assert gate["jobs"]["kernels"]["uses"] == "./.github/workflows/kernels.yml"


def test_runner_labels_are_declared_for_actionlint() -> None:
    declared = set(yaml.safe_load((GITHUB / "actionlint.yaml").read_text())
                   ["self-hosted-runner"]["labels"])
    from rtgate.board.spec import kind_of, load_board

    specs = [load_board(b) for b in sorted(all_boards())]
    lab = [s for s in specs if s.driver != "lava"]  # LAVA boards run on GitHub-hosted runners
    # Each board's runner: its kind's label, shared, and board-NAME, its own.
    assert {"rtgate-lab"} | {kind_of(s) for s in lab} | {f"board-{s.name}" for s in lab} \
        <= declared


def test_zizmor_ignores_say_why() -> None:
    for path in FILES:
        for line in path.read_text().splitlines():
            if "zizmor: ignore[" in line:
                reason = line.split("zizmor: ignore[", 1)[1].split("]", 1)[1].strip()
                assert len(reason) > 10, f"{path.name}: unexplained ignore: {line.strip()}"


# --- issue 10: a pull request cannot be its own judge ----------------------------------------

GATE = GITHUB / "workflows" / "latency-gate.yml"
PR_WORKFLOW = GITHUB / "workflows" / "latency-pr.yml"
REPORT = GITHUB / "workflows" / "latency-report.yml"
KERNEL_INPUTS = ("kernel/patches", "kernel/configs")


HEAD_INPUTS_ACTION = "./.github/actions/head-kernel-inputs"
VERDICT_ACTION = "./.github/actions/verdict"


def verdict_script() -> str:
    """What the gate jobs' Verdict step runs (the shared verdict action)."""
    (only,) = load(ROOT / VERDICT_ACTION[2:] / "action.yml")["runs"]["steps"]
    return only["run"]


def evaluate_with_format(expression: str, context: dict[str, Any]) -> Any:
    # format('{0}/x', a.b) on a context path: substituted before the evaluator sees it.
    m = re.search(r"format\('([^']*)', ([\w.]+)\)", expression)
    assert m, expression
    value: Any = context
    for part in m.group(2).split("."):
        value = value.get(part) if isinstance(value, dict) else None
    text = m.group(1).replace("{0}", str(value)).replace("'", "''")
    return evaluate(expression.replace(m.group(0), f"'{text}'"), context)


def head_inputs_script() -> str:
    """What the plan jobs run to read a head commit's kernel inputs."""
    (only,) = load(ROOT / HEAD_INPUTS_ACTION[2:] / "action.yml")["runs"]["steps"]
    return only["run"]


def called(job: dict[str, Any]) -> Path | None:
    """The local reusable workflow a job calls, if any."""
    uses = job.get("uses", "")
    return ROOT / uses[2:] if uses.startswith("./") else None


def reachable_jobs(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every job a run of this workflow executes, reusable workflows included."""
    for name, job in jobs(load(path)):
        target = called(job)
        if target is not None:
            yield from reachable_jobs(target)
        else:
            yield f"{path.name}:{name}", job


def pull_request_workflows() -> list[Path]:
    return [p for p in WORKFLOWS if "pull_request" in triggers(load(p))]


@pytest.mark.parametrize("path", pull_request_workflows(), ids=lambda p: p.name)
def test_what_a_pull_request_triggers_runs_no_lab_job_and_holds_nothing(path: Path) -> None:
    # GitHub runs the pull request's own copy of these: they must be worth nothing to it.
    for name, job in reachable_jobs(path):
        assert not is_self_hosted(job), f"{name} runs on a lab runner"
        assert runs_on(job) == ["ubuntu-latest"], f"{name}: {runs_on(job)}"
        assert "environment" not in job, f"{name} reaches an environment"
        writes = {s for s, level in granted(job.get("permissions")).items() if level != "read"}
        assert not writes - {"none"}, f"{name} may write {writes}"
    assert "secrets." not in path.read_text()


def test_no_pull_request_workflow_reaches_the_lab() -> None:
    lab = [name for p in pull_request_workflows() for name, job in reachable_jobs(p)
           if is_self_hosted(job)]
    assert lab == []
    assert "pull_request" not in triggers(load(GATE))


def test_the_gate_runs_from_the_default_branch_after_the_pull_request_workflow() -> None:
    gate, pr = load(GATE), load(PR_WORKFLOW)
    assert "pull_request" in triggers(pr)
    assert gate["on"]["workflow_run"] == {"workflows": [pr["name"]], "types": ["completed"]}
    # The plan job decides whether a run is a pull request to judge at all.
    condition = gate["jobs"]["plan"]["if"]
    run = {"event": "pull_request", "conclusion": "success"}
    assert evaluate(condition, {"github": {"event_name": "workflow_run",
                                           "event": {"workflow_run": run}}})
    for other in ({"event": "push", "conclusion": "success"},
                  {"event": "pull_request", "conclusion": "failure"}):
        assert not evaluate(condition, {"github": {"event_name": "workflow_run",
                                                   "event": {"workflow_run": other}}})


def test_workflow_run_chains_stay_within_three_levels() -> None:
    # GitHub does not start a fourth workflow_run level: the publisher would silently vanish.
    by_name = {load(p)["name"]: load(p) for p in WORKFLOWS}

    def depth(name: str) -> int:
        upstream = by_name[name]["on"].get("workflow_run", {}).get("workflows", []) \
            if isinstance(by_name[name]["on"], dict) else []
        return 1 + max((depth(u) for u in upstream), default=0)

    assert max(depth(n) for n in by_name) <= 3
    assert depth("latency-report") == 3 and depth("latency-gate") == 2


def test_the_lab_job_checks_out_the_default_branch_only() -> None:
    gate = load(GATE)
    for name, job in jobs(gate):
        for step in job.get("steps", []):
            if step.get("uses", "").startswith("actions/checkout@"):
                assert "ref" not in step.get("with", {}), f"{name}: checks out another ref"
    # The head commit is named only by HEAD_SHA: git fetches it and the default branch's rtgate
    # reads the kernel inputs of its merge with main as objects (the head-kernel-inputs
    # action; tests/integration/test_merge_inputs.py); the gate's steps read that manifest.
    plan_steps = {s.get("name"): s for s in gate["jobs"]["plan"]["steps"]}
    assert plan_steps["Kernel inputs of the head commit, as data"]["uses"] == HEAD_INPUTS_ACTION
    script = (plan_steps["Gate inputs the head commit changes, as data"]["run"] + "\n"
              + head_inputs_script())
    uses = [line.strip() for line in script.splitlines() if "HEAD_SHA" in line]
    allowed = ("git -c", ".github/rtgate kernel inputs --head \"$HEAD_SHA\"",
               "\"$python\" -I .github/rtgate kernel inputs --head \"$HEAD_SHA\"",
               "if ! [[ \"$HEAD_SHA\" =~", "echo \"::error::not a commit: $HEAD_SHA\"")
    for line in uses:
        assert line.startswith(allowed), f"the head is used beyond its kernel inputs: {line}"
    assert "git archive" not in script
    assert "checkout" not in script and "git switch" not in script and "worktree" not in script
    # The lab job gets the kernel inputs through the plan job's artifact, nothing else.
    lab = gate["jobs"]["gate"]
    assert all(step.get("with", {}).get("ref") is None for step in lab["steps"])


def test_a_pull_requests_kernel_is_built_by_the_controller_in_a_container() -> None:
    gate = load(GATE)
    kernels = gate["jobs"]["kernels"]
    ctx = {"needs": {"plan": {"outputs": {"trust": "pr"}}}, "inputs": {"kernels": ""}}
    assert not evaluate(kernels["if"], ctx), "a PR gate would take kernels from an artifact"
    env = gate["jobs"]["gate"]["env"]
    assert evaluate(env["KERNELS_FROM"], ctx) == "controller"
    ctx_main = {"needs": {"plan": {"outputs": {"trust": "main"}}}, "inputs": {"kernels": ""}}
    assert evaluate(env["KERNELS_FROM"], ctx_main) == "artifacts"
    pipeline = next(s["run"] for s in gate["jobs"]["gate"]["steps"] if s.get("id") == "pipeline")
    assert "args+=(--runtime docker)" in pipeline and "RTGATE_CACHE_PR" in pipeline


def rtgate_invocations(path: Path) -> list[str]:
    return [line.strip() for step in steps(load(path)) for line in step.get("run", "").splitlines()
            if "rtgate" in line and not line.strip().startswith("#")
            and ("python" in line.lower() or line.strip().startswith("rtgate"))]


@pytest.mark.parametrize("path", [GATE, REPORT, GITHUB / "workflows" / "pages.yml",
                                  GITHUB / "workflows" / "latency-bisect.yml",
                                  GITHUB / "actions" / "verdict" / "action.yml"],
                         ids=lambda p: p.parent.name if p.name == "action.yml" else p.name)
def test_rtgate_runs_isolated(path: Path) -> None:
    # -I: no user site-packages, no PYTHON* variables, no current directory on the path.
    calls = [c for c in rtgate_invocations(path) if "rtgate" in c.split("#")[0]
             and ("-m rtgate" in c or ".github/rtgate" in c)]
    assert calls, f"{path.name} runs no rtgate"
    for call in calls:
        assert " -I " in f" {call} ", f"{path.name}: {call}"
        assert not call.startswith(("rtgate ", "python3 -m", "python -m rtgate"))


def test_the_publisher_only_trusts_the_default_branchs_gate() -> None:
    condition = load(REPORT)["jobs"]["publish"]["if"]

    def run(**kw: Any) -> dict[str, Any]:
        base = {"path": ".github/workflows/latency-gate.yml", "event": "workflow_run",
                "head_branch": "main", "conclusion": "failure",
                "head_repository": {"full_name": "rtgate/rtgate"}}
        return {"github": {"repository": "rtgate/rtgate",
                           "event": {"repository": {"default_branch": "main"},
                                     "workflow_run": base | kw}}}

    def published(ctx: dict[str, Any]) -> bool:
        return bool(evaluate_with_contains(condition, ctx))

    assert published(run())
    assert published(run(event="push", conclusion="success"))
    # A pull request's own workflow that calls itself latency-gate, in any way:
    assert not published(run(event="pull_request"))
    assert not published(run(path=".github/workflows/evil.yml"))
    assert not published(run(head_branch="feature"))
    assert not published(run(head_repository={"full_name": "someone/rtgate"}))
    assert not published(run(conclusion="cancelled"))


def test_only_mains_runs_enter_the_history() -> None:
    condition = load(GITHUB / "workflows" / PAGES_WORKFLOW)["jobs"]["history"]["if"]
    condition = condition.replace("!cancelled()", "true")

    def merged(trigger: str, ref: str = "refs/heads/main", **run: Any) -> bool:
        base = {"event": "push", "path": ".github/workflows/latency-gate.yml",
                "head_repository": {"full_name": "rtgate/rtgate"}, "conclusion": "failure"}
        return bool(evaluate(condition, {
            "github": {"event_name": trigger, "ref": ref, "repository": "rtgate/rtgate",
                       "event": {"workflow_run": base | run}},
            "needs": {"nightly": {"result": "skipped" if trigger == "workflow_run"
                                  else "failure"}}}))

    assert merged("workflow_run") and merged("schedule") and merged("workflow_dispatch")
    # A dispatch on another branch measures that branch: never main's history.
    assert not merged("workflow_dispatch", ref="refs/heads/feature")
    assert not merged("workflow_run", event="pull_request")
    assert not merged("workflow_run", conclusion="cancelled")


def evaluate_with_contains(expression: str, context: dict[str, Any]) -> Any:
    # The one function the publisher's condition uses, on a literal list: contains(fromJSON(
    # '[...]'), x) becomes a chain of ==, which the evaluator above handles.
    m = re.search(r"contains\(fromJSON\('(\[.*?\])'\), ([\w.]+)\)", expression)
    assert m, expression
    import json
    options = " || ".join(f"{m.group(2)} == '{o}'" for o in json.loads(m.group(1)))
    return evaluate(expression.replace(m.group(0), f"({options})"), context)


# Threads cyclictest runs (-t: one per CPU) on each board the gate measures: the Pi 5's BCM2712
# has 4 cores (bench/boards/rpi5.yml); the virtual Pi has options.smp; `local` at least one.
THREADS = {"rpi5": 4, "qemu-arm64": 2, "local": 1, "lava-qemu": 2}


def seconds(text: str) -> float:
    return float(text[:-1]) * {"s": 1, "m": 60, "h": 3600}[text[-1]]


def all_boards() -> set[str]:
    return {p.stem for p in (ROOT / "bench" / "boards").glob("*.yml")}


def lab_runner_boards() -> set[str]:
    """The boards the lab gate runs on self-hosted runners: all but LAVA's, which the gate-lava
    job reaches through their lab's LAVA server from a GitHub-hosted runner (docs/lava.md)."""
    from rtgate.board.spec import load_board
    return {b for b in all_boards() if load_board(b).driver != "lava"}


def test_a_healthy_boards_pr_gate_runs_long_enough_for_a_verdict() -> None:
    # A budget's min_samples not met is "incomplete", never a verdict: the default duration of
    # a pull request's gate must give every budget of the board's own scenarios its samples.
    import json

    from rtgate.board.spec import load_board
    from rtgate.gate.thresholds import load_thresholds

    durations = json.loads(load(GATE)["env"]["GATE_DURATIONS"])
    thresholds = load_thresholds(ROOT / "thresholds.yml")
    assert set(durations) == all_boards()
    for board, duration in durations.items():
        spec = load_board(board)
        flavors = ["stock", "rt"] if spec.kernel_target else ["stock"]
        for flavor, scenario in ((f, s) for f in flavors for s in spec.scenarios):
            budget = thresholds.select(board, flavor, scenario)
            assert budget is not None, f"{board}/{flavor}/{scenario} has no budget"
            # -i100 in every scenario's cyclictest arguments, unless the board replaces it.
            interval_us = getattr(spec.options, "interval_us", None) or 100
            samples = seconds(duration) * THREADS[board] * 1e6 / interval_us
            assert samples >= (budget.min_samples or 0) * 1.05, \
                f"{board}/{flavor}/{scenario}: {duration} gives {samples:.3g} samples, " \
                f"{budget.label} needs {budget.min_samples}"


# ---- A pull request's gate: main's kernel against the pull request's (A/B) -----------------

def gate_steps() -> list[dict[str, Any]]:
    return load(GATE)["jobs"]["gate"]["steps"]


def test_the_pr_gate_measures_mains_kernel_against_the_prs_with_rtgate_ab() -> None:
    names = [s.get("name", "") for s in gate_steps()]
    main_at = names.index("Main's kernels for the A/B rounds (trusted cache)")
    # A is built from the default branch's series before the PR's inputs replace them.
    assert main_at < names.index("The pull request's kernel inputs")
    main = gate_steps()[main_at]
    assert evaluate(main["if"], {"needs": {"plan": {"outputs": {"trust": "pr"}}}})
    assert not evaluate(main["if"], {"needs": {"plan": {"outputs": {"trust": "main"}}}})
    script = main["run"]
    assert 'RTGATE_CACHE="${RTGATE_CACHE_MAIN:?' in script and "RTGATE_CACHE_TRUST=trusted" \
        in script and "--cache-trust trusted" in script and "--runtime docker" not in script
    assert '--out "$RUNNER_TEMP/ab/base/$flavor"' in script
    pipeline = next(s for s in gate_steps() if s.get("id") == "pipeline")
    assert pipeline["env"]["AB_PLAN"] == "${{ steps.main-kernels.outputs.plan }}"
    run = pipeline["run"]
    # B: the PR's kernel, in the container, in the untrusted cache; then the A/B rounds.
    cand = run[run.index('kernel build --board "$KERNEL_TARGET"'):
               run.index('--out "$RUNNER_TEMP/ab/cand/$flavor"')]
    assert "--runtime docker --cache-trust untrusted" in cand
    # A and B from one commit of the target's source (docs/lab.md, "A pinned base").
    assert '--source "$KERNEL_SOURCE"' in cand and '--source "$KERNEL_SOURCE"' in script
    assert 'export RTGATE_CACHE="${RTGATE_CACHE_PR:?' in run
    assert '.github/rtgate ab "${ab[@]}"' in run
    assert '--base "$RUNNER_TEMP/ab/base" --cand "$RUNNER_TEMP/ab/cand"' in run
    assert '--planned-rounds "$planned"' in run and '--out "$out"' in run
    # The step and the check judge the same way: the publisher replays the rounds with the
    # run context's plan, and undecided is its own outcome.
    verdict = next(s for s in gate_steps() if s.get("id") == "verdict")
    assert verdict["uses"] == VERDICT_ACTION
    context = verdict["with"]["context"]
    ctx = {"needs": {"plan": {"outputs": {"trust": "pr"}}}, "runner": {"temp": "/tmp/r"}}
    assert evaluate_with_format(context, ctx) == "/tmp/r/run-context"
    ctx["needs"]["plan"]["outputs"]["trust"] = "main"
    assert not evaluate_with_format(context, ctx)
    script = verdict_script()
    assert 'if [ -n "$CONTEXT" ]; then args+=(--context "$CONTEXT"); fi' in script
    assert "undecided) echo \"::error title=Undecided on $BOARD::" in script
    assert "exit 4 ;;" in script


def test_the_ab_plan_is_the_publishers_and_its_first_look_can_decide() -> None:
    """GATE_AB loads as the publisher's plan model; three rounds a side (the first look) hold
    every budget's min_samples pooled, else the first looks spend alpha on 'unknown'; the cap
    holds the planned rounds of every flavor and scenario, both sides, at least as rounds of
    measurement alone."""
    import json

    from rtgate.board.spec import load_board
    from rtgate.gate.thresholds import load_thresholds
    from rtgate.publish.context import ABPlan
    from rtgate.stats.ab import MIN_ROUNDS

    plans = {b: ABPlan.model_validate(p)
             for b, p in json.loads(load(GATE)["env"]["GATE_AB"]).items()}
    thresholds = load_thresholds(ROOT / "thresholds.yml")
    # Main's push fills the trusted cache with every flavor a plan may name as A.
    built = load(GATE)["jobs"]["gate"]["env"]["AB_FLAVORS"].split()
    records = [json.loads(p.read_text()) for p in (ROOT / "bench" / "calibration").glob("*.json")]
    assert {k["flavor"] for r in records for k in r["keys"]} <= set(built)
    # LAVA boards are judged on their budgets alone: no A/B plan (docs/lava.md).
    assert set(plans) == {b for b in lab_runner_boards() if load_board(b).kernel_target}
    for board, plan in plans.items():
        spec = load_board(board)
        flavors = plan.flavors
        assert flavors and set(flavors) <= set(built), board
        for flavor, scenario in ((f, s) for f in flavors for s in spec.scenarios):
            budget = thresholds.select(board, flavor, scenario)
            assert budget is not None and budget.ab is not None, \
                f"{board}/{flavor}/{scenario}: no ab.min_effect_pct for the A/B gate"
            samples = MIN_ROUNDS * plan.round_s * THREADS[board] * 1e6 / 100
            assert samples >= (budget.min_samples or 0) * 1.05, (board, flavor, samples)
        rounds = plan.rounds * 2 * len(flavors) * len(spec.scenarios)
        assert plan.max_time_s >= rounds * plan.round_s, board


# ---- issue 15: a board in a LAVA lab, gated from a GitHub-hosted runner ----------------------

LAVA_TOKEN = "${{ secrets.RTGATE_LAVA_TOKEN }}"
STORE_TOKEN = "${{ secrets.RTGATE_STORE_TOKEN }}"


def lava_job() -> dict[str, Any]:
    job: dict[str, Any] = load(GATE)["jobs"]["gate-lava"]
    return job


def without_cancelled(expression: str) -> str:
    # !cancelled() is GitHub's status function: true in these contexts.
    return expression.replace("!cancelled()", "true")


def test_the_lava_gate_job_is_github_hosted_behind_the_lab_approval() -> None:
    job, lab_job = lava_job(), load(GATE)["jobs"]["gate"]
    assert runs_on(job) == ["ubuntu-latest"] and not is_self_hosted(job)
    # Same approval as a lab runner: a fork's pull request waits for a maintainer at `lab`
    # (required reviewers) before the job, and its secret, exist at all.
    assert job["environment"] == lab_job["environment"]
    assert evaluate(job["environment"], pull_request_context("someone/rtgate")) \
        in PROTECTED_ENVIRONMENTS
    assert evaluate(job["environment"], pull_request_context("rtgate/rtgate")) == "lab-trusted"
    assert granted(job["permissions"]) == {"contents": "read"}
    # No concurrency group: LAVA queues per device, and GitHub would cancel all but one
    # pending job of a group (a queued pull request would lose its check).
    assert "concurrency" not in job
    assert isinstance(job["timeout-minutes"], int)
    assert job["strategy"]["matrix"] == {"include": "${{ fromJSON(needs.plan.outputs.lava) }}"}
    assert "plan" in job["needs"]
    # Only when the plan routed a board here, and only after its kernels were built.
    condition = without_cancelled(job["if"])

    def runs(lava: str, kernels: str = "success", lava_kernels: str = "skipped") -> bool:
        return bool(evaluate(condition, {"needs": {
            "plan": {"result": "success", "outputs": {"lava": lava}},
            "kernels": {"result": kernels}, "lava-kernels": {"result": lava_kernels}}}))

    lava = '[{"board":"lava-qemu","kernel_target":"qemu-arm64"}]'
    assert runs(lava) and runs(lava, "skipped", "success")
    assert not runs("[]") and not runs(lava, "failure") and not runs(lava, "skipped", "failure")
    # The lab gate no longer gets an empty matrix when every board is a LAVA one.
    assert not evaluate(without_cancelled(lab_job["if"]), {"needs": {
        "plan": {"result": "success", "outputs": {"boards": "[]"}},
        "kernels": {"result": "skipped"}}})


def test_a_pull_request_changing_no_kernel_input_reaches_no_lab_job() -> None:
    """The plan job's `measure` output (its own base...head diff, tests/integration/
    test_gate_chain.py runs it) is false: no job that builds, boots or measures runs, and the
    publisher still gets a finished gate run with the run context (latency-report.yml)."""
    gate = load(GATE)
    plan = gate["jobs"]["plan"]
    assert plan["outputs"]["measure"] == "${{ steps.kernel-change.outputs.measure }}"
    decide = next(s for s in plan["steps"] if s.get("id") == "kernel-change")
    # The default branch's git on the pull request's commits, never a file of the head's.
    # The manifest rtgate kernel inputs wrote from the merge (never `git merge-base`: one of
    # several bases of a criss-cross history); a missing decision fails the step.
    assert "git merge-base" not in decide["run"]
    assert '.measure | if type == "boolean"' in decide["run"]
    assert "${{" not in decide["run"] and "env" not in decide
    full = {"plan": {"result": "success", "outputs": {
                "boards": '[{"board":"","kind":"rpi5","label":"rpi5"}]', "trust": "pr",
                "lava": '[{"board":"lava-qemu","kernel_target":"qemu-arm64"}]',
                "lava_kernel_targets": '["qemu-arm64"]'}},
            "kernels": {"result": "skipped"}, "lava-kernels": {"result": "skipped"}}
    for name in ("gate", "gate-lava", "lava-kernels"):
        condition = without_cancelled(gate["jobs"][name]["if"])
        for measure, expected in (("false", False), ("true", True), (None, True)):
            needs = {**full, "plan": {**full["plan"], "outputs": {**full["plan"]["outputs"],
                                                                  "measure": measure}}}
            assert bool(evaluate(condition, {"needs": needs})) is expected, (name, measure)
    # The run context is kept whatever the plan decided: the publisher reads it.
    keep = next(s for s in plan["steps"] if s.get("name") == "Keep the run context")
    assert keep["if"] == "${{ !env.ACT }}"
    # Every pull request runs latency-pr.yml, so every one gets the gate and its check.
    assert load(PR_WORKFLOW)["on"] == {"pull_request": None}


def test_the_lava_token_reaches_only_the_rtgate_step() -> None:
    from rtgate.board.spec import load_board

    job = lava_job()
    step = next(s for s in job["steps"] if s.get("id") == "pipeline")
    # The environment secrets (the LAVA API's, the image store's), in this step's env alone,
    # under the names the boards read.
    assert step["env"] == {"RTGATE_LAVA_TOKEN": LAVA_TOKEN, "RTGATE_STORE_TOKEN": STORE_TOKEN}
    for board in all_boards() - lab_runner_boards():
        options = load_board(board).options
        assert options.token_env == "RTGATE_LAVA_TOKEN", board
        assert options.image_store is None or options.image_store.token_env in (
            None, "RTGATE_STORE_TOKEN"), board
    others = {**job, "steps": [s for s in job["steps"] if s is not step]}
    assert "secrets." not in yaml.safe_dump(others)
    # rtgate reads them from its environment: the script never names, prints or passes them on.
    for name in step["env"]:
        assert name not in step["run"], name
    assert "set -x" not in step["run"] and ".github/rtgate pipeline" in step["run"]
    # No other job of any workflow holds them.
    for name in step["env"]:
        holders = [(p.name, job_name) for p in WORKFLOWS for job_name, j in jobs(load(p))
                   if f"secrets.{name}" in yaml.safe_dump(j)]
        assert holders == [("latency-gate.yml", "gate-lava")], name


def test_a_pull_requests_kernel_for_a_lava_board_is_built_without_the_token() -> None:
    """No pull-request code runs where the token is: its kernel is built by kernels.yml (no
    environment, no secret, read-only), from its kernel inputs laid over the default branch
    before the builder image; gate-lava takes the built kernel as an artifact, as data."""
    gate = load(GATE)
    build = gate["jobs"]["lava-kernels"]
    assert build["uses"] == "./.github/workflows/kernels.yml"
    assert build["with"] == {"boards": "${{ needs.plan.outputs.lava_kernel_targets }}",
                             "sources": "${{ needs.plan.outputs.kernel_sources }}",
                             "head-kernel-inputs": True}
    assert granted(build["permissions"]) == {"contents": "read"}
    assert "environment" not in build and "secrets" not in build

    def builds(trust: str, boards: str) -> bool:
        return bool(evaluate(build["if"], {"needs": {"plan": {"outputs": {
            "trust": trust, "lava_kernel_targets": boards}}}}))

    assert builds("pr", '["qemu-arm64"]')
    assert not builds("main", '["qemu-arm64"]') and not builds("pr", "[]")
    # kernels.yml: the head's inputs replace main's before the builder image copies kernel/.
    kernels = load(GITHUB / "workflows" / "kernels.yml")
    assert kernels["on"]["workflow_call"]["inputs"]["head-kernel-inputs"]["default"] is False
    names = [s.get("name") for s in kernels["jobs"]["build"]["steps"]]
    inputs = kernels["jobs"]["build"]["steps"][names.index("The pull request's kernel inputs")]
    assert inputs["uses"] == "./.github/actions/kernel-inputs"
    assert inputs["if"] == "${{ inputs.head-kernel-inputs }}"
    assert names.index("The pull request's kernel inputs") < names.index(
        "Builder image for this runner (from the GHA cache)")
    # main's kernels for every board's kernel build target, LAVA boards' included.
    assert gate["jobs"]["kernels"]["with"]["boards"] == "${{ needs.plan.outputs.kernel_targets }}"
    # gate-lava: the default branch's checkout and the built kernel, nothing else of the head.
    steps = lava_job()["steps"]
    uses = [s.get("uses", "").split("@")[0] for s in steps if "uses" in s]
    assert uses == ["actions/checkout", "./.github/actions/fetch-kernels",
                    "./.github/actions/verdict", "./.github/actions/keep-results"]
    fetch = next(s for s in steps if s.get("uses") == "./.github/actions/fetch-kernels")
    assert fetch["with"]["board"] == "${{ matrix.kernel_target }}"


def test_the_lava_gate_feeds_the_publisher_like_the_lab_gate() -> None:
    from rtgate.publish.judge import ARTIFACT_PREFIX

    gate = load(GATE)
    for name in ("gate", "gate-lava"):
        steps = gate["jobs"][name]["steps"]
        keep = next(s for s in steps if s.get("uses") == "./.github/actions/keep-results")
        # The lab gate's: a pull request's kind (the name its run context expects), else the
        # board (tests/integration/test_workflows_steps.py runs the plan that names them).
        named = "matrix.board || matrix.kind" if name == "gate" else "matrix.board"
        assert keep["with"]["name"] == ARTIFACT_PREFIX + f"${{{{ {named} }}}}", name
        verdict = next(s for s in steps if s.get("id") == "verdict")
        assert verdict["uses"] == VERDICT_ACTION, name  # one judge, one wording
        # The name the publisher expects too: a pull request's lab gate judges a kind.
        if name == "gate":
            assert verdict["with"]["board"] == \
                "${{ needs.plan.outputs.trust == 'pr' && env.KIND || env.BOARD }}"
    download = next(s for s in load(REPORT)["jobs"]["publish"]["steps"]
                    if s.get("name") == "Gate artifacts")
    # With the run context, which every gate run uploads: a pattern matching one artifact
    # extracts it into the path itself (download-artifact v5+), and a one-board gate's results
    # would not be in gate/gate-BOARD/ (tests/integration/test_act_publish.py runs it).
    assert download["with"]["pattern"] == "{" + ARTIFACT_PREFIX + "*,run-context}"


def test_mains_push_fills_the_cache_a_pull_requests_a_reads_from_one_pinned_commit() -> None:
    """Main's push builds A's kernels on the controller into the trusted cache from the source
    it pins and records; a pull request's gate builds A and B from that record: the same
    target, flavors, source and cache domain as the push, so A is a cache hit."""
    steps = {s.get("name"): s for s in gate_steps()}
    pin = steps["The kernel source A and B build from"]
    fill = steps["Main's kernels into the controller's trusted cache"]
    a = steps["Main's kernels for the A/B rounds (trusted cache)"]
    names = list(steps)
    assert names.index("The board this runner serves") < names.index(
        "The kernel source A and B build from") < names.index(
        "Main's kernels into the controller's trusted cache") < names.index(
        "Main's kernels for the A/B rounds (trusted cache)")
    for event, trust, pinned, filled in [("push", "main", True, True),
                                         ("workflow_run", "pr", True, False),
                                         ("schedule", "main", False, False)]:
        ctx = {"env": {"KERNEL_TARGET": "rpi5"}, "github": {"event_name": event},
               "needs": {"plan": {"outputs": {"trust": trust}}}}
        assert bool(evaluate(pin["if"], ctx)) is pinned, event
        assert bool(evaluate(fill["if"], ctx)) is filled, event
    # A board running its own kernel builds nothing.
    assert not evaluate(pin["if"], {"env": {"KERNEL_TARGET": ""},
                                    "github": {"event_name": "push"},
                                    "needs": {"plan": {"outputs": {"trust": "main"}}}})
    script = pin["run"]
    # The run's one pin, from the plan job (tests/integration/test_workflows_steps.py runs it).
    assert pin["env"] == {"KERNEL_SOURCES": "${{ needs.plan.outputs.kernel_sources }}"}
    assert "kernel pin" not in script
    assert 'if [ "$TRUST" = pr ] && [ -s "$record" ]; then' in script
    assert 'echo "KERNEL_SOURCE=$source" >> "$GITHUB_ENV"' in script
    same = ('kernel build --board "$KERNEL_TARGET"', '--source "$KERNEL_SOURCE"',
            "--cache-trust trusted")
    for step, loop in ((fill, "for flavor in $AB_FLAVORS; do"),
                       (a, """for flavor in $(jq -r '.flavors[]' <<<"$plan"); do""")):
        flat = " ".join(step["run"].replace("\\\n", " ").split())
        assert all(part in flat for part in (*same, loop)), step["name"]
        assert "--runtime docker" not in flat


def test_the_plan_pins_the_kernel_base_once_for_every_build_of_the_run() -> None:
    """kernels.yml's artifacts (main's published numbers) and the controller's builds (main's
    push filling the trusted cache a pull request's A comes from) take one commit: the plan
    job's `rtgate kernel pin`, passed to kernels.yml as an input and to the gate job."""
    gate = load(GATE)
    plan = {s.get("id"): s for s in gate["jobs"]["plan"]["steps"]}
    assert 'kernel pin --board "$target"' in plan["pin"]["run"]
    assert plan["pin"]["env"]["TARGETS"] == "${{ steps.boards.outputs.kernel_targets }}"
    assert gate["jobs"]["plan"]["outputs"]["kernel_sources"] == \
        "${{ steps.pin.outputs.kernel_sources }}"
    for job in ("kernels", "lava-kernels"):
        assert gate["jobs"][job]["with"]["sources"] == "${{ needs.plan.outputs.kernel_sources }}"
    kernels = load(GITHUB / "workflows" / "kernels.yml")
    assert kernels["on"]["workflow_call"]["inputs"]["sources"]["default"] == "{}"
    build = kernels["jobs"]["build"]
    assert build["env"]["SOURCES"] == "${{ inputs.sources }}"
    script = next(s["run"] for s in build["steps"]
                  if s.get("name") == "Build the kernel inside the builder image")
    assert """SOURCE=$(jq -r --arg b "$BOARD" '.[$b] // empty'""" in script
    assert "source=${SOURCE:-$(python3" in script and '${SOURCE:+--source "$SOURCE"}' in script
    assert script.count("-e SOURCE") == 2  # into both containers: fetch and build


def test_the_gate_fans_out_over_a_kinds_boards_and_queues_on_their_runners() -> None:
    """Queueing, checked statically (act cannot show it): a pull request's job carries its
    kind's label, so any free board of the kind takes it; no concurrency group could cancel
    a pending gate; the first step names the board from the runner."""
    job = load(GATE)["jobs"]["gate"]
    assert job["strategy"]["matrix"] == {"include": "${{ fromJSON(needs.plan.outputs.boards) }}"}
    assert runs_on(job)[3] == "${{ matrix.label }}"
    assert "concurrency" not in job
    assert "BOARD" not in job["env"]
    first = job["steps"][1]
    assert first["name"] == "The board this runner serves"
    assert first["env"] == {"WANT_BOARD": "${{ matrix.board }}", "WANT_KIND": "${{ matrix.kind }}",
                            "BOARD_FILES": "${{ needs.plan.outputs.board_files }}"}
    assert "board=${WANT_BOARD:-${RTGATE_BOARD:-$RUNNER_NAME}}" in first["run"]
    # Every later use of the board is the one the first step found; the artifact keeps the
    # name the run context expects (the kind a pull request asked for, else the board).
    later = yaml.safe_dump([s for s in job["steps"][2:]
                            if s.get("uses") != "./.github/actions/keep-results"])
    assert "matrix.board" not in later and "matrix.kind" not in later


def test_every_download_of_gate_artifacts_lands_each_in_a_directory_of_its_name() -> None:
    """download-artifact v5+ (the pinned v8.0.1, src/download-artifact.ts: `isSingleArtifactDownload
    || inputs.mergeMultiple || artifacts.length === 1 ? resolvedPath : path.join(resolvedPath,
    artifact.name)`) extracts a pattern's LONE match into the path itself: a one-board gate's
    results would not be in gate/gate-BOARD/, where every reader looks. Matching the run
    context too (every gate run uploads it) keeps two matches at least."""
    from fnmatch import fnmatchcase

    for path in sorted((GITHUB / "workflows").glob("*.yml")):
        for _, job in jobs(load(path)):
            for s in job.get("steps", []):
                if not s.get("uses", "").startswith("actions/download-artifact@"):
                    continue
                pattern = s["with"].get("pattern")
                if pattern is None or not fnmatchcase("gate-x", pattern.strip("{}").split(",")[0]):
                    continue
                assert pattern == "{gate-*,run-context}", f"{path.name}: {pattern}"
                assert s["with"].get("merge-multiple", False) in (False, "false"), path.name


# ---- act's shortcuts never reach a real run ------------------------------------------------

ACT_SHORTCUT = re.compile(r'\[ -n "\$\{ACT:-\}" \] && \[ -n "\$\{RTGATE_PYTHON:-\}" \]')


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_act_and_its_interpreter_come_only_from_act(path: Path) -> None:
    """Under act (tests/actlab.py) a step may keep the suite's interpreter instead of installing
    the default branch's rtgate. That shortcut must be unreachable on GitHub: `ACT` is set by act
    alone (nektos/act pkg/runner/run_context.go, `GetEnv`: `rc.Env["ACT"] = "true"` for every
    job), so no workflow sets it; in a job
    with the shortcut nothing sets RTGATE_PYTHON but the step that installs rtgate, and that job
    runs only on GitHub-hosted runners, whose fresh VM sets neither (a self-hosted runner's .env
    could)."""
    data = load(path)
    workflow_env = set(data.get("env", {}) or {})
    assert "ACT" not in workflow_env and "RTGATE_PYTHON" not in workflow_env, path.name
    for name, job in jobs(data):
        job_env = set(job.get("env", {}) or {})
        assert "ACT" not in job_env, (path.name, name)
        shortcut, step_env = False, set()
        for step in job.get("steps", []):
            run, env = step.get("run", ""), set(step.get("env", {}) or {})
            step_env |= env
            assert "ACT" not in env, (path.name, name, step.get("name"))
            assert not re.search(r"\bACT=.*GITHUB_ENV", run), (path.name, name, step.get("name"))
            writes_python = re.search(r"RTGATE_PYTHON=.*>>\s*\"?\$GITHUB_ENV", run)
            if ACT_SHORTCUT.search(run) or writes_python:
                # The shortcut and the install are one step: act skips exactly the install.
                assert ACT_SHORTCUT.search(run) and writes_python, (path.name, name, step["name"])
                assert not shortcut, (path.name, name, "installs twice")
                shortcut = True
        if shortcut:
            assert "RTGATE_PYTHON" not in job_env | step_env, (path.name, name)
            assert all(label.startswith("ubuntu-") for label in runs_on(job)), \
                (path.name, name, runs_on(job))


KEEP_RESULTS = GITHUB / "actions" / "keep-results" / "action.yml"
UPLOAD_ARTIFACT = "actions/upload-artifact@bbbca2ddaa5d8feaa63e36b76fdaad77386f024f"
"""v7.0.0, the version whose source the rule below was read from."""
UPLOADS_WRITTEN_BY_RTGATE = {
    ("pages.yml", "kcidb.json"): "the job's `rtgate kcidb --out` (an atomic rename)",
    ("pages.yml", "site"): "the job's `rtgate report` site from the history store",
    ("latency-report.yml", "kcidb.json"): "the publisher's `rtgate kcidb --out`",
    ("latency-report.yml", "comment.md\njunit.xml\noutcome.json\n"): "the publisher's files",
    ("kernels.yml", "delivery/${{ matrix.board }}-${{ matrix.flavor }}"):
        "`rtgate kernel deliver`: a fresh directory of the build's expected regular files, a "
        "link refused (exit 3)",
}
"""upload steps outside keep-results: files the job's own rtgate (the default branch's) just
wrote, never a directory another program filled."""


def test_nothing_but_regular_files_reaches_upload_artifact() -> None:
    """upload-artifact follows symbolic links, as read in the pinned v7.0.0
    (github:actions/upload-artifact@bbbca2dd) and the libraries its package-lock pins:

    * src/shared/search.ts lines 14-21: the search globs with `followSymbolicLinks: true` and
      `omitBrokenSymbolicLinks: true`; lines 103-108 keep every hit that `stat` (not `lstat`)
      says is no directory. @actions/glob 0.6.1 src/internal-globber.ts lines 201-204 `stat`s
      each item when following: a linked directory is walked as a directory, a broken link is
      dropped silently.
    * @actions/artifact 6.2.0 (actions/toolkit 6fe3c0f3) src/internal/upload/
      upload-zip-specification.ts line 84 `lstat`s each file, and src/internal/upload/zip.ts
      lines 33-38: `if (file.stats.isSymbolicLink()) sourcePath = await realpath(...)`, then
      `zip.file(sourcePath, {name: file.destinationPath})`: the TARGET's content under the
      link's name, wherever the target lives; any other non-directory is read as a stream
      (a FIFO's read waits for a writer that never comes).

    So a link in a gate's output uploads a file of the runner, and the publisher, which refuses
    links in what it downloads, only ever sees a regular file. keep-results, which uploads what a
    run wrote (a gate's output, a bisect's rounds, the run context), removes links and every
    other non-regular file first (run by tests/integration/test_workflows_steps.py); its upload
    keeps the version read here; every other upload is of what the job's own rtgate wrote."""
    action = load(KEEP_RESULTS)
    own = action["runs"]["steps"]
    assert [s["name"] for s in own] == ["Refuse links and other non-regular files", "Upload"]
    refuse, upload = own
    assert upload["uses"] == UPLOAD_ARTIFACT
    # The same directory, and the same exclusion: what the upload skips, the check may skip.
    assert refuse["env"] == {"DIR": "${{ inputs.path }}"} and "${{" not in refuse["run"]
    assert upload["with"]["path"].splitlines() == ["${{ inputs.path }}",
                                                   "!${{ inputs.path }}/kernels"]
    assert "-path ./kernels -prune" in refuse["run"] and "if" not in refuse
    # Every other upload: what the job's rtgate wrote.
    others = {(path.name, step["with"]["path"]) for path in FILES if path != KEEP_RESULTS
              for step in steps(load(path)) if step.get("uses", "").startswith("actions/upload-")}
    assert others == set(UPLOADS_WRITTEN_BY_RTGATE)
