"""Every path a privileged job runs or loads has a code owner (issue 31, item 6).

A privileged job holds a write permission, a secret or an environment (where secrets live), or
runs on a lab runner (a board's SSH key). What such a job executes or loads, once merged after
an ordinary review, acts with that privilege: so every such path is the maintainers', and the
kernel inputs are the only paths a pull request author may change without them (the gate
measures those as the merge's blobs, docs/security.md).

The paths are derived from the workflows: the workflow file, the local actions and reusable
workflows it uses (recursively), every repository path named in a `run:` script or a `with:`
value, and what the programs it starts read (LOADERS). CODEOWNERS is read with GitHub's rules
("About code owners", docs.github.com/en/repositories/managing-your-repositorys-settings-and-
features/customizing-your-repository/about-code-owners): gitignore-style patterns without `!`
or `[ ]`, the last matching line wins, and a line with no owner leaves its paths unowned.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = ROOT / ".github" / "workflows"
KERNEL_INPUTS = ("kernel/patches/", "kernel/configs/")
SKIP_DIRS = {".git", ".venv", "__pycache__", "out", "site", ".pytest_cache", ".mypy_cache",
             ".ruff_cache", "node_modules"}

# What the programs a job starts read besides the paths its script names. rtgate (run as
# `.github/rtgate`, `-m rtgate` or installed with `pip install .`) reads its package, the
# project file pip builds it from, and the data it judges with; MkDocs reads its config, the
# hooks that config names (Python, run in the job) and the pages.
RTGATE = ("rtgate/", "pyproject.toml", "thresholds.yml", "bench/", "kernel/", "reports/")
LOADERS: dict[str, tuple[str, ...]] = {
    ".github/rtgate": (".github/rtgate/", *RTGATE),
    "-m rtgate": RTGATE,
    "pip install": RTGATE,
    "mkdocs": ("mkdocs.yml", "docs/"),
    "scripts/deps.sh": ("scripts/",),
}


def repo_files() -> list[str]:
    found = []
    for dirpath, dirnames, filenames in os.walk(ROOT):
        dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS]
        rel = Path(dirpath).relative_to(ROOT)
        found += [(rel / f).as_posix() for f in filenames]
    return found


def _regex(pattern: str) -> re.Pattern[str]:
    anchored = pattern.startswith("/") or "/" in pattern.rstrip("/")
    body = pattern.strip("/")
    out = ""
    i = 0
    while i < len(body):
        if body.startswith("**", i):
            out += ".*"
            i += 2
        elif body[i] == "*":
            out += "[^/]*"
            i += 1
        elif body[i] == "?":
            out += "[^/]"
            i += 1
        else:
            out += re.escape(body[i])
            i += 1
    prefix = "^" if anchored else "^(?:.*/)?"
    # `docs/*` owns docs/x.md, not docs/a/b.md (GitHub's example); any other pattern owns
    # what is below a directory it names.
    below = "" if pattern.endswith("/*") else "(?:/.*)?"
    return re.compile(prefix + out + below + "$")


def codeowners(text: str) -> list[tuple[re.Pattern[str], list[str]]]:
    rules = []
    for line in text.splitlines():
        line = line.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        pattern, *owners = line.split()
        assert not pattern.startswith("!") and "[" not in pattern, f"not CODEOWNERS: {line}"
        rules.append((_regex(pattern), owners))
    return rules


def owners(rules: list[tuple[re.Pattern[str], list[str]]], path: str) -> list[str]:
    found: list[str] = []
    for regex, who in rules:
        if regex.match(path):
            found = who  # the last match wins
    return found


RULES = codeowners((ROOT / ".github" / "CODEOWNERS").read_text())


def test_the_matcher_follows_githubs_examples() -> None:
    rules = codeowners("*       @global\n*.js @js\n/build/logs/ @doc\ndocs/* @docs\n"
                       "/apps/ @octo\n/apps/github\n")
    assert owners(rules, "README.md") == ["@global"]
    assert owners(rules, "src/x.js") == ["@js"]
    assert owners(rules, "build/logs/a/b.txt") == ["@doc"]
    assert owners(rules, "docs/getting-started.md") == ["@docs"]
    assert owners(rules, "docs/build-app/troubleshooting.md") == ["@global"]
    assert owners(rules, "apps/x") == ["@octo"] and owners(rules, "apps/github/y") == []


def privileged(job: dict[str, Any], workflow: dict[str, Any]) -> bool:
    perms = [p for p in (job.get("permissions"), workflow.get("permissions")) if p]
    writes = any(p == "write-all" or (isinstance(p, dict) and "write" in p.values())
                 for p in perms)
    runs_on = job.get("runs-on", [])
    lab = "self-hosted" in (runs_on if isinstance(runs_on, list) else [runs_on])
    return writes or lab or "environment" in job or "secrets." in yaml.safe_dump(job)


def _texts(node: Any) -> list[str]:
    """Every run script and with: value of a job or composite action."""
    out: list[str] = []
    for step in node.get("steps", []) if isinstance(node, dict) else []:
        out += [str(step.get("run", ""))] + [str(v) for v in (step.get("with") or {}).values()]
    return out


def _named(text: str, files: list[str]) -> set[str]:
    """Repository paths a script names (a file, or a directory and all below it)."""
    named = set()
    for token in set(re.findall(r"[\w.][\w./*-]*", text)):
        token = token.strip("./") if token.startswith("./") else token.rstrip("/")
        if not token or token in (".", ".."):
            continue
        if (ROOT / token).is_file():
            named.add(token)
        elif (ROOT / token).is_dir() and token not in (".github",):
            named |= {f for f in files if f.startswith(token + "/")}
    for marker, loaded in LOADERS.items():
        if marker in text:
            for entry in loaded:
                named |= {f for f in files if f == entry or f.startswith(entry)}
    return named


def _local(uses: str) -> Path | None:
    return ROOT / uses[2:] if uses.startswith("./") else None


def paths_of(node: dict[str, Any], files: list[str], seen: set[Path]) -> set[str]:
    texts = _texts(node)
    found = set().union(*(_named(t, files) for t in texts)) if texts else set()
    uses = [s.get("uses", "") for s in node.get("steps", [])] + [node.get("uses", "")]
    for target in filter(None, map(_local, uses)):
        if target in seen:
            continue
        seen.add(target)
        if target.is_dir():  # a composite action: its files, and what its steps run
            found |= {f for f in files if f.startswith(target.relative_to(ROOT).as_posix() + "/")}
            action = yaml.safe_load((target / "action.yml").read_text())
            found |= paths_of(action["runs"], files, seen)
        else:  # a reusable workflow: every job of it runs with the caller's privileges
            found.add(target.relative_to(ROOT).as_posix())
            for job in yaml.safe_load(target.read_text())["jobs"].values():
                found |= paths_of(job, files, seen)
    return found


def privileged_paths() -> dict[str, set[str]]:
    files = repo_files()
    out: dict[str, set[str]] = {}
    for path in sorted(WORKFLOWS.glob("*.yml")):
        workflow = yaml.safe_load(path.read_text())
        for name, job in workflow["jobs"].items():
            if privileged(job, workflow):
                where = f"{path.name}:{name}"
                out[where] = {f".github/workflows/{path.name}"} | paths_of(job, files, set())
    return out


PRIVILEGED = privileged_paths()


def test_the_derivation_finds_what_the_review_found() -> None:
    """The paths the security review named are among those derived (else the test is blind)."""
    every = set().union(*PRIVILEGED.values())
    for path in ("docs/hooks/commands.py", "mkdocs.yml", "scripts/deps.sh",
                 "kernel/ccache.conf", ".github/actions/kernel-inputs/action.yml",
                 "rtgate/kernel/mergeinputs.py", "pyproject.toml", "thresholds.yml"):
        assert path in every, path
    assert any(w.startswith("pages.yml:history") for w in PRIVILEGED)
    assert any(w.startswith("latency-report.yml:publish") for w in PRIVILEGED)


@pytest.mark.parametrize("where", sorted(PRIVILEGED))
def test_every_path_a_privileged_job_runs_or_loads_is_owned(where: str) -> None:
    unowned = sorted(p for p in PRIVILEGED[where]
                     if not p.startswith(KERNEL_INPUTS) and not owners(RULES, p))
    assert not unowned, f"{where} runs or loads unowned paths: {unowned}"


def test_the_kernel_inputs_are_the_only_unowned_paths() -> None:
    unowned = sorted(p for p in repo_files() if not owners(RULES, p))
    assert all(p.startswith(KERNEL_INPUTS) for p in unowned), unowned
    assert owners(RULES, "kernel/patches/series") == []
    # The gate inputs, a .gitattributes anywhere (what later checkouts build) and new files
    # are owned.
    for path in ("thresholds.yml", "bench/boards/rpi5.yml", "rtgate/cli/__init__.py",
                 "kernel/targets/rpi5.yml", ".github/CODEOWNERS", "docker/x", "pyproject.toml",
                 "reports/x", "benchmarks/x", ".gitattributes", "docs/.gitattributes",
                 "kernel/.gitattributes", "kernel/ccache.conf", "new.py"):
        assert owners(RULES, path) == ["@rtgate/maintainers"], path
