"""A usercustomize.py in the runner user's site-packages no longer reaches the gate (issue 10).

Python imports ``usercustomize`` from the user's site-packages at start-up whenever user sites
are enabled: a job that planted one there ran code in every later job, main's gate included. The
lab runs rtgate with ``-I`` (tests/unit/test_workflows.py checks every call). Here the gate's own
pipeline step runs on the `local` board with an interpreter whose user site is live (a venv with
system site-packages, as a controller's python3 is), next to the same interpreter run the old way.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from steps import run

ROOT = Path(__file__).resolve().parents[2]
GATE = ROOT / ".github" / "workflows" / "latency-gate.yml"
pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An interpreter with rtgate's dependencies whose user site-packages is enabled."""
    venv = tmp_path_factory.mktemp("controller") / "venv"
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
                    "--disable-pip-version-check", *deps], check=True, timeout=600)
    return venv / "bin" / "python"


def plant(python: Path, home: Path, marker: Path) -> None:
    env = {**os.environ, "HOME": str(home)}
    site = subprocess.run([str(python), "-c", "import site; print(site.getusersitepackages())"],
                          env=env, capture_output=True, text=True, check=True).stdout.strip()
    Path(site).mkdir(parents=True)
    (Path(site) / "usercustomize.py").write_text(
        f"open({str(marker)!r}, 'a').write('planted code ran\\n')\n")


def test_a_planted_usercustomize_does_not_reach_the_gate(python: Path, tmp_path: Path) -> None:
    home, marker = tmp_path / "home", tmp_path / "marker"
    plant(python, home, marker)
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "RTGATE_PYTHON": str(python),
           "BOARD": "local", "SCENARIOS": "idle", "DURATION": "2s", "TRUST": "main",
           "KERNELS_FROM": "controller", "RTGATE_ROOT": str(ROOT),
           "GATE_DURATIONS": '{"local": "60s"}', "RUNNER_TEMP": str(tmp_path),
           "RTGATE_RESULTS_DIR": str(tmp_path / "results"), "GITHUB_RUN_ID": "1",
           "GITHUB_RUN_ATTEMPT": "1", "GITHUB_OUTPUT": str(tmp_path / "output")}

    # The control: the way the gate used to call rtgate runs the planted code.
    old = subprocess.run([str(python), "-m", "rtgate", "--version"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=60)
    assert old.returncode == 0 and marker.exists(), "the planted usercustomize is not live"
    marker.unlink()

    proc = run(GATE, "Build, boot, measure, restore, check", job="gate", cwd=ROOT, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    outputs = dict(line.split("=", 1) for line in (tmp_path / "output").read_text().split())
    assert outputs["rc"] in ("0", "1"), proc.stderr[-3000:]
    assert (Path(outputs["dir"]) / "running" / "idle" / "result.json").is_file()
    assert not marker.exists(), "the planted usercustomize ran inside the gate"


def test_a_results_directory_that_exists_is_never_measured_into(python: Path,
                                                               tmp_path: Path) -> None:
    planted = tmp_path / "results" / "1-1" / "gate-local"
    planted.mkdir(parents=True)
    (planted / "junit.xml").write_text("planted")
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "RTGATE_PYTHON": str(python),
           "BOARD": "local", "SCENARIOS": "idle", "DURATION": "2s", "TRUST": "main",
           "KERNELS_FROM": "controller", "RTGATE_ROOT": str(ROOT), "GATE_DURATIONS": "{}",
           "RUNNER_TEMP": str(tmp_path), "RTGATE_RESULTS_DIR": str(tmp_path / "results"),
           "GITHUB_RUN_ID": "1", "GITHUB_RUN_ATTEMPT": "1",
           "GITHUB_OUTPUT": str(tmp_path / "output")}
    proc = run(GATE, "Build, boot, measure, restore, check", job="gate", cwd=ROOT, env=env)
    assert proc.returncode != 0 and "File exists" in proc.stderr
    assert (planted / "junit.xml").read_text() == "planted"
