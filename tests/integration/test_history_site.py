"""A history published into a site (gnuplot draws its plots), and merges from concurrent
processes."""

from __future__ import annotations

import re
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest
from clirun import RunCli
from test_history import index_ids, index_lines, make_runs

from rtgate.report.history import INDEX

pytestmark = pytest.mark.usefixtures("no_ci_variables")


def latest_run(site: Path) -> str:
    """The run the index page shows as the newest (the only key of these fixtures)."""
    table = (site / "index.html").read_text().split('id="latest"')[1]
    (run,) = re.findall(r'href="runs/([^/"]+)/index.html"', table)
    return run


MERGER = """
import sys
from pathlib import Path
from rtgate.report.history import History
from rtgate.report.runs import collect
history = History(sys.argv[1])
for d in sys.argv[2:]:
    history.merge(collect([Path(d)]))
"""


def test_concurrent_merges_from_two_processes_lose_nothing(tmp_path: Path) -> None:
    a = make_runs(tmp_path / "a", 12, "a")
    b = make_runs(tmp_path / "b", 12, "b")
    shared = make_runs(tmp_path / "s", 3, "shared")  # both merge these: stored once
    procs = [subprocess.Popen([sys.executable, "-c", MERGER, str(tmp_path / "h"),
                               *map(str, runs + shared)])
             for runs in (a, b)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]

    ids = index_ids(tmp_path / "h")
    assert sorted(ids) == sorted([d.name for d in a + b + shared])
    assert len(ids) == len(set(ids))
    # One publication sequence across both writers: 1, 2, 3 … in index order, none twice.
    assert [line["publication"]["seq"] for line in index_lines(tmp_path / "h")] == \
        list(range(1, len(ids) + 1))
    runs = tmp_path / "h" / "runs"
    assert sorted(p.name for p in runs.iterdir()) == sorted(ids)  # no staging left behind


@pytest.mark.integration
def test_runs_are_ordered_by_publication_not_by_their_own_start(rtgate_cli: RunCli,
                                                                tmp_path: Path) -> None:
    history, site = tmp_path / "h", tmp_path / "site"
    (first,) = make_runs(tmp_path / "a", 1, "first")
    # Published later, but its board's clock says 2020: it is still the newer run.
    (second,) = make_runs(tmp_path / "b", 1, "second", start="2020-01-01T00:00:00+00:00")
    for run in (first, second):
        proc = rtgate_cli("report", run, "--history", history, "--out", site)
        assert proc.returncode == 0, proc.stderr
    assert [(line["run_id"], line["publication"]["seq"]) for line in index_lines(history)] \
        == [("first-000", 1), ("second-000", 2)]
    assert latest_run(site) == "second-000"
    history_page = (site / "history.html").read_text()
    assert history_page.index("runs/second-000/") < history_page.index("runs/first-000/")


@pytest.mark.integration
def test_a_run_dated_2099_is_refused_and_never_becomes_the_latest(rtgate_cli: RunCli,
                                                                  tmp_path: Path) -> None:
    history, site = tmp_path / "h", tmp_path / "site"
    (good,) = make_runs(tmp_path / "a", 1, "good")
    assert rtgate_cli("report", good, "--history", history, "--out", site).returncode == 0
    index_before = (history / INDEX).read_bytes()

    (future,) = make_runs(tmp_path / "b", 1, "future", start="2099-01-01T00:00:00+00:00")
    proc = rtgate_cli("report", future, "--history", history, "--out", site)
    assert proc.returncode == 2
    assert proc.stderr.startswith(
        f"rtgate: {future / 'result.json'}: start 2099-01-01T00:00:00+00:00 is in the future")
    assert proc.stderr.count("\n") == 1
    assert (history / INDEX).read_bytes() == index_before
    assert not (history / "runs" / "future-000").exists()

    # Nor does it win a later publication of the same key, or a site without a history.
    (later,) = make_runs(tmp_path / "c", 1, "later")
    assert rtgate_cli("report", later, "--history", history, "--out", site).returncode == 0
    assert latest_run(site) == "later-000"
    alone = rtgate_cli("report", later, future, "--out", tmp_path / "alone")
    assert alone.returncode == 2 and not (tmp_path / "alone").exists()


GITHUB = {"GITHUB_RUN_ID": "4242", "GITHUB_SERVER_URL": "https://github.example",
          "GITHUB_REPOSITORY": "lab/rtgate", "GITHUB_SHA": "a" * 40}


@pytest.mark.integration
def test_provenance_comes_from_the_publisher_never_from_the_result(rtgate_cli: RunCli,
                                                                   tmp_path: Path) -> None:
    history, site = tmp_path / "h", tmp_path / "site"
    (from_env,) = make_runs(tmp_path / "a", 1, "env")
    proc = rtgate_cli("report", from_env, "--history", history, "--out", site, env=GITHUB)
    assert proc.returncode == 0, proc.stderr
    (explicit,) = make_runs(tmp_path / "b", 1, "explicit")
    proc = rtgate_cli("report", explicit, "--history", history, "--out", site,
                      "--provenance-run-id", "77", "--provenance-commit", "b" * 40,
                      "--provenance-board", "rpi5-bench-2", env=GITHUB)
    assert proc.returncode == 0, proc.stderr
    # A re-publication by another run keeps what the first one recorded.
    assert rtgate_cli("report", from_env, "--history", history, "--out", site,
                      "--provenance-run-id", "78").returncode == 0

    first, second = (line["publication"] for line in index_lines(history))
    assert {k: v for k, v in first.items() if k != "published_at"} == {
        "seq": 1, "workflow_run_id": "4242",
        "workflow_run_url": "https://github.example/lab/rtgate/actions/runs/4242",
        "commit": "a" * 40, "board": None}  # the result's own board name is no provenance
    assert datetime.fromisoformat(first["published_at"]).tzinfo is not None
    assert {k: v for k, v in second.items() if k != "published_at"} == {
        "seq": 2, "workflow_run_id": "77",
        "workflow_run_url": "https://github.example/lab/rtgate/actions/runs/77",
        "commit": "b" * 40, "board": "rpi5-bench-2"}
    page = (site / "history.html").read_text()
    assert 'href="https://github.example/lab/rtgate/actions/runs/77"' in page
    assert "rpi5-bench-2" in page and "b" * 12 in page


@pytest.mark.integration
def test_symlinks_planted_in_a_history_checkout_are_not_followed(rtgate_cli: RunCli,
                                                                 tmp_path: Path) -> None:
    secret = tmp_path / "hostname"
    secret.write_text("build-host-7.internal\n")
    history, site = tmp_path / "h", tmp_path / "site"
    assert rtgate_cli("report", *make_runs(tmp_path / "a", 2), "--history", history,
                      "--out", site).returncode == 0
    linked_raw = history / "runs" / "run-000" / "raw" / "cyclictest.json"
    linked_raw.unlink()
    linked_raw.symlink_to(secret)
    linked_result = history / "runs" / "run-001" / "result.json"
    linked_result.rename(tmp_path / "moved.json")
    linked_result.symlink_to(tmp_path / "moved.json")

    proc = rtgate_cli("report", "--history", history, "--out", tmp_path / "again")
    assert proc.returncode == 0, proc.stderr
    assert f"rtgate: {linked_raw}: a symbolic link, not followed\n" in proc.stderr
    assert f"rtgate: {linked_result}: a symbolic link, not followed (run run-001 not " \
        "published in full)" in proc.stderr
    published = [p for p in (tmp_path / "again").rglob("*") if p.is_file()]
    assert not [p for p in published if b"build-host-7" in p.read_bytes()]
    assert not (tmp_path / "again" / "runs" / "run-001").exists()


@pytest.mark.integration
def test_one_new_run_rewrites_its_own_key_and_nothing_older(rtgate_cli: RunCli,
                                                             tmp_path: Path) -> None:
    history, site = tmp_path / "h", tmp_path / "site"
    data = Path(__file__).parents[1] / "data" / "report"
    assert rtgate_cli("report", data / "qemu", "--history", history, "--out", site,
                      "--thresholds", data / "thresholds.yml").returncode == 0
    stamps = {p: p.stat().st_mtime_ns for p in site.rglob("*") if p.is_file()}
    (new,) = make_runs(tmp_path / "a", 1, "new")
    assert rtgate_cli("report", new, "--history", history, "--out", site,
                      "--thresholds", data / "thresholds.yml").returncode == 0
    changed = {p.relative_to(site).parts[:2] for p, t in stamps.items()
               if not p.exists() or p.stat().st_mtime_ns != t}
    # The new run's key is new; the qemu keys' pages, plots and runs are left as they were.
    assert not {c for c in changed if c[0] in ("keys", "runs", "plots")}
    assert (site / "keys" / "local--stock--idle" / "index.html").is_file()
    assert (site / "runs" / "new-000" / "index.html").is_file()
