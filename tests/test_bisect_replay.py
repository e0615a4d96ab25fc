"""`rtgate bisect --replay`: a bisect re-decided from its rounds' result files alone, as the
publisher of a pull request's bisect does (.github/workflows/latency-bisect.yml).

The rounds are real qemu-arm64 rounds (tests/data/bisect/replay/README.md), laid out as the steps
of a bisect of series-4 whose culprit is patch 3; the CLI runs end to end on them."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from gfm import Rendered

from rtgate.bisect import SKIPPED, BoardMeasure, step_dir

DATA = Path(__file__).parent / "data" / "bisect"
ROUNDS = DATA / "replay" / "rounds"
SERIES = DATA / "series-4"
# The bisect of series-4 with patch 3 the culprit: the ends, the search (2 same, 3 worse), the
# culprit against its parent twice, the bad end without it against the good end.
STEPS = [((), (1, 2, 3, 4), "worse"), ((), (1, 2), "same"), ((), (1, 2, 3), "worse"),
         ((1, 2), (1, 2, 3), "worse"), ((1, 2), (1, 2, 3), "worse"), ((), (1, 2, 4), "same")]


def lay_out(out: Path, steps: list[tuple[tuple[int, ...], tuple[int, ...], str]], *,
            first: int = 1) -> Path:
    """The steps' directories as the bisect writes them, each holding real rounds."""
    for number, (base, cand, rounds) in enumerate(steps, start=first):
        shutil.copytree(ROUNDS / rounds, step_dir(out, number, base, cand, 4))
    return out


def replay(tmp_path: Path, source: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rtgate", "bisect", "--board", "qemu-arm64", "--flavor", "stock",
         "--series", str(SERIES), "--scenarios", "idle", "--round-duration", "10s",
         "--step-time", "5m", "--thresholds", str(DATA / "replay" / "thresholds.yml"),
         "--replay", str(source), "--out", str(tmp_path / "published"), *extra],
        capture_output=True, text=True, timeout=300)


def published(tmp_path: Path) -> tuple[dict | None, str]:
    out = tmp_path / "published"
    doc = json.loads((out / "bisect.json").read_text()) if (out / "bisect.json").exists() \
        else None
    return doc, (out / "bisect.md").read_text()


def test_a_bisect_is_re_decided_from_its_rounds_alone(tmp_path: Path) -> None:
    source = lay_out(tmp_path / "artifact", STEPS)
    # What the measuring job wrote besides the rounds says otherwise everywhere: never read.
    (source / "state.json").write_text(json.dumps({"steps": []}))
    (source / "bisect.json").write_text(json.dumps({"outcome": "nothing", "exit": 0}))
    (source / "bisect.md").write_text("## rtgate bisect: ✅ nothing to bisect")
    for step in (source / "steps").iterdir():
        (step / "ab.json").write_text(json.dumps({"outcome": "same", "exit": 0}))
        (step / "ab.md").write_text("🟰 same")
    proc = replay(tmp_path, source, "--planned-rounds", "11")
    assert proc.returncode == 1, proc.stderr
    doc, text = published(tmp_path)
    assert doc is not None
    assert (doc["outcome"], doc["culprit"]) == ("confirmed", 3)
    assert doc["culprit_patch"]["file"] == "0005-rtgate-planted-latency-on.patch"
    assert [(tuple(s["base"]), tuple(s["cand"]), s["measurement"]["outcome"])
            for s in doc["steps"]] == STEPS
    assert [s["purpose"] for s in doc["steps"]] == ["ends", "search", "search", "parent",
                                                     "parent", "revert"]
    # The effect of a 'same' step is the rounds' own, as the measuring gate found it (ab.md).
    assert "Δ p99.9 -570 µs [-10875, +9734]" in doc["steps"][1]["measurement"]["summary"]
    assert "max_us measured 1001278 µs" in doc["steps"][0]["measurement"]["summary"]
    assert "culprit found and confirmed" in text and "re-decided from the rounds" in text.lower()
    assert "| 1 | ends | 1-4 | none | worse |" in text


def test_the_plan_must_be_given(tmp_path: Path) -> None:
    proc = replay(tmp_path, lay_out(tmp_path / "artifact", STEPS))
    assert proc.returncode == 2
    assert "--replay needs --planned-rounds" in proc.stderr


def test_a_step_directory_the_search_does_not_ask_for_is_refused(tmp_path: Path) -> None:
    # Step 2 claims to be 1-3 against none, where the search asks for 1-2.
    source = lay_out(tmp_path / "artifact", [STEPS[0], ((), (1, 2, 3), "same"), *STEPS[2:]])
    proc = replay(tmp_path, source, "--planned-rounds", "11")
    assert proc.returncode == 2, proc.stderr
    assert "02_1-3_vs_none is not step 2 of this bisect" in proc.stderr
    doc, text = published(tmp_path)
    assert doc is None
    assert "refused" in text and "| 1 | ends | 1-4 | none | worse |" in text


def test_the_rounds_decide_not_the_directory_names(tmp_path: Path) -> None:
    # Worse rounds where the bisect found 1-2 same: the search goes to prefix 1 next, and the
    # directory of step 3 (1-3) is not what it asks for.
    source = lay_out(tmp_path / "artifact", [STEPS[0], ((), (1, 2), "worse"), *STEPS[2:]])
    proc = replay(tmp_path, source, "--planned-rounds", "11")
    assert proc.returncode == 2, proc.stderr
    assert "the search asks for 03_1_vs_none there" in proc.stderr


def test_a_step_beyond_the_searchs_end_is_refused(tmp_path: Path) -> None:
    source = lay_out(tmp_path / "artifact", [*STEPS, ((), (1, 2, 3, 4), "same")])
    proc = replay(tmp_path, source, "--planned-rounds", "11")
    assert proc.returncode == 2, proc.stderr
    assert "07_1-4_vs_none is not a step the search asks for (it ends after step 6)" in \
        proc.stderr
    assert published(tmp_path)[0] is None


def test_rounds_that_end_before_the_bisect_did_are_no_verdict(tmp_path: Path) -> None:
    proc = replay(tmp_path, lay_out(tmp_path / "artifact", STEPS[:4]), "--planned-rounds", "11")
    assert proc.returncode == 3, proc.stderr
    doc, text = published(tmp_path)
    assert doc is None
    assert "no verdict: the bisect's rounds end before it finished" in text
    assert "end before step 5" in text and "| 4 | parent | 1-3 | 1-2 | worse |" in text


def test_a_step_that_did_not_build_is_skipped_and_its_reason_quoted(tmp_path: Path) -> None:
    source = tmp_path / "artifact"
    lay_out(source, STEPS[:1])
    # What the measuring bisect records when 1-2 does not build: the log line is the PR's.
    evil = "does not build: @maintainer approve [here](https://evil.example) <img src=x> | ok"
    BoardMeasure._skipped(step_dir(source, 2, (), (1, 2), 4), evil, applies=True)
    # 2 skipped: the search tries 1 (same), then 3 (worse): the culprit is one of patches 2, 3.
    lay_out(source, [((), (1,), "same"), ((), (1, 2, 3), "worse")], first=3)
    proc = replay(tmp_path, source, "--planned-rounds", "11")
    doc, text = published(tmp_path)
    assert proc.returncode == 3, proc.stderr
    assert doc is not None and (doc["outcome"], doc["skipped"]) == ("ambiguous", [2])
    assert doc["steps"][1]["measurement"] == {
        "outcome": "skip", "summary": evil, "base_ok": True, "applies": True,
        "detail": {"step": "02_1-2_vs_none"}}
    shown = Rendered(text)
    assert shown.links == [] and "img" not in shown.tags
    assert "@maintainer" not in "".join(shown.plain)


@pytest.mark.parametrize("record", ['{"why": 3, "applies": true}', "not json"])
def test_an_unreadable_skip_record_is_refused(tmp_path: Path, record: str) -> None:
    source = lay_out(tmp_path / "artifact", STEPS[:1])
    home = step_dir(source, 2, (), (1, 2), 4)
    home.mkdir(parents=True)
    (home / SKIPPED).write_text(record)
    proc = replay(tmp_path, source, "--planned-rounds", "11")
    assert proc.returncode == 2, proc.stderr
    assert "skipped.json: unreadable" in proc.stderr


def test_a_symlinked_step_is_refused(tmp_path: Path) -> None:
    source = lay_out(tmp_path / "artifact", STEPS[:1])
    elsewhere = lay_out(tmp_path / "elsewhere", [((), (1, 2), "same")])
    step_dir(source, 2, (), (1, 2), 4).symlink_to(step_dir(elsewhere, 1, (), (1, 2), 4))
    proc = replay(tmp_path, source, "--planned-rounds", "11")
    assert proc.returncode == 2, proc.stderr
    assert "not a directory the bisect wrote: refused" in proc.stderr


def test_the_plan_is_part_of_the_bisects_identity(tmp_path: Path) -> None:
    """A bisect's state resumes only under the plan it began with: rounds measured under
    another plan would replay to other looks."""
    from rtgate.kernel.patches import read_series

    identity = {"series": [p.model_dump() for p in read_series(SERIES)], "good": 0, "bad": 4,
                "board": "qemu-arm64", "flavor": "stock", "scenarios": ["idle"], "repeats": 2,
                "round_duration_s": 10, "max_time_s": 300, "min_effect_us": None,
                "alpha": None, "planned_rounds": 6}
    out = tmp_path / "out"
    out.mkdir()
    (out / "state.json").write_text(json.dumps({"identity": identity, "steps": []}))
    proc = subprocess.run(
        [sys.executable, "-m", "rtgate", "bisect", "--board", "qemu-arm64", "--flavor", "stock",
         "--series", str(SERIES), "--scenarios", "idle", "--round-duration", "10s",
         "--step-time", "5m", "--planned-rounds", "8", "--out", str(out)],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "the state file is of another bisect" in proc.stderr
    assert not (out / "variants").exists()
