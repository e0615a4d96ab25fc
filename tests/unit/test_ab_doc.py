"""ab.json and ab.md: the same bytes the A/B loop wrote before it became a package (golden files
in tests/data/ab/expected/, README there), and ab.json valid against its committed schema."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import jsonschema
import pytest
from rich.console import Console

from rtgate.ab import doc, loop
from rtgate.ab.loop import ABRun, Side
from rtgate.ab.render import markdown
from rtgate.ab.settings import RoundSettings
from rtgate.board.spec import load_board
from rtgate.gate.thresholds import load_thresholds
from rtgate.result import load_result

DATA = Path(__file__).resolve().parents[1] / "data" / "ab"
EXPECTED = DATA / "expected"
CASES: dict[str, dict[str, Any]] = json.loads((EXPECTED / "cases.json").read_text())
ROUNDS = 6  # captured a side in each of DATA's directories


class Clock:
    """Ten to twelve seconds a round, whatever the machine."""

    def __init__(self) -> None:
        self.now, self.calls = 0.0, 0

    def monotonic(self) -> float:
        return self.now


def stand_in(sides: dict[str, str], clock: Clock) -> Any:
    """measure() on a board that hands back round N of the side's captured directory."""

    def measure(spec: object, kernel: object, scenario: str, duration_s: int, out: Path,
                **_: object) -> SimpleNamespace:
        side, n = out.parts[-4], int(out.parts[-3].removeprefix("round-"))
        out.mkdir(parents=True, exist_ok=True)
        shutil.copy(DATA / sides[side] / f"r{(n - 1) % ROUNDS + 1}" / "result.json",
                    out / "result.json")
        clock.calls += 1
        clock.now += 10 + clock.calls % 3
        return SimpleNamespace(result=load_result(out / "result.json"),
                               result_path=out / "result.json")

    return measure


def ab_run(name: str, case: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> ABRun:
    """The case run (stand-in board and clock) or replayed (rounds laid out as the gate writes
    them), in the current directory: every path ab.json names is relative."""
    thresholds = Path(case["thresholds"])
    shutil.copy(DATA / thresholds, thresholds)
    out = Path(name)
    if case["mode"] == "replay":
        for side in "AB":
            for n in range(1, ROUNDS + 1):
                if [side, n] not in case.get("missing", []):
                    home = out / side / f"round-{n}" / "running" / "idle"
                    home.mkdir(parents=True)
                    shutil.copy(DATA / case[side] / f"r{n}" / "result.json", home)
    clock = Clock()
    monkeypatch.setattr(loop, "measure", stand_in({"A": case["A"], "B": case["B"]}, clock))
    monkeypatch.setattr(loop, "time", clock)
    planted = case.get("cand_scenario_dir")
    if planted:  # the plan reads B's scenario (its tool) before the first round
        shutil.copytree(DATA / planted, planted)
    settings = RoundSettings(out=out, round_duration=case["round_duration"],
                             max_time=case["max_time"], planned_rounds=case["planned_rounds"],
                             min_effect_pct=case["min_effect_pct"], alpha=case["alpha"])
    run = ABRun(load_board("local"), (Side("A", "base", None, None),
                                      Side("B", "candidate", None,
                                           Path(planted) if planted else None)),
                [("", "idle")], load_thresholds(thresholds), settings, Console(quiet=True))
    run.replay() if case["mode"] == "replay" else run.run()
    return run


@pytest.mark.parametrize("name", sorted(CASES))
def test_ab_json_and_md_keep_their_bytes(name: str, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    run = ab_run(name, CASES[name], monkeypatch)
    written = doc.write(run, tmp_path / "written")
    assert (tmp_path / "written" / "ab.json").read_text() == \
        (EXPECTED / name / "ab.json").read_text()
    assert written == (EXPECTED / name / "ab.md").read_text() == markdown(run)
    schema = json.loads(doc.SCHEMA_FILE.read_text())
    jsonschema.validate(json.loads((tmp_path / "written" / "ab.json").read_text()), schema)


def test_the_committed_schema_is_the_models() -> None:
    assert json.loads(doc.SCHEMA_FILE.read_text()) == doc.json_schema(), \
        "run `make schema` and commit the result"


def test_an_exit_that_is_not_the_outcomes_is_refused() -> None:
    data = json.loads((EXPECTED / "replay-worse" / "ab.json").read_text())
    doc.ABDocument.model_validate(data)
    with pytest.raises(ValueError, match="exit 0 does not go with outcome worse"):
        doc.ABDocument.model_validate({**data, "exit": 0})
