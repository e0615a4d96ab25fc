"""The history store: idempotent, append-only, atomic merges; corrupt lines set aside."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from clirun import RunCli

from rtgate import paths
from rtgate.errors import InputError
from rtgate.report.history import CLOCK_SKEW, CORRUPT, INDEX, History
from rtgate.report.judge import Judge
from rtgate.report.runs import collect, load_run
from rtgate.result import load_result

DATA = Path(__file__).parents[1] / "data" / "report"
FIXTURE = DATA / "local" / "stock-idle"


pytestmark = pytest.mark.usefixtures("no_ci_variables")


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


def test_retention_keeps_every_index_line_and_the_newest_files(tmp_path: Path) -> None:
    history = History(tmp_path / "h")
    judge = Judge.from_file(DATA / "thresholds.yml", paths.BOARDS)
    for i in range(4):
        history.merge(collect(make_runs(tmp_path / str(i), 1, f"r{i}")), judge=judge,
                      keep_raw=1, keep_results=2)
    # Every run's verdict, budget, kernel and numbers stay in the index.
    lines = index_lines(tmp_path / "h")
    assert [line["run_id"] for line in lines] == ["r0-000", "r1-000", "r2-000", "r3-000"]
    result = load_result(FIXTURE / "result.json")
    for line in lines:
        digest = line["digest"]
        assert (digest["verdict"], digest["budget"]["max"]) == ("incomplete", 100000)
        assert digest["kernel_version"] == result.kernel.version
        assert [t["max_us"] for t in digest["threads"]] == [t.max_us for t in result.threads]
        assert sum(c for _, c in digest["hist"]) == sum(
            c for t in result.threads if t.histogram for _, c in t.histogram.buckets) + sum(
            t.histogram.overflows for t in result.threads if t.histogram)
    runs = tmp_path / "h" / "runs"
    assert not (runs / "r0-000").exists() and not (runs / "r1-000").exists()
    assert (runs / "r2-000" / "result.json").is_file() and not (runs / "r2-000" / "raw").exists()
    assert (runs / "r3-000" / "raw" / "cyclictest.json").is_file()
    assert [r.result.run_id for r in history.runs()] == ["r2-000", "r3-000"]


def test_an_index_from_before_digests_gets_them(tmp_path: Path) -> None:
    history = History(tmp_path / "h")
    history.merge(collect(make_runs(tmp_path / "a", 2)))
    lines = index_lines(tmp_path / "h")
    for line in lines:
        del line["digest"]
    (tmp_path / "h" / INDEX).write_text("".join(json.dumps(x) + "\n" for x in lines))
    report = history.merge([], judge=Judge.from_file(DATA / "thresholds.yml", paths.BOARDS))
    assert report.digested == ["run-000", "run-001"]
    assert [line["digest"]["verdict"] for line in index_lines(tmp_path / "h")] == [
        "incomplete", "incomplete"]
