"""The history store: idempotent, append-only, atomic merges; corrupt lines set aside."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from clirun import RunCli

from rtgate.errors import InputError
from rtgate.report.history import CLOCK_SKEW, CORRUPT, INDEX, History
from rtgate.report.runs import collect, load_run
from rtgate.result import load_result

DATA = Path(__file__).parent / "data" / "report"
FIXTURE = DATA / "local" / "stock-idle"


@pytest.fixture(autouse=True)
def no_ci_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """No CI variables from the environment running the tests: provenance is what a test sets."""
    for name in [n for n in os.environ if n.startswith("GITHUB_")]:
        monkeypatch.delenv(name)


def make_runs(root: Path, count: int, prefix: str = "run", start: str | None = None
              ) -> list[Path]:
    """Copies of a real captured run under new run ids (one directory each, raw files too)."""
    base = load_result(FIXTURE / "result.json")
    dirs = []
    for i in range(count):
        d = root / f"{prefix}-{i:03d}"
        shutil.copytree(FIXTURE / "raw", d / "raw")
        update = {"run_id": f"{prefix}-{i:03d}", "start": start or base.start}
        base.model_copy(update=update).write(d / "result.json")
        dirs.append(d)
    return dirs


def index_lines(history: Path) -> list[dict]:
    return [json.loads(line) for line in (history / INDEX).read_text().splitlines()]


def index_ids(history: Path) -> list[str]:
    return [line["run_id"] for line in index_lines(history)]


def latest_run(site: Path) -> str:
    """The run the index page shows as the newest (the only key of these fixtures)."""
    table = (site / "index.html").read_text().split('id="latest"')[1]
    (run,) = re.findall(r'href="runs/([^/"]+)/index.html"', table)
    return run


def test_merge_twice_is_idempotent_and_keeps_the_files(tmp_path: Path) -> None:
    dirs = make_runs(tmp_path / "in", 3)
    history = History(tmp_path / "h")
    first = history.merge(collect(dirs))
    assert first.added == ["run-000", "run-001", "run-002"] and not first.already
    index_before = (tmp_path / "h" / INDEX).read_bytes()

    second = history.merge(collect(dirs))
    assert second.added == [] and second.already == ["run-000", "run-001", "run-002"]
    assert (tmp_path / "h" / INDEX).read_bytes() == index_before

    stored = history.run_dir(history.entries()[1])
    # The history keeps the bytes it was given, and the raw outputs the result names.
    assert (stored / "result.json").read_bytes() == (dirs[1] / "result.json").read_bytes()
    assert (stored / "raw" / "cyclictest.json").read_bytes() == \
        (FIXTURE / "raw" / "cyclictest.json").read_bytes()
    assert len(history.load(history.entries()[1]).raw) == 2


def test_a_later_merge_never_drops_earlier_runs(tmp_path: Path) -> None:
    history = History(tmp_path / "h")
    history.merge(collect(make_runs(tmp_path / "a", 2, "old")))
    history.merge(collect(make_runs(tmp_path / "b", 2, "new")))
    assert index_ids(tmp_path / "h") == ["old-000", "old-001", "new-000", "new-001"]


def test_corrupt_lines_are_reported_kept_aside_and_skipped(tmp_path: Path, capsys) -> None:
    history = History(tmp_path / "h")
    history.merge(collect(make_runs(tmp_path / "a", 1, "good")))
    index = tmp_path / "h" / INDEX
    escape = json.loads(index.read_text()) | {"run_id": "escape", "dir": "../../etc"}
    garbage = ['{"run_id": "half a line', '{"run_id": "x", "unexpected": true}',
               json.dumps(escape)]
    index.write_text(index.read_text() + "\n".join(garbage) + "\n")

    assert [e.run_id for e in history.entries()] == ["good-000"]  # readers skip them
    report = history.merge(collect(make_runs(tmp_path / "b", 1, "next")))

    assert report.added == ["next-000"]
    assert [m.split(": ")[0] for m in report.corrupt] == [f"{index}:{n}" for n in (2, 3, 4)]
    assert f"{index}:2:" in capsys.readouterr().err
    assert (tmp_path / "h" / CORRUPT).read_text().splitlines() == garbage
    assert index_ids(tmp_path / "h") == ["good-000", "next-000"]


def test_run_ids_and_sources_never_escape_their_directory(tmp_path: Path) -> None:
    d = make_runs(tmp_path / "in", 1)[0]
    result = load_result(d / "result.json")
    sources = [s.model_copy(update={"path": "/etc/passwd"}) for s in result.sources[:1]]
    result.model_copy(update={"run_id": "../../escape", "sources": sources}).write(
        d / "result.json")
    run = load_run(d / "result.json")
    assert run.raw == []  # /etc/passwd is not this run's file: never published
    history = History(tmp_path / "h")
    history.merge([run])
    (entry,) = history.entries()
    assert "/" not in entry.dir and ".." not in entry.dir
    assert history.run_dir(entry).parent == tmp_path / "h" / "runs"


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


def test_the_pull_requests_baseline_is_the_last_run_published(rtgate_cli: RunCli,
                                                              tmp_path: Path) -> None:
    # The publisher compares a pull request with main's history: the baseline is what main
    # published last, not the run whose board claimed the latest start.
    history = tmp_path / "h"
    (first,) = make_runs(tmp_path / "a", 1, "first")
    (second,) = make_runs(tmp_path / "b", 1, "second", start="2020-01-01T00:00:00+00:00")
    result = load_result(second / "result.json")
    slower = result.totals.model_copy(update={"max_us": 4321.0})
    result.model_copy(update={"totals": slower}).write(second / "result.json")
    for run in (first, second):
        History(history).merge(collect([run]))
    proc = rtgate_cli("compare", history, first, "--markdown", tmp_path / "c.md")
    assert proc.returncode in (0, 4), proc.stderr
    row = next(ln for ln in (tmp_path / "c.md").read_text().splitlines() if "`idle`" in ln)
    assert "| 4321 → 4199 " in row, row


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


def test_a_start_within_the_clock_skew_is_accepted_beyond_it_refused(tmp_path: Path) -> None:
    now = datetime.now(UTC)
    history = History(tmp_path / "h")
    soon = make_runs(tmp_path / "a", 1, "soon", start=(now + CLOCK_SKEW / 2).isoformat())
    assert history.merge(collect(soon)).added == ["soon-000"]
    # A start without a zone is read as UTC, as the board wrote it.
    naive = (now + CLOCK_SKEW * 2).replace(tzinfo=None).isoformat()
    (late,) = make_runs(tmp_path / "b", 1, "late", start=naive)
    with pytest.raises(InputError, match="in the future") as refused:
        history.merge(collect([late]))
    assert refused.value.path == str(late / "result.json")
    assert index_ids(tmp_path / "h") == ["soon-000"]


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


@pytest.mark.parametrize("option, value", [
    ("--provenance-run-url", "javascript:alert(1)"),
    ("--provenance-run-id", "12 OR 1"),
    ("--provenance-commit", "<b>main</b>"),
])
def test_provenance_that_is_no_run_or_commit_is_a_usage_error(
        rtgate_cli: RunCli, tmp_path: Path, option: str, value: str) -> None:
    (run,) = make_runs(tmp_path / "a", 1)
    proc = rtgate_cli("report", run, "--history", tmp_path / "h", "--out", tmp_path / "site",
                      option, value)
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"rtgate: {option}: ") and proc.stderr.count("\n") == 1
    assert not (tmp_path / "h").exists()


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
        "published)" in proc.stderr
    published = [p for p in (tmp_path / "again").rglob("*") if p.is_file()]
    assert not [p for p in published if b"build-host-7" in p.read_bytes()]
    assert not (tmp_path / "again" / "runs" / "run-001").exists()
