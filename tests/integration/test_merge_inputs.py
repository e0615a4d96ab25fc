"""The gate measures the kernel inputs that merge, read as git objects (issue 31, items 1-2).

Real git histories: main carries a non-empty series (0001-fix.patch), a pull request adds a
patch and hides it, or changes its bytes, with a git attribute. ``git archive`` of the head (what
the plan job did on 42c7145) drops or rewrites the patch; ``rtgate kernel inputs`` (the
head-kernel-inputs action's command) refuses the attribute, and what it materialises from the
merge's objects is byte for byte what ``git merge`` commits. A criss-cross history (two merge
bases) is decided on the merge, never on one of its bases.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from rtgate.kernel import mergeinputs

ROOT = Path(__file__).resolve().parents[2]
FIX = "--- a/Makefile\n+++ b/Makefile\n@@ -1 +1 @@\n-x\n+y\n"
NEW = "--- a/init/main.c\n+++ b/init/main.c\n@@ -1 +1 @@\n-a\n+b $Id$ $Format:%H$\n"


def git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    full = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
            "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid",
            "GIT_CONFIG_NOSYSTEM": "1", **(env or {})}
    return subprocess.run(["git", *args], cwd=cwd, env=full, check=True, capture_output=True,
                          text=True).stdout.strip()


def commit(repo: Path, files: dict[str, str | None], message: str = "c") -> str:
    for name, text in files.items():
        path = repo / name
        if text is None:
            path.unlink()
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", message)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """main: a series that is NOT empty, and configs."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    commit(repo, {"kernel/patches/series": "0001-fix.patch\n",
                  "kernel/patches/0001-fix.patch": FIX,
                  "kernel/configs/rt.config": "CONFIG_PREEMPT_RT=y\n",
                  "README.md": "main\n"}, "main")
    return repo


def branch(repo: Path, name: str, files: dict[str, str | None], base: str = "main") -> str:
    git(repo, "checkout", "-q", "-b", name, base)
    sha = commit(repo, files, name)
    git(repo, "checkout", "-q", "main")
    return sha


def cli(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The default branch's rtgate as the actions run it: ``python -I .github/rtgate``."""
    return subprocess.run([sys.executable, "-I", str(ROOT / ".github" / "rtgate"), "kernel",
                           *args], cwd=repo, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1"})


def merged(repo: Path, head: str) -> dict[str, bytes]:
    """What the merge button commits: a real `git merge` in a scratch clone, its kernel inputs
    read as blobs (git show applies no attribute)."""
    clone = repo.parent / f"merge-{head[:8]}"
    git(repo.parent, "clone", "-q", str(repo), str(clone))
    git(clone, "fetch", "-q", "origin", head)
    git(clone, "merge", "-q", "--no-edit", "--no-ff", head)
    names = git(clone, "ls-tree", "-r", "--name-only", "HEAD", "--", *mergeinputs.INPUTS)
    return {n: subprocess.run(["git", "show", f"HEAD:{n}"], cwd=clone, check=True,
                              capture_output=True).stdout for n in names.splitlines()}


def tar_files(path: Path) -> dict[str, bytes]:
    with tarfile.open(path) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar if m.isreg()}  # type: ignore[union-attr]


def archived(repo: Path, head: str) -> dict[str, bytes]:
    """What 42c7145's plan job measured: `git archive` of the head."""
    data = subprocess.run(["git", "archive", "--format=tar", head, "--", *mergeinputs.INPUTS],
                          cwd=repo, check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar if m.isreg()}  # type: ignore[union-attr]


PATCH = {"kernel/patches/0002-new.patch": NEW,
         "kernel/patches/series": "0001-fix.patch\n0002-new.patch\n"}

# One pull request per attribute: where its .gitattributes lives, what it says, and the git
# config a runner might have (a filter driver is config, never the pull request's).
ATTRIBUTES = {
    "export-ignore": ("kernel/patches/.gitattributes", "* export-ignore\n", {}),
    "export-subst": ("kernel/patches/.gitattributes", "*.patch export-subst\n", {}),
    "filter": (".gitattributes", "kernel/** filter=rot\n",
               {"filter.rot.smudge": "tr a-z b-za", "filter.rot.clean": "cat"}),
    "eol": (".gitattributes", "kernel/** eol=crlf\n", {}),
    "ident": (".gitattributes", "*.patch ident\n", {}),
}


@pytest.mark.parametrize("attribute", sorted(ATTRIBUTES))
def test_an_attribute_cannot_change_what_is_measured(repo: Path, tmp_path: Path,
                                                     attribute: str) -> None:
    where, text, config = ATTRIBUTES[attribute]
    for key, value in config.items():
        git(repo, "config", key, value)
    head = branch(repo, "pr", {**PATCH, where: text})
    truth = merged(repo, head)
    assert truth["kernel/patches/0002-new.patch"] == NEW.encode()
    assert truth["kernel/patches/0001-fix.patch"] == FIX.encode()
    # The reproduction: git archive of the head does not hold the merge's bytes.
    assert archived(repo, head) != truth

    out = tmp_path / "ctx"
    proc = cli(repo, "inputs", "--head", head, "--out", str(out))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    line = proc.stderr.strip()
    assert len(line.splitlines()) == 1 and "refused" in line
    if where.startswith("kernel/"):
        assert "kernel/patches/.gitattributes" in line
    else:
        assert f"git attribute {attribute}" in line
    assert not (out / mergeinputs.TAR).exists()

    # And what the reader materialises from the merge's objects is its blobs, whatever the
    # attributes say (the refusal above is a second wall, not the only one).
    tree = git(repo, "merge-tree", "--write-tree", "main", head)
    found = mergeinputs.entries(repo, tree)
    mergeinputs.write(repo, mergeinputs.MergeInputs(head, "", tree, [], tree, True, [], found), out)
    assert tar_files(out / mergeinputs.TAR) == truth


def test_the_measured_bytes_are_the_merges_and_the_lab_verifies_them(repo: Path,
                                                                      tmp_path: Path) -> None:
    head = branch(repo, "pr", PATCH)
    # main moves on after the branch: the merge holds both, the head alone does not.
    commit(repo, {"kernel/configs/rt.config": "CONFIG_PREEMPT_RT=y\nCONFIG_HZ_1000=y\n"})
    out = tmp_path / "ctx"
    proc = cli(repo, "inputs", "--head", head, "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    truth = merged(repo, head)
    assert tar_files(out / mergeinputs.TAR) == truth
    assert b"CONFIG_HZ_1000" in truth["kernel/configs/rt.config"]
    manifest = json.loads((out / mergeinputs.MANIFEST).read_text())
    assert manifest["measure"] is True and manifest["merge_tree"]
    assert manifest["changed_inputs"] == []

    lab = tmp_path / "lab"
    (lab / "kernel" / "patches").mkdir(parents=True)
    (lab / "kernel" / "patches" / "stale.patch").write_text("main's checkout\n")
    applied = cli(lab, "apply-inputs", "--context", str(out))
    assert applied.returncode == 0, applied.stderr
    got = {str(p.relative_to(lab)): p.read_bytes() for p in lab.rglob("*") if p.is_file()}
    assert got == truth


def test_the_lab_refuses_bytes_that_are_not_the_manifests_blob(repo: Path,
                                                               tmp_path: Path) -> None:
    head = branch(repo, "pr", PATCH)
    out = tmp_path / "ctx"
    assert cli(repo, "inputs", "--head", head, "--out", str(out)).returncode == 0
    files = tar_files(out / mergeinputs.TAR)
    files["kernel/patches/0002-new.patch"] = b"something else\n"
    with tarfile.open(out / mergeinputs.TAR, "w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    lab = tmp_path / "lab"
    (lab / "kernel" / "patches").mkdir(parents=True)
    (lab / "kernel" / "patches" / "series").write_text("main's\n")
    proc = cli(lab, "apply-inputs", "--context", str(out))
    assert proc.returncode == 2 and "0002-new.patch: its bytes are not blob" in proc.stderr
    assert (lab / "kernel" / "patches" / "series").read_text() == "main's\n"


@pytest.mark.parametrize("name", [".gitmodules", ".gitattributes"])
def test_a_git_metadata_file_among_the_kernel_inputs_is_refused(repo: Path, tmp_path: Path,
                                                                name: str) -> None:
    head = branch(repo, "pr", {f"kernel/configs/{name}": "# nothing set\n"})
    proc = cli(repo, "inputs", "--head", head, "--out", str(tmp_path / "ctx"))
    assert proc.returncode == 2 and f"kernel/configs/{name}: no .gitattributes" in proc.stderr


def test_an_unchanged_merge_is_not_measured_and_lists_every_other_path(repo: Path,
                                                                       tmp_path: Path) -> None:
    head = branch(repo, "pr", {"README.md": "docs\n", "docs/hooks/x.py": "print()\n"})
    out = tmp_path / "ctx"
    assert cli(repo, "inputs", "--head", head, "--out", str(out)).returncode == 0
    manifest = json.loads((out / mergeinputs.MANIFEST).read_text())
    assert manifest["measure"] is False
    assert manifest["changed_inputs"] == ["README.md", "docs/hooks/x.py"]


def test_a_criss_cross_history_is_decided_on_the_merge(tmp_path: Path) -> None:
    """Two merge bases: B1 (no fix) and B2 (adds 0001-fix.patch to the series). main merged
    both; the head merged both and dropped the fix again, so its kernel inputs equal B1's, the
    base `git merge-base` prints: 42c7145's diff base...head was empty ("unchanged", green,
    nothing measured), while the merge drops main's 0001-fix.patch."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    root = commit(repo, {"kernel/patches/series": "", "kernel/configs/rt.config": "X=y\n"})
    b2 = branch(repo, "b2", {"kernel/patches/series": "0001-fix.patch\n",
                             "kernel/patches/0001-fix.patch": FIX}, root)
    later = {"GIT_COMMITTER_DATE": "2030-01-01T00:00:00Z"}
    git(repo, "checkout", "-q", "-b", "b1", root)
    (repo / "notes").write_text("b1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "b1", env=later)
    b1 = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "-b", "pr", b1)
    git(repo, "merge", "-q", "--no-ff", "--no-commit", b2, env=later)
    git(repo, "rm", "-q", "-f", "kernel/patches/0001-fix.patch")
    (repo / "kernel" / "patches" / "series").write_text("")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "merge b2, without the fix", env=later)
    head = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "-B", "main", b2)
    git(repo, "merge", "-q", "--no-edit", "--no-ff", b1, env=later)
    assert sorted(git(repo, "merge-base", "--all", "main", head).split()) == sorted([b1, b2])
    # The reproduction: the single base git prints sees no kernel input changed.
    old_base = git(repo, "merge-base", "HEAD", head)
    assert git(repo, "diff", "--no-renames", "--name-only", old_base, head, "--",
               *mergeinputs.INPUTS) == ""
    truth = merged(repo, head)
    assert truth["kernel/patches/series"] == b"" and "kernel/patches/0001-fix.patch" not in truth

    out = tmp_path / "ctx"
    assert cli(repo, "inputs", "--head", head, "--out", str(out)).returncode == 0
    manifest = json.loads((out / mergeinputs.MANIFEST).read_text())
    assert manifest["measure"] is True and len(manifest["merge_tree"]) == 40
    assert tar_files(out / mergeinputs.TAR) == truth


def test_a_merge_that_cannot_be_formed_is_measured(repo: Path, tmp_path: Path) -> None:
    head = branch(repo, "pr", {"kernel/patches/series": "0001-fix.patch\n# theirs\n"})
    commit(repo, {"kernel/patches/series": "0001-fix.patch\n# ours\n"})
    out = tmp_path / "ctx"
    assert cli(repo, "inputs", "--head", head, "--out", str(out)).returncode == 0
    manifest = json.loads((out / mergeinputs.MANIFEST).read_text())
    assert manifest["measure"] is True and manifest["merge_tree"] is None
    assert manifest["conflicts"] == ["kernel/patches/series"]
    # Unrelated histories: no merge at all, still measured (the head's inputs).
    git(repo, "checkout", "-q", "--orphan", "lone")
    lone = commit(repo, {"kernel/patches/series": "0001-fix.patch\n"})
    git(repo, "checkout", "-q", "-f", "main")
    assert cli(repo, "inputs", "--head", lone, "--out", str(tmp_path / "c2")).returncode == 0
    manifest = json.loads((tmp_path / "c2" / mergeinputs.MANIFEST).read_text())
    assert manifest["measure"] is True and manifest["source"] == lone


def test_pull_request_file_names_reach_the_log_inert(repo: Path, tmp_path: Path) -> None:
    """File names that are workflow commands (git quotes none of `#[]:`): the lab's step prints
    each through rtgate's one escaping (rtgate/ciout.py), so no line starts a command."""
    names = {"kernel/patches/##[add-mask]x.patch": "a\n",
             "kernel/patches/::error::forged.patch": "b\n",
             "kernel/configs/x\n::warning::y.config": "c\n"}
    head = branch(repo, "pr", names)
    out = tmp_path / "ctx"
    assert cli(repo, "inputs", "--head", head, "--out", str(out)).returncode == 0
    lab = tmp_path / "lab"
    lab.mkdir()
    proc = cli(lab, "apply-inputs", "--context", str(out))
    assert proc.returncode == 0, proc.stderr
    lines = (proc.stdout + proc.stderr).splitlines()
    assert len([line for line in lines if line.startswith("kernel input: ")]) == 6
    for line in lines:
        assert not line.lstrip().startswith("::") and "##[" not in line, line
    assert (lab / "kernel" / "patches" / "##[add-mask]x.patch").read_text() == "a\n"
