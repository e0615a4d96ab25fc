"""latency-bisect.yml: a pull request's series bisected on a lab board, re-decided by the
publisher (issue 13, under issue 10's rules).

The rules every workflow follows (pins, permissions, no interpolation, lab guards) are
tests/unit/test_workflows.py's; here, what this one adds: the default branch only, the PR's series
as data and its builds in the untrusted cache, and the publisher's own decision — its shell steps
run on a real bisect's rounds (tests/data/bisect/replay/) as the runner runs them."""

from __future__ import annotations

from pathlib import Path

from test_workflows import evaluate, granted, head_inputs_script, load, runs_on

ROOT = Path(__file__).resolve().parents[2]
BISECT = ROOT / ".github" / "workflows" / "latency-bisect.yml"


def job(name: str) -> dict:
    return load(BISECT)["jobs"][name]


def script(job_name: str, step_name: str) -> str:
    (found,) = [s for s in job(job_name)["steps"] if s.get("name") == step_name]
    return found["run"]


def test_only_a_dispatch_of_the_default_branch_runs_it() -> None:
    workflow = load(BISECT)
    assert set(workflow["on"]) == {"workflow_dispatch"}
    condition = job("plan")["if"]
    repo = {"repository": {"default_branch": "main"}}
    assert evaluate(condition, {"github": {"ref_name": "main", "event": repo}})
    assert not evaluate(condition, {"github": {"ref_name": "feature", "event": repo}})
    # Nothing runs without the plan: the lab job needs it, the publisher needs it to succeed.
    assert job("bisect")["needs"] == "plan"
    assert "needs.plan.result == 'success'" in job("publish")["if"]
    for name, j in workflow["jobs"].items():
        for step in j["steps"]:
            assert "ref" not in step.get("with", {}), f"{name} checks out another ref"


def test_the_pull_request_is_read_as_data_and_built_untrusted() -> None:
    plan = job("plan")
    assert runs_on(plan) == ["ubuntu-latest"]
    uses = [s.get("uses", "") for s in plan["steps"]]
    assert "./.github/actions/head-kernel-inputs" in uses
    assert ".github/rtgate kernel inputs --head" in head_inputs_script()
    assert next(s for s in plan["steps"] if "checkout" in s.get("uses", ""))["with"][
        "fetch-depth"] == 0
    lab = job("bisect")
    assert [s.get("uses", "").split("@")[0] for s in lab["steps"]] == [
        "actions/checkout", "./.github/actions/preflight", "./.github/actions/kernel-inputs",
        "", "./.github/actions/keep-results"]
    measure = script("bisect", "Bisect the pull request's series")
    assert 'export RTGATE_CACHE="${RTGATE_CACHE_PR:?' in measure
    assert "export RTGATE_CACHE_TRUST=untrusted" in measure
    assert '.github/rtgate bisect "${args[@]}" --runtime docker \\\n' \
        '  --cache-trust untrusted --out "$out"' in measure
    assert "RTGATE_CACHE_MAIN" not in measure and "--cache-trust trusted" not in measure
    # The rounds alone go to the publisher.
    keep = lab["steps"][-1]
    assert keep["with"]["path"] == "${{ steps.bisect.outputs.dir }}/steps"
    assert granted(lab["permissions"]) == {"contents": "read"}


def test_only_the_github_hosted_publisher_may_comment() -> None:
    writers = [n for n, j in load(BISECT)["jobs"].items()
               if "write" in granted(j.get("permissions")).values()]
    assert writers == ["publish"]
    publish = job("publish")
    assert runs_on(publish) == ["ubuntu-latest"]
    assert granted(publish["permissions"]) == {"contents": "read", "pull-requests": "write"}
    install = script("publish", "rtgate, installed from the default branch")
    assert '-m pip install --quiet .' in install and "-e" not in install.split()
