"""The Pages job's history steps, run as GitHub's runner does (tests/steps.py) against a local
bare repository standing for the GitHub repository: the results branch is read, merged into by
`rtgate report` (the merge step's own command, without its fresh install) and pushed back, and
a failure at any point leaves the history on the branch as it was."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from clirun import RunCli
from steps import run

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
PAGES = ROOT / ".github" / "workflows" / "pages.yml"
DATA = ROOT / "tests" / "data" / "report"
CHECKOUT, PUSH = "Check out the history (results branch)", "Push the history"
REPOSITORY = "rtgate/rtgate"


def git(*args: str, cwd: Path | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout.strip()


class Lab:
    """A bare "GitHub" repository under tmp/server, and a job's workspace to run steps in."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.origin = tmp / "server" / REPOSITORY
        git("init", "-q", "--bare", "-b", "main", str(self.origin))
        self.runs = 0

    def env(self, server: str | None = None) -> dict[str, str]:
        return {"PATH": os.environ["PATH"], "HOME": str(self.tmp),
                "GITHUB_SERVER_URL": server or (self.tmp / "server").as_uri(),
                "GITHUB_REPOSITORY": REPOSITORY, "GITHUB_TOKEN": "not-a-token",
                "RUN_ID": str(self.runs), "HEAD_SHA": "c" * 40}

    def results(self) -> str | None:
        """The commit the branch points at on the server, None when it is absent."""
        proc = subprocess.run(["git", "rev-parse", "-q", "--verify", "refs/heads/results"],
                              cwd=self.origin, capture_output=True, text=True)
        return proc.stdout.strip() or None

    def index(self) -> list[str]:
        return git("cat-file", "blob", "refs/heads/results:index.jsonl",
                   cwd=self.origin).splitlines()

    def job(self, server: str | None = None) -> tuple[Path, subprocess.CompletedProcess[str]]:
        """A fresh workspace with the checkout step run in it."""
        self.runs += 1
        ws = self.tmp / f"job{self.runs}"
        ws.mkdir()
        return ws, run(PAGES, CHECKOUT, cwd=ws, env=self.env(server), job="history")

    def merge(self, rtgate_cli: RunCli, ws: Path, runs: Path) -> None:
        proc = rtgate_cli("report", "--history", ws / "history", "--out", ws / "site",
                          "--thresholds", DATA / "thresholds.yml", "--provenance-run-id",
                          str(self.runs), runs)
        assert proc.returncode in (0, 3), proc.stderr

    def push(self, ws: Path) -> subprocess.CompletedProcess[str]:
        return run(PAGES, PUSH, cwd=ws, env=self.env(), job="history")

    def publish(self, rtgate_cli: RunCli, runs: Path) -> None:
        ws, checkout = self.job()
        assert checkout.returncode == 0, checkout.stdout + checkout.stderr
        self.merge(rtgate_cli, ws, runs)
        pushed = self.push(ws)
        assert pushed.returncode == 0, pushed.stdout + pushed.stderr


@pytest.fixture
def lab(tmp_path: Path) -> Lab:
    return Lab(tmp_path)


def test_an_absent_branch_starts_a_new_history_then_each_publish_adds_to_it(
        lab: Lab, rtgate_cli: RunCli) -> None:
    ws, checkout = lab.job()
    assert checkout.returncode == 0, checkout.stderr
    assert "no results branch yet" in checkout.stdout
    lab.merge(rtgate_cli, ws, DATA / "local")
    pushed = lab.push(ws)
    assert pushed.returncode == 0, pushed.stdout + pushed.stderr
    first = lab.index()
    assert first

    lab.publish(rtgate_cli, DATA / "qemu")
    second = lab.index()
    assert set(first) < set(second)
    # One commit, no parent: what the retention removed leaves the repository.
    assert git("rev-list", "--count", "refs/heads/results", cwd=lab.origin) == "1"

    ws, checkout = lab.job()  # nothing new: nothing pushed
    before = lab.results()
    lab.merge(rtgate_cli, ws, DATA / "qemu")
    pushed = lab.push(ws)
    assert pushed.returncode == 0 and "no new runs" in pushed.stdout
    assert lab.results() == before


def test_a_failure_to_read_the_branch_fails_the_job_and_pushes_nothing(
        lab: Lab, rtgate_cli: RunCli) -> None:
    lab.publish(rtgate_cli, DATA / "local")
    before, index = lab.results(), lab.index()
    # A network failure (nothing listens on port 1): ls-remote exits 128, not 2.
    ws, checkout = lab.job(server="http://127.0.0.1:1")
    assert checkout.returncode == 1
    assert "cannot read the results branch (git ls-remote exit 128)" in checkout.stdout
    # Were the job to go on regardless, the empty store's push leases an absent branch: refused.
    lab.merge(rtgate_cli, ws, DATA / "qemu")
    pushed = lab.push(ws)
    assert pushed.returncode != 0
    assert "stale info" in pushed.stderr
    assert (lab.results(), lab.index()) == (before, index)


def test_a_store_whose_index_shrank_is_not_pushed(lab: Lab, rtgate_cli: RunCli) -> None:
    lab.publish(rtgate_cli, DATA / "qemu")
    before, index = lab.results(), lab.index()
    assert len(index) > 1
    ws, checkout = lab.job()
    assert checkout.returncode == 0, checkout.stderr
    lab.merge(rtgate_cli, ws, DATA / "local")  # new runs in, ...
    stored = ws / "history" / "index.jsonl"
    lines = stored.read_text().splitlines(keepends=True)
    assert len(lines) > len(index)
    # ... and more older ones lost: one line fewer than the branch's index.
    stored.write_text("".join(lines[len(lines) - len(index) + 1:]))
    pushed = lab.push(ws)
    assert pushed.returncode == 1
    assert f"history index shrank from {len(index)} to {len(index) - 1} runs" in pushed.stdout
    assert (lab.results(), lab.index()) == (before, index)


def test_a_push_in_between_fails_the_lease(lab: Lab, rtgate_cli: RunCli) -> None:
    lab.publish(rtgate_cli, DATA / "local")
    ws, checkout = lab.job()
    assert checkout.returncode == 0, checkout.stderr
    lab.publish(rtgate_cli, DATA / "candidate")  # another writer, after this job read
    theirs, index = lab.results(), lab.index()
    lab.merge(rtgate_cli, ws, DATA / "qemu")
    pushed = lab.push(ws)
    assert pushed.returncode != 0
    assert "stale info" in pushed.stderr
    assert (lab.results(), lab.index()) == (theirs, index)
