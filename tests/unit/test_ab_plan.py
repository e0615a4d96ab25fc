"""The A/B plan is resolved before the first round: every usage error exits 2 without a board
minute, and the plan states P(same | unchanged), the time to a verdict, and when same is out of
reach at the calibration record's CV (issue 36, item 4)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from clirun import RunCli
from scipy import stats

from rtgate.ab import loop
from rtgate.stats import ab, oc


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


def test_the_plan_of_a_board_with_a_record_says_same_is_out_of_reach(rtgate_cli: RunCli,
                                                                     tmp_path: Path) -> None:
    # qemu-arm64's record: CV 0.52-0.56 at 20 rounds a side; no kernels needed for the plan.
    proc = rtgate_cli("ab", "--board", "qemu-arm64", "--round-duration", "20s", "--max-time",
                      "90m", "--min-effect-pct", "10", "--out", str(tmp_path), "--plan-only")
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stderr.split())
    assert "20 rounds a side planned (the calibration record of qemu-arm64)" in text
    assert text.count("P(same | unchanged) 0.00") == 2
    assert text.count("same is out of reach") == 2
    assert "n ≈ 2((c + z)·s / ln(1 + m))²" in text and "or a margin of about" in text
    assert "same within ×1.1 either way, B/A in [0.909, 1.1]" in text
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
