"""Plans and claims honest about a calibration bank's size (issue 36, item 3): the record's
false-alarm rate is an upper bound and its power a lower one, from the rule simulated at the
chi-square upper bound of the bank's log-sd; the plan is the smallest whose bounds meet the
targets, searched from n ≈ 2((c + z)·s / ln(1 + m))², else "record N more rounds"; a bank
smaller than one independent trial says so."""

from __future__ import annotations

import math

import pytest
from scipy import stats

from rtgate.ab import calibrate
from rtgate.outcome import Comparison
from rtgate.stats import ab, oc

# One key at the default 1 %: the tail test's share and the stall test's.
TAIL, STALL = 0.0075, 0.0025


def test_the_log_sd_bound_is_the_chi_square_one() -> None:
    # A 24-round bank knows its spread to within a factor of about 1.35 (one-sided 95 %).
    high = oc.log_sd_upper(0.1, 24)
    assert high == pytest.approx(0.1 * math.sqrt(23 / stats.chi2.ppf(0.05, 23)))
    assert 1.3 < high / 0.1 < 1.4
    assert oc.log_sd_upper(0.1, 400) / 0.1 < 1.07


def test_a_plan_from_a_low_draw_of_the_spread_holds_its_power_only_with_the_bound() -> None:
    """A 24-round bank whose log-sd came out at its 10th percentile (true 0.06, estimated
    0.06 × 0.83): the plan found at the point estimate — how rounds were planned until
    2026-11-28 — gives less than 90 % power at +20 % on the true spread; the plan found at the
    bank's upper bound gives at least 90 %."""
    true = 0.06
    s = true * math.sqrt(stats.chi2.ppf(0.10, 23) / 23)
    point = oc.search(s, 10_000, TAIL, 0.1, stall_alpha=STALL)  # a bank as good as exact
    honest = oc.search(s, 24, TAIL, 0.1, stall_alpha=STALL)
    assert point.needed is not None and honest.needed is not None
    assert honest.needed > point.needed
    power = {name: oc.normal(true, 0.2, n, ab.Design(TAIL, floor_sd=s), 0.1, trials=8000).worse
             for name, n in (("point", point.needed), ("bound", honest.needed))}
    assert power["point"] < 0.9 <= power["bound"], power
    # The search starts at the formula and says so.
    assert "n ≈ 2((c + z)·s / ln(1 + m))²" in honest.note and "24 rounds" in honest.note
    assert honest.start == pytest.approx(
        oc.rounds_for(honest.log_sd_high, 0.2, honest.boundary, stats.norm.ppf(0.9)))


def test_a_bank_too_small_to_show_a_plan_asks_for_more_rounds() -> None:
    """At log-sd 0.11 the 20-round plan meets the targets on the true spread, but a 24-round
    bank's bound (×1.35) does not: record N more rounds, N such that the bound then would."""
    got = oc.search(0.11, 24, TAIL, 0.1, stall_alpha=STALL)
    assert got.needed is None and got.more_rounds is not None and got.more_rounds > 0
    assert f"this bank cannot show it: record {got.more_rounds} more rounds" in got.note
    bigger = oc.search(0.11, 24 + got.more_rounds, TAIL, 0.1, stall_alpha=STALL)
    assert bigger.needed is not None and bigger.needed <= oc.MAX_PLANNED


def test_a_spread_no_bank_can_show_says_so() -> None:
    got = oc.search(0.6, 46, TAIL, 0.1, stall_alpha=STALL)  # local's VM bank: CV about 0.6
    assert got.needed is None and got.more_rounds is None
    assert got.note.startswith("no bank can show it")
    assert got.at.false_alarm_high <= TAIL + STALL


def test_the_false_alarm_bound_never_exceeds_the_keys_alpha_on_normal_logs() -> None:
    b = oc.bounds(0.5, 0.2, 8, TAIL, 0.1, 0.2, STALL)
    assert b.false_alarm_high <= TAIL + STALL


def test_a_bank_smaller_than_one_trial_has_no_interval_and_says_so() -> None:
    """qemu-arm64's 27 rounds against trials of 20 a side: until 2026-11-28 it reported "1
    independent trial" and rounded its events (local.json: "events 1/1" beside 0.506)."""
    r = calibrate.rate(1012, 2000, 27, 20)
    assert (r.low, r.high, r.trials) == (0.0, 1.0, 1)
    assert r.events == pytest.approx(0.506) and r.value == pytest.approx(0.506)
    assert "fewer than one independent trial's 40" in r.method


def test_a_replay_beyond_the_model_is_what_the_record_claims() -> None:
    model = oc.bounds(0.05, 0.05, 8, TAIL, 0.1, 0.2, STALL)
    search = oc.search(0.05, 24, TAIL, 0.1, stall_alpha=STALL)
    aa = dict.fromkeys(Comparison, 0) | {Comparison.WORSE: 30, Comparison.SAME: 900}
    hit = dict.fromkeys(Comparison, 0) | {Comparison.WORSE: 1000}
    got = calibrate.checked(model, search, aa, hit, 2000, 48)
    assert got.false_alarm_high == pytest.approx(0.015)
    assert model.false_alarm_high < 0.015
    assert got.power_low == pytest.approx(0.5)
    assert got.model_check.startswith("the replay contradicts the normal model")
    calm = calibrate.checked(model, search, dict.fromkeys(Comparison, 0)
                             | {Comparison.SAME: 2000}, dict.fromkeys(Comparison, 0)
                             | {Comparison.WORSE: 2000}, 2000, 48)
    assert calm.false_alarm_high == model.false_alarm_high
    assert calm.model_check.startswith("the replay agrees")


def test_a_bank_smaller_than_one_trial_checks_nothing() -> None:
    """The review of 2026-11-28: a 6-round bank's resampled sides share rounds, so its replay
    "agreed" with the model whatever the board did; it is unchecked, said so."""
    model = oc.bounds(0.05, 0.05, 8, TAIL, 0.1, 0.2, STALL)
    search = oc.search(0.05, 24, TAIL, 0.1, stall_alpha=STALL)
    quiet = dict.fromkeys(Comparison, 0) | {Comparison.SAME: 2000}
    hit = dict.fromkeys(Comparison, 0) | {Comparison.WORSE: 2000}
    got = calibrate.checked(model, search, quiet, hit, 2000, 15)
    assert got.model_check.startswith("unchecked: the bank's 15 rounds are fewer than one "
                                      "independent trial's 16")
    assert calibrate.checked(model, search, quiet, hit, 2000, 16).model_check.startswith(
        "the replay agrees")
