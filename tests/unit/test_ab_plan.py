"""The A/B plan is resolved before the first round: every usage error exits 2 without a board
minute, and the plan states P(same | unchanged), the time to a verdict, and when same is out of
reach at the calibration record's CV (issue 36, item 4)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml
from clirun import RunCli
from rich.console import Console
from scipy import stats

from rtgate import calibration, paths
from rtgate.ab import loop, plan
from rtgate.ab.settings import ABSettings, RoundSettings
from rtgate.board.base import MeasuredRun
from rtgate.board.spec import load_board
from rtgate.errors import RtgateError
from rtgate.gate.thresholds import flavor_of, load_thresholds
from rtgate.outcome import ABOutcome
from rtgate.result import load_result
from rtgate.stats import ab, oc

DATA_AB = Path(__file__).resolve().parents[1] / "data" / "ab"
TIMERLAT_THRESHOLDS = DATA_AB.parent / "timerlat" / "thresholds.yml"


def measured_nothing(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    calls: list[object] = []
    monkeypatch.setattr(loop, "measure", lambda *a, **k: calls.append(a) or 1 / 0)
    return calls


def test_no_minimum_effect_is_refused_before_any_round(rtgate_cli: RunCli, tmp_path: Path) -> None:
    # Before 2026-11-28 this measured a whole pair of rounds, then exited 2 (ab/plan.py ran
    # after the first pair).
    proc = rtgate_cli("ab", "--board", "local", "--scenarios", "idle", "--round-duration", "2s",
                      "--max-time", "60s", "--out", str(tmp_path))
    assert proc.returncode == 2, proc.stderr
    assert "no minimum effect" in proc.stderr and "local/stock/idle" in proc.stderr
    assert not (tmp_path / "A").exists() and not (tmp_path / "B").exists()


def test_a_cap_too_short_for_the_first_look_is_refused_before_any_round(
        rtgate_cli: RunCli, tmp_path: Path) -> None:
    proc = rtgate_cli("ab", "--board", "local", "--scenarios", "idle", "--round-duration", "2s",
                      "--min-effect-pct", "20", "--max-time", "12s", "--out", str(tmp_path))
    assert proc.returncode == 2, proc.stderr
    assert "allows 1 round(s) a side" in proc.stderr and "raise --max-time" in proc.stderr
    assert not (tmp_path / "A").exists()


def test_a_b_scenario_with_another_tool_is_refused_before_any_round(
        rtgate_cli: RunCli, tmp_path: Path) -> None:
    planted = tmp_path / "scenarios"
    planted.mkdir()
    (planted / "idle.yml").write_text("name: idle\ndescription: the same name, timerlat\n"
                                      "tool: timerlat\n")
    proc = rtgate_cli("ab", "--board", "local", "--scenarios", "idle", "--round-duration", "2s",
                      "--min-effect-pct", "20", "--max-time", "60s", "--out",
                      str(tmp_path / "out"), "--cand-scenario-dir", str(planted))
    assert proc.returncode == 2, proc.stderr
    assert "A measures with cyclictest, B with timerlat" in proc.stderr
    assert not (tmp_path / "out" / "A").exists()


JUDGED_AT_US = ("judged at the record's 1 µs: its bank was measured in whole µs, so each "
                "round's ns latencies are floored to it before judging")


def test_a_record_banked_in_us_judges_ns_rounds_floored_to_us(rtgate_cli: RunCli,
                                                              tmp_path: Path) -> None:
    """qemu-arm64's committed record (v1, banked 2026-11-25 in whole µs) and its `net` scenario
    measuring in ns (cyclictest -N, the default since): the plan floors the rounds to the
    record's µs and says so, one line a key (issue 40; before, exit 2 before any round)."""
    proc = rtgate_cli("ab", "--board", "qemu-arm64", "--round-duration", "20s", "--max-time",
                      "90m", "--min-effect-pct", "10", "--out", str(tmp_path), "--plan-only")
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stderr.split())
    assert text.count(JUDGED_AT_US) == 2 and "Re-bank" not in text
    assert text.count("its bank in whole µs") == 2
    assert not (tmp_path / "A").exists()


def test_the_plans_summary_says_where_rounds_are_floored(tmp_path: Path) -> None:
    """The printed plan's data (``--dry-run``, a bisect's step plan) carries the same line, for
    the keys it applies to only."""
    settings = ABSettings(
        board="local", base=None, cand=None, cand_scenario_dir=None, flavors=None,
        scenarios=("cpu", "idle"), thresholds=paths.THRESHOLDS, plan_only=True,
        rounds=RoundSettings(out=tmp_path, round_duration=2, max_time=600, min_effect_pct=50,
                             calibration=calibration.for_kind("local")))
    run, problems = loop.check(settings)
    problems.raise_found("the first round")
    assert run is not None
    keys = {k["key"]: k for k in plan.summary(run.resolve())["keys"]}
    assert JUDGED_AT_US in keys["local/stock/cpu"]["judged_at"]
    assert "judged_at" not in keys["local/stock/idle"]  # no record for the key: as measured
    assert "judged_at" not in keys["local/rt/cpu"]


def ns_banked(kind: str) -> calibration.CalibrationRecord:
    """The kind's committed record as if its bank had been measured in ns."""
    record = calibration.for_kind(kind)
    assert record is not None
    return record.model_copy(update={"keys": [k.model_copy(update={"resolution_us": 0.001})
                                              for k in record.keys]})


def qemu_plan(tmp_path: Path, record: calibration.CalibrationRecord,
              cand_scenarios: Path | None = None, flavors: tuple[str, ...] | None = None,
              scenarios: tuple[str, ...] | None = None, thresholds: Path = paths.THRESHOLDS
              ) -> list[str]:
    settings = ABSettings(
        board="qemu-arm64", base=None, cand=None, cand_scenario_dir=cand_scenarios,
        flavors=flavors, scenarios=scenarios, thresholds=thresholds, plan_only=True,
        rounds=RoundSettings(out=tmp_path, round_duration=20, max_time=5400,
                             min_effect_pct=10, calibration=record))
    run, problems = loop.check(settings)
    problems.raise_found("the first round")
    assert run is not None
    return run.resolve().describe()


def test_a_b_side_measuring_in_us_is_refused_by_a_record_banked_in_ns(tmp_path: Path) -> None:
    planted = tmp_path / "scenarios"
    planted.mkdir()
    net = yaml.safe_load((paths.SCENARIOS / "net.yml").read_text())
    net["cyclictest"] = {**net.get("cyclictest", {}), "nsecs": False}
    (planted / "net.yml").write_text(yaml.safe_dump(net))
    with pytest.raises(RtgateError, match="qemu-arm64/stock/net, side B: measures in whole µs, "
                                          "but the calibration record's bank for stock/net was "
                                          "measured in ns") as caught:
        qemu_plan(tmp_path / "out", ns_banked("qemu-arm64"), planted, ("stock",))
    assert caught.value.code == 2


def timerlat_plan(tmp_path: Path, record: calibration.CalibrationRecord,
                  cand_scenarios: Path | None = None) -> list[str]:
    """qemu-arm64's plan of rt `timerlat-net` (rtla -n, the default) with the timerlat budget of
    tests/data/timerlat, the record's keys renamed."""
    keyed = record.model_copy(update={"keys": [k.model_copy(update={"scenario": "timerlat-net"})
                                               for k in record.keys]})
    return qemu_plan(tmp_path, keyed, cand_scenarios, ("rt",), ("timerlat-net",),
                     TIMERLAT_THRESHOLDS)


def test_a_timerlat_keys_resolution_is_known_before_the_first_round(tmp_path: Path) -> None:
    """rtla timerlat says its unit in its scenario (timerlat.nsecs) as cyclictest does: side B
    in µs against a bank in ns is refused by the plan (exit 2), not found round by round
    (exit 3, before 2026-11-28); ns rounds against a bank in µs are floored, and say so."""
    planted = tmp_path / "scenarios"
    planted.mkdir()
    net = yaml.safe_load((paths.SCENARIOS / "timerlat-net.yml").read_text())
    net["timerlat"] = {**net["timerlat"], "nsecs": False}
    (planted / "timerlat-net.yml").write_text(yaml.safe_dump(net))
    with pytest.raises(RtgateError, match="qemu-arm64/rt/timerlat-net, side B: measures in "
                                          "whole µs, but the calibration record's bank for "
                                          "rt/timerlat-net was measured in ns") as caught:
        timerlat_plan(tmp_path / "out", ns_banked("qemu-arm64"), planted)
    assert caught.value.code == 2
    as_banked = " ".join(" ".join(timerlat_plan(tmp_path / "out", ns_banked("qemu-arm64"))).split())
    assert JUDGED_AT_US not in as_banked
    record = calibration.for_kind("qemu-arm64")
    assert record is not None
    floored = " ".join(" ".join(timerlat_plan(tmp_path / "out", record)).split())
    assert floored.count(JUDGED_AT_US) == 1
    assert not (tmp_path / "out" / "A").exists()


def test_sides_measured_at_two_resolutions_are_refused_without_a_record(tmp_path: Path) -> None:
    """No record to floor to: A in ns (rtla -n, the default) against B in whole µs (its
    scenario's nsecs: false) compares ns with ns cut down by up to 1 µs, the size of a margin on
    a single-digit tail: a usage error before the first round (exit 2), as two tools are."""
    planted = tmp_path / "scenarios"
    planted.mkdir()
    net = yaml.safe_load((paths.SCENARIOS / "timerlat-net.yml").read_text())
    net["timerlat"] = {**net["timerlat"], "nsecs": False}
    (planted / "timerlat-net.yml").write_text(yaml.safe_dump(net))
    empty = calibration.for_kind("qemu-arm64")
    assert empty is not None
    without = empty.model_copy(update={"keys": []})
    with pytest.raises(RtgateError, match="qemu-arm64/rt/timerlat-net: A measures in ns "
                                          r"\(cyclictest -N, rtla -n\), B in whole µs") as caught:
        timerlat_plan(tmp_path / "out", without, planted)
    assert caught.value.code == 2
    assert not (tmp_path / "out" / "A").exists()


def test_the_plan_of_a_board_with_a_record_says_same_is_out_of_reach(tmp_path: Path) -> None:
    # qemu-arm64's record: CV 0.52-0.56 at 20 rounds a side; no kernels needed for the plan.
    text = " ".join(" ".join(qemu_plan(tmp_path, ns_banked("qemu-arm64"))).split())
    assert text.count("its bank in ns (cyclictest -N, rtla -n)") == 2
    assert "20 rounds a side planned (the calibration record of qemu-arm64)" in text
    assert text.count("P(same | unchanged) 0.00") == 2
    assert text.count("same is out of reach") == 2
    assert "n ≈ 2((c + z)·s / ln(1 + m))²" in text and "or a margin of about" in text
    assert "same within ×1.1 either way, B/A in [0.909, 1.1]" in text
    # Its bank (27-28 rounds, less than one independent trial) says what it cannot show.
    assert text.count("the record's bank cannot show a plan: no bank can show it") == 2
    assert not (tmp_path / "A").exists()


def test_the_plan_without_a_record_shows_p_same_at_stated_cvs(rtgate_cli: RunCli,
                                                              tmp_path: Path) -> None:
    proc = rtgate_cli("ab", "--board", "rpi5", "--round-duration", "40s", "--max-time", "90m",
                      "--planned-rounds", "8", "--out", str(tmp_path), "--plan-only")
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stderr.split())
    assert "8 rounds a side planned (--planned-rounds)" in text
    assert text.count("no calibration record for this key") == 2
    assert "at a CV of CV 2 % 1.00" in text


@pytest.mark.parametrize(("cv", "low", "high"), [(0.02, 0.99, 1.0), (0.05, 0.08, 0.2),
                                                 (0.10, 0.0, 0.01)])
def test_p_same_at_the_rpi5_plan_falls_with_the_cv(cv: float, low: float, high: float) -> None:
    """The issue's table (rpi5 plan: 8 rounds a side, alpha 0.5 % a key, margin 10 %): P(same
    | unchanged) 99.96 % at CV 2 %, 13.3 % at 5 %, 0.03 % at 10 %."""
    c = oc.normal(oc.log_sd_of_cv(cv), 0.0, 8, ab.Design(0.005, spending=ab.POCOCK), 0.10)
    assert low <= c.same <= high


def two_mode_alarms(design: ab.Design, floored: bool, trials: int = 3000) -> int:
    """A/A false alarms of one key at the rpi5 plan when 30 % of boots land ×1.51 (round CV
    about 20 %), each trial's floor the log-sd of its own 24-round bank."""
    rng = np.random.default_rng(36)

    def logs(rounds: int) -> np.ndarray:
        mode = np.where(rng.random((trials, rounds)) < 0.3, np.log(1.51), 0.0)
        return mode + rng.normal(0, 0.03, (trials, rounds))

    a, b, bank = logs(8), logs(8), logs(24)
    outcome, _ = oc.decide_paths(a, b, design, np.log(1.1),
                                 floor_sd=bank.std(axis=1, ddof=1) if floored else None)
    return int(np.count_nonzero((outcome == oc.WORSE) | (outcome == oc.BETTER)))


def test_two_boot_modes_broke_rule_2_and_rule_3_holds_its_alpha() -> None:
    """Issue 36's audit: rule 2 (Pocock, no floor) alarmed at 2.2 % for a nominal 0.5 % a key
    when boots have two modes; rule 3 (O'Brien-Fleming, the bank's log-sd as the standard
    error's floor) must stay under it. Clopper-Pearson on 3000 fixed-seed trials."""
    old = two_mode_alarms(ab.Design(0.005, spending=ab.POCOCK), floored=False)
    new = two_mode_alarms(ab.Design(0.005), floored=True)
    assert stats.beta.ppf(0.025, old, 3000 - old + 1) > 0.005, old
    assert stats.beta.ppf(0.975, new + 1, 3000 - new) <= 0.005, new


def test_the_rounds_for_same_formula_and_its_margin_agree() -> None:
    n = oc.rounds_for(0.1, 0.1, 4.0, 1.645)
    assert n == pytest.approx(2 * ((4.0 + 1.645) * 0.1 / 0.0953102) ** 2)
    assert oc.margin_for_same(0.1, round(n), 4.0) == pytest.approx(0.1, rel=0.01)


def test_a_round_at_another_resolution_than_the_bank_is_incomplete(tmp_path: Path) -> None:
    """What the plan cannot see: a round measured otherwise than its scenario asked (a
    cyclictest without -N), or a replayed result claiming another unit. The captured local
    rounds (whole µs, tests/data/ab/idle) replayed as the publisher does with a record whose
    bank for the key is in ns: the record says nothing of them, no verdict (exit 3)."""
    data = Path(__file__).resolve().parents[1] / "data" / "ab" / "idle"
    for side in "AB":
        for n in range(1, 4):
            home = tmp_path / side / f"round-{n}" / "running" / "idle"
            home.mkdir(parents=True)
            shutil.copy(data / f"r{n}" / "result.json", home)
    flavor = flavor_of(load_result(data / "r1" / "result.json"))
    local = calibration.for_kind("local")
    assert local is not None

    def replay(resolution_us: float) -> loop.ABRun:
        key = local.keys[0].model_copy(update={"flavor": flavor, "scenario": "idle",
                                               "resolution_us": resolution_us})
        settings = RoundSettings(out=tmp_path, round_duration=4, max_time=600,
                                 planned_rounds=3, min_effect_pct=100, alpha=0.2,
                                 calibration=local.model_copy(update={"keys": [key]}))
        run = loop.ABRun(load_board("local"), (loop.Side("A", "base", None, None),
                                               loop.Side("B", "candidate", None, None)),
                         [("", "idle")], load_thresholds(DATA_AB / "thresholds.yml"), settings,
                         Console(quiet=True))
        run.replay()
        return run

    run = replay(0.001)
    assert run.outcome is ABOutcome.INCOMPLETE and run.exit == 3
    assert run.why == (f"base round 1 (local/{flavor}/idle) measured in whole µs, its "
                       "calibration record's bank in ns (cyclictest -N, rtla -n): the record's "
                       "error rates, floor and stall threshold do not hold for it")
    assert replay(1.0).outcome is not ABOutcome.INCOMPLETE


def test_a_round_measured_otherwise_than_its_scenario_is_incomplete(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The plan floors ns rounds to the µs record, its scenario asking for ns (idle's
    cyclictest -N); a round arrives in whole µs (a cyclictest without -N): the plan was not
    made for it, no verdict (exit 3). The measurement is a captured µs round (tests/data/ab)."""
    data = DATA_AB / "idle" / "r1" / "result.json"
    flavor = flavor_of(load_result(data))
    local = calibration.for_kind("local")
    assert local is not None
    key = local.keys[0].model_copy(update={"flavor": flavor, "scenario": "idle"})
    assert key.resolution_us == 1.0

    def measured(spec: object, kernel: object, scenario: str, duration: int, out: Path,
                 **_: object) -> MeasuredRun:
        out.mkdir(parents=True, exist_ok=True)
        shutil.copy(data, out / "result.json")
        return MeasuredRun(load_result(data), out / "result.json", out / "raw")

    monkeypatch.setattr(loop, "measure", measured)
    settings = RoundSettings(out=tmp_path, round_duration=2, max_time=600, planned_rounds=3,
                             min_effect_pct=100, alpha=0.2,
                             calibration=local.model_copy(update={"keys": [key]}))
    run = loop.ABRun(load_board("local"), (loop.Side("A", "base", None, None),
                                           loop.Side("B", "candidate", None, None)),
                     [("", "idle")], load_thresholds(DATA_AB / "thresholds.yml"), settings,
                     Console(quiet=True))
    assert run.resolve().keys[("local", flavor, "idle")].floored_to_us == 1.0
    run.run()
    assert run.outcome is ABOutcome.INCOMPLETE and run.exit == 3
    assert run.why == (f"base round 1 (local/{flavor}/idle) measured in whole µs, its "
                       "scenario in ns (cyclictest -N, rtla -n): the plan's use of the calibration "
                       "record does not hold for it")


def test_a_plan_read_from_an_old_record_says_its_rates_are_no_bounds() -> None:
    """A record replayed before the bounds (rule 2, e.g. qemu-arm64's until 2026-11-28) must not
    read as calibrated for this rule: the plan says what it is."""
    record = calibration.load(Path(__file__).parents[1] / "data" / "report" / "calibration" /
                              "qemu-x86-tcg.json")
    old, new = record.keys  # rt: no bounds; stock: bounds, no plan, "record 24 more rounds"
    said = plan._bank_says(old)
    assert len(said) == 1 and "older rule's replay of 40 rounds, without bounds" in said[0]
    assert plan._bank_says(new) == [f"  the record's bank cannot show a plan: {new.needed_note}"]
    assert plan._bank_says(new.model_copy(update={"rounds_needed": 9})) == []
