"""Run a workflow's `run:` step the way GitHub's runner does, with the values its `${{ }}`
expressions would have given it passed in explicitly (tests that cannot use act: remote actions
around these steps need GitHub)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent


def step(file: Path, name: str, job: str | None = None) -> dict[str, Any]:
    data = yaml.safe_load(file.read_text())
    groups = [data["runs"]["steps"]] if "runs" in data else [
        j.get("steps", []) for n, j in data["jobs"].items() if job in (None, n)]
    found = [s for group in groups for s in group if s.get("name") == name]
    assert len(found) == 1, f"{file.name}: {len(found)} steps named {name!r}"
    return found[0]


def run(file: Path, name: str, *, cwd: Path, env: dict[str, str], job: str | None = None,
        timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """`bash --noprofile --norc -eo pipefail`, GitHub's `shell: bash`, on the step's script."""
    script = step(file, name, job)["run"]
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def cache_mount_check(workflow: str) -> str:
    """A lab workflow's own check, before a pull request's build, that the untrusted cache
    (``$RTGATE_CACHE``) is a filesystem of its own: its lines, dedented (exit 3 when not)."""
    text = (ROOT / ".github" / "workflows" / workflow).read_text()
    block = text[text.index('if ! mountpoint -q "$RTGATE_CACHE"'):]
    return "\n".join(line.strip() for line in block.splitlines()[:4])


def github_env(path: Path) -> dict[str, str]:
    """What a step appended to ``$GITHUB_ENV``, as the runner hands it to the job's later steps:
    ``NAME=value`` lines (the runner's multi-line ``NAME<<DELIMITER`` form is not used by our
    workflows, and refused here so a new one is noticed)."""
    found: dict[str, str] = {}
    for line in path.read_text().splitlines():
        name, sep, value = line.partition("=")
        assert sep and "<<" not in name, f"{path}: not a NAME=value line: {line!r}"
        found[name] = value
    return found
