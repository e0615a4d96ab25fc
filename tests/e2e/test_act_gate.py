"""latency-gate.yml end to end under act, on this machine, against the virtual Pi (issue 6).

act (nektos/act, installed by `scripts/deps.sh ci`) runs the workflow in host mode: every runner
label maps to `-self-hosted`, so the jobs run here as they would on a lab controller. What act
cannot do here, and how the workflow copes (docs/lab.md, "Running the gate under act"):
- it cannot fetch actions from GitHub: act skips actions/checkout natively (it copies the work
  tree instead), and the artifact steps sit in local composite actions that are skipped when
  env.ACT is set (act clones a job's remote actions eagerly, whatever their `if:`);
- kernels come from the controller's own build (`kernels: controller`), not from kernels.yml,
  which needs buildx and the GHA cache;
- act ignores permissions, environment, concurrency and timeout-minutes:
  tests/unit/test_workflows.py checks those statically.
Everything the gate does on the board — build, boot, measure, restore, check — runs for real.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from junitparser import JUnitXml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "latency-gate.yml"


@dataclass(frozen=True)
class Case:
    board: str
    flavors: tuple[str, ...]
    scenario: str
    duration: str


# The virtual Pi is the end-to-end case (two kernels built, booted under QEMU). The local
# board measures this machine's kernel in seconds: the same workflow path, fast feedback.
CASES = [
    # idle: under all-in, TCG on a 2-core host shared with other jobs can overrun the guest's
    # run timeout (an infra result, correctly, but no verdict to check the workflow against).
    pytest.param(Case("qemu-arm64", ("stock", "rt"), "idle", "10s"), id="qemu-arm64",
                 marks=[pytest.mark.kernel, pytest.mark.timeout(5400)]),
    pytest.param(Case("local", ("stock",), "idle", "3s"), id="local",
                 marks=[pytest.mark.timeout(600)]),
]


def act_labels() -> list[str]:
    """Every runs-on label of the gate workflow, each mapped to the host."""
    declared = yaml.safe_load((ROOT / ".github" / "actionlint.yaml").read_text())
    labels = ["ubuntu-latest", "self-hosted", "linux", *declared["self-hosted-runner"]["labels"]]
    return [arg for label in labels for arg in ("-P", f"{label}=-self-hosted")]


@pytest.fixture(scope="module", params=CASES)
def gate_run(request: pytest.FixtureRequest,
             tmp_path_factory: pytest.TempPathFactory) -> tuple[Case, int, str, Path]:
    case: Case = request.param
    act = shutil.which("act")
    if act is None:
        pytest.fail("act is not installed: run scripts/deps.sh ci (make test does)")
    tmp = tmp_path_factory.mktemp("act")
    event = tmp / "event.json"
    event.write_text(json.dumps({"inputs": {
        "board": case.board, "scenarios": case.scenario, "duration": case.duration,
        "kernels": "controller"}}))
    results = tmp / "results"
    # The steps call `python3 -m rtgate`: make that the interpreter running this suite.
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    proc = subprocess.run(
        [act, "workflow_dispatch", "-W", str(WORKFLOW), "-e", str(event), *act_labels(),
         "--env", f"RTGATE_RESULTS_DIR={results}",
         # The controller's interpreter (docs/lab.md); rtgate runs from the checkout with -I.
         "--env", f"RTGATE_PYTHON={sys.executable}",
         "--action-cache-path", str(tmp / "act-cache"),
         # No network for actions: a step that would fetch one must fail here, loudly.
         "--action-offline-mode"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=5400)
    log = proc.stdout + proc.stderr
    (tmp / "act.log").write_text(log)
    outs = sorted(results.glob(f"*/gate-{case.board}"))
    assert len(outs) == 1, f"the gate wrote no output under {results}:\n{log[-6000:]}"
    return case, proc.returncode, log, outs[0]


def outcome(out: Path) -> str:
    """The Verdict step's own judgement, from the results (what the publisher posts too)."""
    return json.loads((out / "outcome.json").read_text())["outcome"]


@pytest.mark.integration
def test_job_outcome_follows_the_verdict(gate_run: tuple[Case, int, str, Path]) -> None:
    case, returncode, log, out = gate_run
    kind = outcome(out)
    expected = {"pass": f"Latency verdict on {case.board}: every budget met",
                "regression": f"Latency regression on {case.board}",
                "incomplete": f"Not decided from the data on {case.board}",
                "input": f"Input error on {case.board}",
                "infrastructure": f"Infrastructure failure on {case.board}"}[kind]
    assert expected in log, log[-6000:]
    assert (returncode == 0) == (kind == "pass"), f"act exited {returncode} for {kind}"


@pytest.mark.integration
def test_gate_reaches_a_latency_verdict(gate_run: tuple[Case, int, str, Path]) -> None:
    _, _, log, out = gate_run
    # pass or regression is a verdict; anything else means no measurement was judged.
    assert outcome(out) in ("pass", "regression"), log[-6000:]


@pytest.mark.integration
def test_gate_writes_junit_for_every_flavor(gate_run: tuple[Case, int, str, Path]) -> None:
    case, _, log, out = gate_run
    junit = out / "junit.xml"
    assert junit.is_file(), log[-6000:]
    cases = [tc for suite in JUnitXml.fromfile(str(junit)) for tc in suite]
    names = " ".join(f"{tc.classname} {tc.name}" for tc in cases)
    for flavor in case.flavors:
        assert flavor in names, f"no JUnit case for {flavor}: {names!r}"
    # One result per measured kernel: OUT/<flavor or label>/<scenario>/result.json.
    results = [json.loads(p.read_text()) for p in out.glob(f"*/{case.scenario}/result.json")]
    assert len(results) == len(case.flavors)
    for result in results:
        assert result["board"]["name"] == case.board
        if case.board == "qemu-arm64":
            assert result["board"]["virtual"] is True


@pytest.mark.integration
def test_gate_writes_the_markdown_step_summary(gate_run: tuple[Case, int, str, Path]) -> None:
    case, _, log, out = gate_run
    summary = (out / "verdict.md").read_text()
    assert summary.strip(), "verdict.md is empty"
    # act prints what a step appended to $GITHUB_STEP_SUMMARY as "Summary - <content>".
    first = next(line for line in summary.splitlines() if line.strip())
    assert f"Summary - {first}" in log, \
        f"the job summary did not reach $GITHUB_STEP_SUMMARY: {first!r}\n{log[-4000:]}"


@pytest.mark.integration
@pytest.mark.parametrize(("board", "lab", "lava"), [
    ("lava-qemu", [], [{"board": "lava-qemu", "kernel_target": "qemu-arm64"}]),
    ("qemu-arm64", [{"board": "qemu-arm64", "kind": "qemu-arm64", "label": "board-qemu-arm64"}],
     [])])
def test_the_plan_job_sends_a_lava_board_to_the_hosted_gate(
        tmp_path: Path, board: str, lab: list[dict[str, str]],
        lava: list[dict[str, str]]) -> None:
    """A dispatch's plan job under act (about a second): a `driver: lava` board goes to the
    GitHub-hosted gate-lava matrix with the kernel it boots, a lab board to its controller's
    gate matrix. The jobs themselves are not run here: gate-lava's Debian container and
    kernels.yml's buildx need registries this machine cannot reach (tests/unit/test_workflows.py
    checks them statically; tests/e2e/test_lava.py runs the pipeline through a real LAVA lab)."""
    act = shutil.which("act")
    if act is None:
        pytest.fail("act is not installed: run scripts/deps.sh ci (make test does)")
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"inputs": {"board": board, "scenarios": "", "duration": "",
                                            "kernels": "artifacts"}}))
    proc = subprocess.run(
        [act, "workflow_dispatch", "-W", str(WORKFLOW), "-j", "plan", "-e", str(event),
         "--env", f"RTGATE_PYTHON={sys.executable}", *act_labels(),
         "--action-cache-path", str(tmp_path / "act-cache"),
         "--action-offline-mode"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-4000:]
    outputs = dict(re.findall(r"::set-output:: (\w+)=(.*)$", log, re.MULTILINE))
    assert json.loads(outputs["boards"]) == lab
    assert json.loads(outputs["lava"]) == lava
    assert json.loads(outputs["kernel_targets"]) == ["qemu-arm64"]
    assert outputs["trust"] == "main"
