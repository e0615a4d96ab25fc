"""`rtgate bisect --replay`: a bisect re-decided from its rounds' result files alone, as the
publisher of a pull request's bisect does (.github/workflows/latency-bisect.yml).

The bisect is a real one under rule 3: series-4 on qemu-arm64 with the e2e's settings (a
step's margin 900 %, 12 planned rounds a side, `make bisect-fixture`), patch 3 found and
confirmed (tests/data/bisect/replay/README.md). Its step directories, rearranged, make the
layouts of other bisects for the refusals. The CLI runs end to end on them."""

from __future__ import annotations

import json
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest
from clirun import RunCli
from gfm import Rendered

from rtgate.bisect.measure import SKIPPED, BoardMeasure, step_dir

DATA = Path(__file__).parents[1] / "data" / "bisect"
ARCHIVE = DATA / "replay" / "series-4-bisect.tar.xz"
SERIES = DATA / "series-4"
PLANNED = "12"  # the bisect's --planned-rounds: every step planned 12 rounds a side
MARGIN = "900"  # the bisect's --min-effect-pct: every step's margin, x10 either way
ROUND, STEP = "10s", "11m"  # its --round-duration and --step-time
# The recorded bisect: the ends, the search (1-2 same, 1-3 worse), the culprit against its
# parent twice, the bad end without it against the good end.
STEPS = [((), (1, 2, 3, 4), "worse"), ((), (1, 2), "same"), ((), (1, 2, 3), "worse"),
         ((1, 2), (1, 2, 3), "worse"), ((1, 2), (1, 2, 3), "worse"), ((), (1, 2, 4), "same")]
# Rounds of each kind, from the recorded steps.
ROUNDS = {"worse": "01_1-4_vs_none", "same": "02_1-2_vs_none"}


def recorded(tmp: Path) -> Path:
    """The recorded bisect's output directory (steps/, state.json, bisect.json), unpacked."""
    out = tmp / "recorded"
    if not out.exists():
        with tarfile.open(ARCHIVE) as tar:
            tar.extractall(out)  # our own fixture: nothing to filter
    return out


def lay_out(out: Path, steps: list[tuple[tuple[int, ...], tuple[int, ...], str]], *,
            first: int = 1) -> Path:
    """Step directories as a bisect writes them, each holding the recorded rounds named."""
    source = recorded(out.parent) / "steps"
    for number, (base, cand, rounds) in enumerate(steps, start=first):
        shutil.copytree(source / ROUNDS[rounds], step_dir(out, number, base, cand, 4))
    return out


def replay(rtgate_cli: RunCli,
           tmp_path: Path, source: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return rtgate_cli("bisect", "--board", "qemu-arm64", "--flavor", "stock", "--series",
                      SERIES, "--scenarios", "idle", "--round-duration", ROUND, "--step-time",
                      STEP, "--min-effect-pct", MARGIN, "--thresholds",
                      DATA / "replay" / "thresholds.yml", "--replay", source, "--out",
                      tmp_path / "published", *extra)


def published(tmp_path: Path) -> tuple[dict | None, str]:
    out = tmp_path / "published"
    doc = json.loads((out / "bisect.json").read_text()) if (out / "bisect.json").exists() \
        else None
    return doc, (out / "bisect.md").read_text()


def evidence(doc: dict) -> list[tuple]:
    return [(s["purpose"], s["base"], s["cand"], s["measurement"]["outcome"],
             s["measurement"]["summary"], s["measurement"]["base_ok"]) for s in doc["steps"]]


def test_the_recorded_bisect_is_re_decided_as_it_was_measured(rtgate_cli: RunCli,
                                                              tmp_path: Path) -> None:
    source = recorded(tmp_path)
    measured = json.loads((source / "bisect.json").read_text())
    proc = replay(rtgate_cli, tmp_path, source, "--planned-rounds", PLANNED)
    assert proc.returncode == 1, proc.stderr
    doc, text = published(tmp_path)
    assert doc is not None
    assert (doc["outcome"], doc["culprit"], doc["exit"]) == ("confirmed", 3, 1)
    assert [(tuple(s["base"]), tuple(s["cand"]), s["measurement"]["outcome"])
            for s in doc["steps"]] == STEPS
    # Every step's decision and evidence as the measuring bisect had them.
    assert evidence(doc) == evidence(measured)
    assert [s["measurement"]["detail"]["pairs"] for s in doc["steps"]] == \
        [s["measurement"]["detail"]["pairs"] for s in measured["steps"]]
    assert doc["culprit_patch"]["file"] == "0005-rtgate-planted-latency-on.patch"
    assert "culprit found and confirmed" in text and "re-decided from the rounds" in text.lower()
    assert "| 1 | ends | 1-4 | none | worse |" in text


def test_what_the_measuring_job_wrote_besides_the_rounds_is_never_read(rtgate_cli: RunCli,
                                                                       tmp_path: Path) -> None:
    source = recorded(tmp_path)
    measured = json.loads((source / "bisect.json").read_text())
    # Its state, report and every step's A/B verdict say "nothing to bisect", "same".
    (source / "state.json").write_text(json.dumps({"steps": []}))
    (source / "bisect.json").write_text(json.dumps({"outcome": "nothing", "exit": 0}))
    (source / "bisect.md").write_text("## rtgate bisect: ✅ nothing to bisect")
    for step in (source / "steps").iterdir():
        (step / "ab.json").write_text(json.dumps({"outcome": "same", "exit": 0}))
        (step / "ab.md").write_text("🟰 same")
    proc = replay(rtgate_cli, tmp_path, source, "--planned-rounds", PLANNED)
    assert proc.returncode == 1, proc.stderr
    doc, _ = published(tmp_path)
    assert doc is not None and evidence(doc) == evidence(measured)


def test_one_tampered_round_changes_the_verdict(rtgate_cli: RunCli, tmp_path: Path) -> None:
    # Step 2's last candidate round swapped for a round of the plant (over the 900 ms budget):
    # 1-2 is worse, so the search asks for prefix 1 next and the recorded step 3 is refused.
    source = recorded(tmp_path)
    steps = source / "steps"
    plant = steps / ROUNDS["worse"] / "B" / "round-1" / "stock" / "idle" / "result.json"
    rounds = (steps / ROUNDS["same"] / "B").glob("round-*")
    last = max(rounds, key=lambda r: int(r.name.removeprefix("round-")))
    shutil.copyfile(plant, last / "stock" / "idle" / "result.json")
    proc = replay(rtgate_cli, tmp_path, source, "--planned-rounds", PLANNED)
    assert proc.returncode == 2, proc.stderr
    assert "the search asks for 03_1_vs_none there" in proc.stderr
    doc, text = published(tmp_path)
    assert doc is None and "| 2 | search | 1-2 | none | worse |" in text


def test_the_plan_must_be_given(rtgate_cli: RunCli, tmp_path: Path) -> None:
    proc = replay(rtgate_cli, tmp_path, lay_out(tmp_path / "artifact", STEPS))
    assert proc.returncode == 2
    assert "--replay needs --planned-rounds" in proc.stderr


def test_a_step_directory_the_search_does_not_ask_for_is_refused(rtgate_cli: RunCli,
                                                                 tmp_path: Path) -> None:
    # Step 2 claims to be 1-3 against none, where the search asks for 1-2.
    source = lay_out(tmp_path / "artifact", [STEPS[0], ((), (1, 2, 3), "same"), *STEPS[2:]])
    proc = replay(rtgate_cli, tmp_path, source, "--planned-rounds", PLANNED)
    assert proc.returncode == 2, proc.stderr
    assert "02_1-3_vs_none is not step 2 of this bisect" in proc.stderr
    doc, text = published(tmp_path)
    assert doc is None
    assert "refused" in text and "| 1 | ends | 1-4 | none | worse |" in text


def test_the_rounds_decide_not_the_directory_names(rtgate_cli: RunCli,
                                                   tmp_path: Path) -> None:
    # Worse rounds where the bisect found 1-2 same: the search goes to prefix 1 next, and the
    # directory of step 3 (1-3) is not what it asks for.
    source = lay_out(tmp_path / "artifact", [STEPS[0], ((), (1, 2), "worse"), *STEPS[2:]])
    proc = replay(rtgate_cli, tmp_path, source, "--planned-rounds", PLANNED)
    assert proc.returncode == 2, proc.stderr
    assert "the search asks for 03_1_vs_none there" in proc.stderr


def test_a_step_beyond_the_searchs_end_is_refused(rtgate_cli: RunCli,
                                                  tmp_path: Path) -> None:
    source = lay_out(tmp_path / "artifact", [*STEPS, ((), (1, 2, 3, 4), "same")])
    proc = replay(rtgate_cli, tmp_path, source, "--planned-rounds", PLANNED)
    assert proc.returncode == 2, proc.stderr
    assert "07_1-4_vs_none is not a step the search asks for (it ends after step 6)" in \
        proc.stderr
    assert published(tmp_path)[0] is None


def test_rounds_that_end_before_the_bisect_did_are_no_verdict(rtgate_cli: RunCli,
                                                              tmp_path: Path) -> None:
    proc = replay(rtgate_cli,
                  tmp_path, lay_out(tmp_path / "artifact", STEPS[:4]), "--planned-rounds", PLANNED)
    assert proc.returncode == 3, proc.stderr
    doc, text = published(tmp_path)
    assert doc is None
    assert "no verdict: the bisect's rounds end before it finished" in text
    assert "end before step 5" in text and "| 4 | parent | 1-3 | 1-2 | worse |" in text


def test_a_step_that_did_not_build_is_skipped_and_its_reason_quoted(rtgate_cli: RunCli,
                                                                    tmp_path: Path) -> None:
    source = tmp_path / "artifact"
    lay_out(source, STEPS[:1])
    # What the measuring bisect records when 1-2 does not build: the log line is the PR's.
    evil = "does not build: @maintainer approve [here](https://evil.example) <img src=x> | ok"
    BoardMeasure._skipped(step_dir(source, 2, (), (1, 2), 4), evil, applies=True)
    # 2 skipped: the search tries 1 (same), then 3 (worse): the culprit is one of patches 2, 3.
    lay_out(source, [((), (1,), "same"), ((), (1, 2, 3), "worse")], first=3)
    proc = replay(rtgate_cli, tmp_path, source, "--planned-rounds", PLANNED)
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
def test_an_unreadable_skip_record_is_refused(rtgate_cli: RunCli,
                                              tmp_path: Path, record: str) -> None:
    source = lay_out(tmp_path / "artifact", STEPS[:1])
    home = step_dir(source, 2, (), (1, 2), 4)
    home.mkdir(parents=True)
    (home / SKIPPED).write_text(record)
    proc = replay(rtgate_cli, tmp_path, source, "--planned-rounds", PLANNED)
    assert proc.returncode == 2, proc.stderr
    assert "skipped.json: unreadable" in proc.stderr


def test_a_symlinked_step_is_refused(rtgate_cli: RunCli, tmp_path: Path) -> None:
    source = lay_out(tmp_path / "artifact", STEPS[:1])
    elsewhere = lay_out(tmp_path / "elsewhere", [((), (1, 2), "same")])
    step_dir(source, 2, (), (1, 2), 4).symlink_to(step_dir(elsewhere, 1, (), (1, 2), 4))
    proc = replay(rtgate_cli, tmp_path, source, "--planned-rounds", PLANNED)
    assert proc.returncode == 2, proc.stderr
    assert "not a directory the bisect wrote: refused" in proc.stderr


def test_the_plan_is_part_of_the_bisects_identity(rtgate_cli: RunCli,
                                                  tmp_path: Path) -> None:
    """A bisect's state resumes only under the plan it began with: rounds measured under
    another plan would replay to other looks."""
    from rtgate.kernel.patches import read_series

    identity = {"series": [p.model_dump() for p in read_series(SERIES)], "good": 0, "bad": 4,
                "board": "qemu-arm64", "flavor": "stock", "scenarios": ["idle"], "repeats": 2,
                "round_duration_s": 10, "max_time_s": 300, "min_effect_pct": None,
                "alpha": None, "planned_rounds": 6}
    out = tmp_path / "out"
    out.mkdir()
    (out / "state.json").write_text(json.dumps({"schema": "rtgate/bisect/v1/state",
                                               "identity": identity, "steps": []}))
    proc = rtgate_cli("bisect", "--board", "qemu-arm64", "--flavor", "stock", "--series",
                      str(SERIES), "--scenarios", "idle", "--round-duration", "10s",
                      "--step-time", "5m", "--planned-rounds", "8", "--out", str(out))
    assert proc.returncode == 2, proc.stderr
    assert "the state file is of another bisect" in proc.stderr
    assert not (out / "variants").exists()
