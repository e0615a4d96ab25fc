"""The publisher under act (tests/actlab.py) on a gate's real output: a pull request's check
conclusion computed by latency-report.yml's publish job from the artifacts, as the lab e2e's
last step does with a stand-in Pi's results (tests/e2e/test_lab_ansible.py). Here the gate's
output is a real measurement of this machine (`rtgate pipeline --board local`, a few seconds),
uploaded and downloaded by the artifact actions' stand-ins (tests/actstandins/), which keep the
actions' documented path rules: a lone artifact matched by a pattern is extracted into the
path itself (download-artifact v5+), which once made every one-board gate an infrastructure
failure in the publisher.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from actlab import (
    Published,
    default_branch,
    keep_context,
    keep_results,
    plan,
    publish,
    pull_request,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

def kernel_change(repo: Path) -> None:
    with (repo / "kernel" / "configs" / "rt.config").open("a") as rt:
        rt.write("CONFIG_HZ_1000=y\n")


def docs_change(repo: Path) -> None:
    (repo / "README.md").write_text("# a docs-only change\n")


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, str]]:
    """The default branch's checkout with two pull requests on its origin, and a measured gate
    output of the `local` board laid out as the gate job writes it (RESULTS/RUN-ATTEMPT/
    gate-BOARD)."""
    tmp = tmp_path_factory.mktemp("actpublish")
    main = default_branch(tmp / "repo")
    heads = {"kernel": pull_request(main, 7, kernel_change, "rt: 1000 Hz"),
             "docs": pull_request(main, 8, docs_change, "README: shorter")}
    out = tmp / "results" / "41-1" / "gate-local"
    proc = subprocess.run([sys.executable, "-m", "rtgate", "pipeline", "--board", "local",
                           "--scenarios", "idle", "--duration", "3s", "--out", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert (out / "running" / "idle" / "result.json").is_file(), proc.stdout + proc.stderr
    return main, out, heads


def gate_run(tmp: Path, main: Path, out: Path | None, run_id: int, head: str,
             number: int) -> tuple[Path, dict[str, Any]]:
    """A pull request's gate run on the `local` board: the plan job's context, the lab job's
    artifact (when it measured)."""
    store = tmp / "store"
    context = plan(main, tmp, head_sha=head, pull_request=number, lab_boards=["local"],
                   scenarios="idle")
    keep_context(store, run_id, tmp)
    if out is not None:
        keep_results(store, run_id, "gate-local", out)
    return store, context


def published(tmp: Path, main: Path, store: Path, run_id: int, head: str) -> Published:
    result = publish(main, store, gate_run=run_id, event="workflow_run", head_sha=head,
                     tmp=tmp / f"act-{run_id}")
    assert result.returncode == 0, result.log[-6000:]
    return result


def test_a_measured_pull_request_gets_a_green_check(lab: tuple[Path, Path, dict[str, str]],
                                                   tmp_path: Path) -> None:
    main, out, heads = lab
    store, context = gate_run(tmp_path, main, out, 100, heads["kernel"], 7)
    # The plan job's: a pull request's gate of the kind, measured, no A/B plan for `local`.
    assert context["boards"] == ["local"] and context["ab"] == {}, context
    assert context["changed_inputs"] == [] and "kernel_inputs_changed" not in context, context
    result = published(tmp_path, main, store, 100, heads["kernel"])
    assert result.outcome is not None, result.log[-6000:]
    assert result.outcome["outcome"] == "pass", result.comment
    # Judged by board kind from the one artifact, which landed in gate/gate-local/.
    assert result.outcome["boards"] == {"local": "pass"}, result.outcome
    assert result.conclusion == "success", result.log[-6000:]


def test_a_pull_request_that_changes_no_kernel_input_is_green_unmeasured(
        lab: tuple[Path, Path, dict[str, str]], tmp_path: Path) -> None:
    main, _, heads = lab
    store, context = gate_run(tmp_path, main, None, 200, heads["docs"], 8)
    assert context["kernel_inputs_changed"] is False, context
    result = published(tmp_path, main, store, 200, heads["docs"])
    assert result.outcome is not None and result.outcome["outcome"] == "unchanged", result.log
    assert result.conclusion == "success"


def test_a_result_over_its_budget_is_red_whatever_the_artifact_says(
        lab: tuple[Path, Path, dict[str, str]], tmp_path: Path) -> None:
    """A planted failing result (its max over the local budget's 100 ms) beside the gate's own
    words that all is well (outcome.json, junit.xml): the publisher re-judges the result."""
    main, measured, heads = lab
    out = tmp_path / "gate-local"
    shutil.copytree(measured, out)
    result_json = out / "running" / "idle" / "result.json"
    doc = json.loads(result_json.read_text())
    doc["totals"]["max_us"] = 250_000.0
    result_json.write_text(json.dumps(doc))
    (out / "outcome.json").write_text(json.dumps({"outcome": "pass", "exit": 0}))
    store, _ = gate_run(tmp_path, main, out, 300, heads["kernel"], 7)
    result = published(tmp_path, main, store, 300, heads["kernel"])
    assert result.outcome is not None and result.outcome["outcome"] == "regression", result.log
    assert result.conclusion == "failure"


def test_a_result_claiming_another_board_is_not_a_pass(lab: tuple[Path, Path, dict[str, str]],
                                                       tmp_path: Path) -> None:
    """An untrusted artifact whose result names a board other than the one its place says:
    refused (misplaced), so no green check rests on it."""
    main, measured, heads = lab
    out = tmp_path / "gate-local"
    shutil.copytree(measured, out)
    result_json = out / "running" / "idle" / "result.json"
    doc = json.loads(result_json.read_text())
    doc["board"]["name"] = "qemu-arm64"
    result_json.write_text(json.dumps(doc))
    store, _ = gate_run(tmp_path, main, out, 400, heads["kernel"], 7)
    result = published(tmp_path, main, store, 400, heads["kernel"])
    assert result.outcome is not None and result.outcome["outcome"] != "pass", result.log
    assert result.conclusion == "failure"
