"""A gate's A and B from one commit: `rtgate kernel pin` and a pinned source's clone, against a
local git repository standing for the Raspberry Pi kernel tree."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from clirun import RunCli

from rtgate.kernel.source import materialize, pinned, resolve

pytestmark = pytest.mark.integration


def _git(repo: Path, *argv: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *argv], check=True, capture_output=True,
                          text=True, timeout=60).stdout.strip()


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A kernel-like repository: a Makefile on branch rpi-6.12.y, tagged v1 (annotated)."""
    repo = tmp_path / "linux"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "rpi-6.12.y")
    _git(repo, "config", "user.email", "lab@example.org")
    _git(repo, "config", "user.name", "lab")
    (repo / "Makefile").write_text("VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 1\n")
    _git(repo, "add", "Makefile")
    _git(repo, "commit", "-q", "-m", "6.12.1")
    _git(repo, "tag", "-a", "-m", "first", "v1")
    return repo


def test_a_branch_is_pinned_once_and_its_commit_builds_after_the_branch_moves(
        tree: Path, tmp_path: Path, rtgate_cli: RunCli) -> None:
    first = _git(tree, "rev-parse", "HEAD")
    spec = f"git:{tree}@rpi-6.12.y"
    proc = rtgate_cli("kernel", "pin", "--board", "rpi5", "--source", spec)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.strip() == f"git:{tree}@{first}"
    # The branch moves on (a new stable release) between the gate's A and B builds.
    (tree / "Makefile").write_text("VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 2\n")
    _git(tree, "commit", "-q", "-am", "6.12.2")
    assert pinned(resolve(spec)).ref != first
    # Both sides take the pinned commit: its tree, not the branch's new tip.
    source = resolve(out.strip())
    assert pinned(source) == source
    built = materialize(source, tmp_path / "cache")
    assert "SUBLEVEL = 1" in (built / "Makefile").read_text()
    assert materialize(resolve(out.strip()), tmp_path / "cache") == built


def test_an_annotated_tag_pins_to_its_commit_and_a_missing_ref_is_an_input_error(
        tree: Path, rtgate_cli: RunCli) -> None:
    commit = _git(tree, "rev-parse", "v1^{commit}")
    assert pinned(resolve(f"git:{tree}@v1")).ref == commit
    proc = rtgate_cli("kernel", "pin", "--board", "rpi5", "--source", f"git:{tree}@nope")
    assert proc.returncode == 2 and "has no branch or tag 'nope'" in proc.stderr, proc.stderr
