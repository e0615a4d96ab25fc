"""rtgate works as installed (issue 10): a plain, non-editable `pip install .` into a fresh venv
runs the publisher's and the Pages job's shell steps on a recorded gate artifact.

The steps are latency-report.yml's and pages.yml's own `run:` blocks (tests/steps.py), run with
the environment GitHub would give them; act cannot run these jobs here, because the remote actions
around the steps (checkout, download-artifact, setup-python) need GitHub. The workspace is a copy
of this tree's files, so the install writes no build directory into the shared tree.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from steps import github_env, run

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = ROOT / ".github" / "workflows"
RECORDED = ROOT / "tests" / "data" / "gate" / "gate-local"
pytestmark = [pytest.mark.integration, pytest.mark.timeout(1200)]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A checkout of the default branch with the gate's artifacts downloaded into it, and the
    environment of the publisher's job."""
    ws = tmp_path_factory.mktemp("workspace")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("rtgate", "reports", "bench", "kernel", ".github/rtgate"):
        shutil.copytree(ROOT / name, ws / name, ignore=ignore)
    for name in ("pyproject.toml", "README.md", "thresholds.yml"):
        shutil.copy2(ROOT / name, ws / name)
    shutil.copytree(RECORDED, ws / "gate" / "gate-local")
    (ws / "context").mkdir()
    (ws / "context" / "context.json").write_text(json.dumps({
        "event": "push", "head_sha": "b" * 40, "boards": ["local"], "scenarios": ["idle"]}))
    temp = tmp_path_factory.mktemp("runner-temp")
    bin_dir = temp / "bin"
    bin_dir.mkdir()
    # setup-python puts `python` on PATH; here it is the interpreter running the suite.
    (bin_dir / "python").symlink_to(sys.executable)
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "HOME": str(temp),
           "RUNNER_TEMP": str(temp), "GITHUB_STEP_SUMMARY": str(temp / "summary.md"),
           "GITHUB_OUTPUT": str(temp / "output"), "GITHUB_ENV": str(temp / "env"),
           "GITHUB_SERVER_URL": "https://github.com",
           "GITHUB_REPOSITORY": "rtgate/rtgate", "GATE_RUN_ID": "42",
           "RTGATE_ROOT": str(ws), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    proc = run(WORKFLOWS / "latency-report.yml", "rtgate, installed from the default branch",
               cwd=ws, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # The later steps run rtgate with the interpreter the install step named.
    added = github_env(temp / "env")
    assert added == {"RTGATE_PYTHON": venv_python(env)}, added
    return ws, env | added


def venv_python(env: dict[str, str]) -> str:
    return str(Path(env["RUNNER_TEMP"]) / "venv" / "bin" / "python")


def test_the_install_is_a_plain_one(workspace: tuple[Path, dict[str, str]]) -> None:
    ws, env = workspace
    where = subprocess.run([venv_python(env), "-I", "-c",
                            "import rtgate.paths as p; print(p.PACKAGE); print(p.REPORTS)"],
                           cwd=ws, capture_output=True, text=True, check=True).stdout.split()
    assert all("site-packages" in w for w in where), where
    assert (Path(where[1]) / "longterm.gp").is_file()


def test_the_pages_job_builds_the_site_then_the_publisher_posts_real_verdicts(
        workspace: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    ws, env = workspace
    # The first publish: the repository (a local bare one here) has no results branch yet.
    server = tmp_path / "server"
    subprocess.run(["git", "init", "-q", "--bare", str(server / "rtgate" / "rtgate")],
                   check=True)
    checkout = run(WORKFLOWS / "pages.yml", "Check out the history (results branch)", cwd=ws,
                   env=env | {"GITHUB_SERVER_URL": server.as_uri(), "GITHUB_TOKEN": ""})
    assert checkout.returncode == 0, checkout.stdout + checkout.stderr
    pages = run(WORKFLOWS / "pages.yml", "Merge into the history and render the site",
                cwd=ws, env=env | {"RUN_ID": "41", "HEAD_SHA": "c" * 40})  # the gate run's
    assert pages.returncode == 0, pages.stdout + pages.stderr
    # The history records the run that measured, not the publishing job.
    (entry,) = [json.loads(line) for line in
                (ws / "history" / "index.jsonl").read_text().splitlines()]
    assert "actions/runs/41" in json.dumps(entry) and "c" * 40 in json.dumps(entry)
    assert entry["publication"]["board"] == "local"  # from the artifact main's gate named
    index = (ws / "site" / "index.html").read_text()
    assert "local" in index and "no budget" not in index
    assert list((ws / "site").rglob("*.svg")), "no plot was drawn"

    publish = run(WORKFLOWS / "latency-report.yml", "Judge the results again", cwd=ws,
                  env=env | {"HAVE_BASELINE": "true"}, job="publish")
    assert publish.returncode == 0, publish.stdout + publish.stderr
    comment = (ws / "comment.md").read_text()
    assert "✅ latency verdict: every budget met" in comment
    assert "| `local (virtual)` | `stock` | `idle` | max_us |" in comment
    assert "no budget" not in comment
    # The baseline the Pages step just stored is compared with.
    assert "Against the latest main results" in comment and "→" in comment
    assert json.loads((ws / "outcome.json").read_text())["outcome"] == "pass"
    assert "every budget met" in Path(env["GITHUB_STEP_SUMMARY"]).read_text()


def test_outside_a_checkout_the_missing_budgets_are_named(
        workspace: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    _, env = workspace
    result = RECORDED / "running" / "idle" / "result.json"
    bare = {k: v for k, v in env.items() if k != "RTGATE_ROOT"}
    proc = subprocess.run([venv_python(env), "-I", "-m", "rtgate", "check", str(result),
                           "--junit", str(tmp_path / "j.xml")],
                          cwd=tmp_path, env=bare, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "thresholds.yml: not found: rtgate reads thresholds.yml from the working directory" \
        in proc.stderr and "RTGATE_ROOT" in proc.stderr
    # A site may show unjudged runs, but says so instead of a page of silent "no budget" rows.
    site = subprocess.run([venv_python(env), "-I", "-m", "rtgate", "report", str(result),
                           "--out", str(tmp_path / "site")],
                          cwd=tmp_path, env=bare, capture_output=True, text=True, timeout=120)
    assert site.returncode == 0, site.stderr
    assert "no run is judged against a budget" in site.stderr and "RTGATE_ROOT" in site.stderr
