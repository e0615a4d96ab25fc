"""The lab's rules for the workflows that come from outside systems' documented behaviour
(issue 33): artifacts on re-runs, concurrency between the gate and the nightly that calls it."""

from __future__ import annotations

from typing import Any

import pytest
from test_workflows import FILES, GATE, GITHUB, load, steps

UPLOAD = "actions/upload-artifact@"


def uploads() -> list[tuple[str, dict[str, Any]]]:
    return [(f"{path.parent.name}/{path.name}", step) for path in FILES
            for step in steps(load(path)) if str(step.get("uses", "")).startswith(UPLOAD)]


@pytest.mark.parametrize("where, step", uploads(), ids=[w for w, _ in uploads()])
def test_a_re_run_replaces_its_artifacts(where: str, step: dict[str, Any]) -> None:
    """actions/upload-artifact's README (v4 and later, read at 0387148d): "Due to how Artifacts
    are created in this new version, it is no longer possible to upload to the same named
    Artifact multiple times", and for `overwrite`: "If true, an artifact with a matching name
    will be deleted before a new one is uploaded. If false, the action will fail if an artifact
    for the given name already exists" (default false). A re-run attempt is the same workflow
    run, so without it the documented "re-run the failed jobs" fails at its upload and the
    check keeps the failed attempt's artifact."""
    assert step["with"].get("overwrite") is True, where


def test_every_upload_is_checked() -> None:
    # keep-results (gate-BOARD, bisect-BOARD, run-context), the kernels, the published report.
    assert {w for w, _ in uploads()} >= {"keep-results/action.yml", "workflows/kernels.yml",
                                         "workflows/latency-report.yml"}


def test_the_nightlys_gate_and_a_dispatched_gate_wait_in_different_groups() -> None:
    """A called workflow's `github` context is its caller's (GitHub docs, "Reusing workflows":
    "the github context is always associated with the caller workflow"), so pages.yml's
    nightly and a dispatch of latency-gate.yml both evaluate the gate's run-level group with
    event_name workflow_dispatch on refs/heads/main. GitHub keeps one pending run per group:
    without the workflow's name in it, one dispatch replaced the other while it waited."""
    group = load(GATE)["concurrency"]["group"]
    assert group.startswith("${{ github.workflow }}-"), group
    pages = load(GITHUB / "workflows" / "pages.yml")
    assert pages["name"] != load(GATE)["name"]
    assert pages["jobs"]["nightly"]["uses"] == "./.github/workflows/latency-gate.yml"


def test_no_lab_runner_job_is_named_by_a_fixed_board_list() -> None:
    """Any board file a lab adds (rpi5-b) is dispatchable and bisectable: no `choice` input
    lists boards (the plan jobs check the text against bench/boards)."""
    for name in ("latency-gate.yml", "latency-bisect.yml"):
        board = load(GITHUB / "workflows" / name)["on"]["workflow_dispatch"]["inputs"]["board"]
        assert board["type"] == "string" and "options" not in board, name



def test_a_default_source_bump_runs_mains_gate() -> None:
    """kernel/targets/<target>.yml's default_source is the base every A and main's published
    numbers build from; main's push of it must record the new base on the controllers (the gate
    job's push path), or pull requests keep building A from the old recorded one."""
    from test_workflows import ROOT

    paths = load(GATE)["on"]["push"]["paths"]
    assert "kernel/targets/**" in paths
    assert list((ROOT / "kernel" / "targets").glob("*.yml")), "no kernel target to bump"


def test_the_guide_says_what_the_lab_environment_protects_on_each_plan() -> None:
    """Fork gates and every bisect wait for `lab`'s required reviewers. GitHub docs, "Managing
    environments for deployment": "If you are on a GitHub Free, GitHub Pro, or GitHub Team plan,
    other deployment protection rules, such as a wait timer or required reviewers, are only
    available for public repositories" — in a private repository on those plans `lab` gates
    nothing, so the guide must say so and give the alternative."""
    from test_workflows import ROOT

    uses = {name: [job.get("environment") for _, job in load(GITHUB / "workflows" / name)
                   ["jobs"].items()] for name in ("latency-gate.yml", "latency-bisect.yml")}
    assert "lab" in uses["latency-bisect.yml"]
    assert any("'lab'" in str(e) for e in uses["latency-gate.yml"])
    settings = (ROOT / "docs" / "lab.md").read_text().split("## Repository settings", 1)[1]
    assert "only available for public repositories" in " ".join(settings.split())
    assert "GitHub Enterprise" in settings and "Run workflows from fork pull requests" in settings
