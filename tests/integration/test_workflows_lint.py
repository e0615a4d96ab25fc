"""actionlint and zizmor on .github/: zero findings (issue 6).

Both are real programs installed by `scripts/deps.sh ci` (actionlint built with Go, zizmor from
PyPI via the test extras); `make test` runs that first. A missing tool fails: a lint that did not
run must not look like a lint that passed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]


def tool(name: str) -> str:
    # zizmor is a test extra: it sits beside the interpreter in the project's venv, which
    # `make test` runs without putting on PATH.
    path = shutil.which(name, path=os.pathsep.join([str(Path(sys.executable).parent),
                                                    os.environ.get("PATH", "")]))
    if path is None:
        pytest.fail(f"{name} is not installed: run scripts/deps.sh ci (make test does)")
    return path


def test_actionlint_finds_nothing() -> None:
    # actionlint reads .github/actionlint.yaml (the lab's runner labels) from the repository
    # root and runs shellcheck on every run: script when shellcheck is installed (deps ci).
    assert shutil.which("shellcheck"), "shellcheck is not installed: run scripts/deps.sh ci"
    proc = subprocess.run([tool("actionlint"), "-no-color"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("persona", [[], ["--persona=auditor"]])
def test_zizmor_finds_nothing(persona: list[str]) -> None:
    # Offline: the audits that query GitHub (e.g. impostor commits) cannot run here; the pins
    # themselves were resolved from the actions' release tags (tests/unit/test_workflows.py checks
    # their form). The auditor persona also reports what the default one leaves out as likely
    # noise: each finding it has is fixed or ignored in place with its reason.
    proc = subprocess.run([tool("zizmor"), "--offline", "--no-progress", "--format", "json",
                           *persona, ".github"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    findings = json.loads(proc.stdout or "null")
    assert findings == [], json.dumps(findings, indent=1)[:4000]
    assert proc.returncode == 0, proc.stderr


ACTION_STEPS = [(path.parent.name, step["name"])
                for path in sorted((ROOT / ".github" / "actions").glob("*/action.yml"))
                for step in yaml.safe_load(path.read_text())["runs"].get("steps", [])
                if "run" in step]


@pytest.mark.parametrize(("action", "step"), ACTION_STEPS)
def test_shellcheck_finds_nothing_in_the_composite_actions(action: str, step: str) -> None:
    # actionlint lints the workflows' run: scripts only, never a composite action's.
    data = yaml.safe_load((ROOT / ".github" / "actions" / action / "action.yml").read_text())
    (found,) = [s for s in data["runs"]["steps"] if s.get("name") == step]
    assert found["shell"] == "bash", (action, step)
    proc = subprocess.run([tool("shellcheck"), "--shell=bash", "-"], input=found["run"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
