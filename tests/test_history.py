"""The history store: idempotent, append-only, atomic merges; corrupt lines set aside."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from rtgate.report.history import CORRUPT, INDEX, History
from rtgate.report.runs import collect, load_run
from rtgate.result import load_result

DATA = Path(__file__).parent / "data" / "report"
FIXTURE = DATA / "local" / "stock-idle"


def make_runs(root: Path, count: int, prefix: str = "run") -> list[Path]:
    """Copies of a real captured run under new run ids (one directory each, raw files too)."""
    base = load_result(FIXTURE / "result.json")
    dirs = []
    for i in range(count):
        d = root / f"{prefix}-{i:03d}"
        shutil.copytree(FIXTURE / "raw", d / "raw")
        base.model_copy(update={"run_id": f"{prefix}-{i:03d}"}).write(d / "result.json")
        dirs.append(d)
    return dirs


def index_ids(history: Path) -> list[str]:
    lines = (history / INDEX).read_text().splitlines()
    return [json.loads(line)["run_id"] for line in lines]


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
    runs = tmp_path / "h" / "runs"
    assert sorted(p.name for p in runs.iterdir()) == sorted(ids)  # no staging left behind
