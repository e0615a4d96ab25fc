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

ROOT = Path(__file__).resolve().parent.parent
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
    return {"github": {"event_name": "pull_request", "repository": "rtgate/rtgate",
                       "event": {"pull_request": {"head": {"repo": {"full_name": head_repo}}}}}}


def test_evaluator_follows_github_semantics() -> None:
    ctx = {"github": {"event_name": "push", "a": "x"}}
    assert evaluate("${{ github.event_name == 'PUSH' && 'yes' || 'no' }}", ctx) == "yes"
    assert evaluate("${{ !(github.a != 'x') && github.missing || 'fallback' }}", ctx) == "fallback"
    assert evaluate("${{ 'it''s' }}", ctx) == "it's"


# --- the rules -------------------------------------------------------------------------------


def test_the_workflows_exist() -> None:
    names = {p.name for p in WORKFLOWS}
    assert {"ci.yml", "kernels.yml", "latency-gate.yml", "pages.yml",
            "latency-report.yml"} <= names


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
    # A fork's token never has checks/pull-requests write: such jobs belong in workflow_run.
    workflow = load(path)
    for name, job in jobs(workflow):
        writes = {s for s, level in granted(job.get("permissions")).items() if level == "write"}
        if writes & PUBLISHING_PERMISSIONS:
            assert triggers(workflow) == {"workflow_run"}, f"{path.name}: job {name}"


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


def test_only_the_gate_runs_on_lab_runners() -> None:
    assert [(w, j) for w, j, _ in self_hosted_jobs()] == [("latency-gate.yml", "gate")]


@pytest.mark.parametrize("workflow,name,job", self_hosted_jobs(),
                         ids=[f"{w}:{j}" for w, j, _ in self_hosted_jobs()])
def test_lab_jobs_are_guarded(workflow: str, name: str, job: dict[str, Any]) -> None:
    labels = runs_on(job)
    assert labels[:3] == ["self-hosted", "linux", "rtgate-lab"]
    assert "matrix.board" in labels[3]

    # A fork's pull request reaches the runner only through a protected environment.
    environment = job["environment"]
    expression = environment["name"] if isinstance(environment, dict) else environment
    assert evaluate(expression, pull_request_context("someone/rtgate")) in PROTECTED_ENVIRONMENTS
    assert evaluate(expression, pull_request_context("rtgate/rtgate")) == "lab-trusted"

    # One job per board at a time, never cancelled half-way through a boot.
    concurrency = job["concurrency"]
    assert "${{ matrix.board }}" in concurrency["group"]
    assert concurrency["cancel-in-progress"] is False
    assert isinstance(job["timeout-minutes"], int)

    # Lab jobs run the code under review: they get no secrets and a read-only token.
    assert "secrets." not in yaml.safe_dump(job)
    assert all(level in ("read", "none") for level in granted(job["permissions"]).values())


def test_the_gate_is_dispatchable_per_board_and_runs_after_the_kernels() -> None:
    gate = load(GITHUB / "workflows" / "latency-gate.yml")
    inputs = gate["on"]["workflow_dispatch"]["inputs"]
    assert {"board", "scenarios", "duration"} <= set(inputs)
    boards = {p.stem for p in (ROOT / "bench" / "boards").glob("*.yml")}
    assert set(inputs["board"]["options"]) <= boards
    assert "kernels" in gate["jobs"]["gate"]["needs"]
    assert gate["jobs"]["kernels"]["uses"] == "./.github/workflows/kernels.yml"


def test_runner_labels_are_declared_for_actionlint() -> None:
    declared = set(yaml.safe_load((GITHUB / "actionlint.yaml").read_text())
                   ["self-hosted-runner"]["labels"])
    gate = load(GITHUB / "workflows" / "latency-gate.yml")
    boards = set(gate["on"]["workflow_dispatch"]["inputs"]["board"]["options"])
    assert {"rtgate-lab"} | boards <= declared


def test_zizmor_ignores_say_why() -> None:
    for path in FILES:
        for line in path.read_text().splitlines():
            if "zizmor: ignore[" in line:
                reason = line.split("zizmor: ignore[", 1)[1].split("]", 1)[1].strip()
                assert len(reason) > 10, f"{path.name}: unexplained ignore: {line.strip()}"
