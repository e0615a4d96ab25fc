"""The lab's playbook (lab/) at ansible-lint's production profile, with zero findings, and its
syntax as ansible-playbook reads it. Both come from the `lab` extra (pyproject.toml), which
scripts/deps.sh installs into the project's venv; a missing tool fails, never skips."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / "lab"


def tool(name: str) -> str:
    path = shutil.which(name, path=os.pathsep.join([str(Path(sys.executable).parent),
                                                    os.environ.get("PATH", "")]))
    if path is None:
        pytest.fail(f"{name} is not installed: scripts/deps.sh installs the lab extra")
    return path


def env() -> dict[str, str]:
    # ansible-lint runs ansible-playbook --syntax-check, found on PATH; no colours in the log.
    return {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
            "ANSIBLE_CONFIG": str(LAB / "ansible.cfg"), "NO_COLOR": "1",
            "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_LOCAL_TEMP": "/tmp"}


def test_ansible_lint_production_profile_is_clean() -> None:
    proc = subprocess.run([tool("ansible-lint"), "--profile", "production", "--offline",
                           "--nocolor", "site.yml"], cwd=LAB, capture_output=True, text=True,
                          timeout=600, env=env())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Profile 'production' was required, and it passed" in proc.stdout + proc.stderr


def test_the_example_inventory_parses_with_a_controller_and_two_pis() -> None:
    proc = subprocess.run([tool("ansible-inventory"), "-i", "inventory.example.yml", "--graph"],
                          cwd=LAB, capture_output=True, text=True, timeout=120, env=env())
    assert proc.returncode == 0, proc.stderr
    graph = proc.stdout
    for name in ("@controllers", "ctrl-01", "@pis", "rpi5-a", "rpi5-b"):
        assert name in graph, graph
    proc = subprocess.run([tool("ansible-playbook"), "-i", "inventory.example.yml",
                           "--syntax-check", "site.yml"], cwd=LAB, capture_output=True,
                          text=True, timeout=120, env=env())
    assert proc.returncode == 0, proc.stdout + proc.stderr
