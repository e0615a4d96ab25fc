"""rtgate calibrate's replay on recorded rounds (tests/data/ab): planted effects do what they
say, the gate's decision code is what is replayed, and a rate's interval is the bank's, not the
resamples'."""

from __future__ import annotations

import tarfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from rtgate.ab import calibrate
from rtgate.errors import InputError
from rtgate.gate.thresholds import load_thresholds
from rtgate.outcome import Comparison
from rtgate.result import load_result
from rtgate.stats import ab

DATA = Path(__file__).resolve().parents[1] / "data" / "ab"
KEY = ("local", "stock", "idle")

ROOT = Path(__file__).resolve().parents[2]


def recorded(*names: str) -> list[ab.Round]:
    return [ab.Round.of(load_result(p)) for name in names
            for p in sorted((DATA / name).glob("r*/result.json"))]


def bank(*names: str, pct: float = 50) -> calibrate.Bank:
    return calibrate.Bank({KEY: recorded(*names)}, {}, {KEY: ab.Margin(pct / 100)}, 4, "test",
                          True)


def test_a_planted_shift_scales_every_metric_and_stalls_reach_the_tail() -> None:
    r = recorded("idle")[0]
    up = calibrate.scaled(r, 1.2)
    for m in ("p99", "p99.9"):
        assert up.metric(m) == pytest.approx(1.2 * r.metric(m), abs=1)
    assert up.samples == r.samples and up.counts.sum() == r.counts.sum()
    stalled = calibrate.stalled(r, np.random.default_rng(1), 20)
    assert stalled.counts.sum() == r.counts.sum() + 1  # no block maxima: one stall sample
    assert stalled.values_us.max() == calibrate.STALL_US
    assert list(stalled.values_us) == sorted(stalled.values_us)
    # With 4 threads x 40 blocks, one block in 20 stalls: 8 blocks at the stall's latency.
    blocked = replace(r, blocks={t: np.full(40, 50.0) for t in range(4)}, summaries={})
    hit = calibrate.stalled(blocked, np.random.default_rng(1), 20)
    assert sum(int((b == calibrate.STALL_US).sum()) for b in hit.blocks.values()) == 8
    assert hit.counts.sum() == r.counts.sum() + 8


def test_the_interval_is_clopper_pearson_on_the_banks_independent_trials() -> None:
    """No false alarm in 2000 resamples of 24 rounds, trials of 6 a side: two independent
    trials, so the upper bound is Clopper-Pearson's for 0 of 2 (84 %), not of 0 of 2000."""
    r = calibrate.rate(0, 2000, 24, 6)
    assert (r.events, r.trials, r.value, r.low) == (0, 2, 0.0, 0.0)
    assert r.high == pytest.approx(1 - 0.025 ** 0.5)
    many = calibrate.rate(30, 1000, 1200, 6)  # 100 independent trials, 3 % of them
    ci = stats.binomtest(3, 100).proportion_ci(0.95, method="exact")
    assert (many.events, many.trials) == (3, 100)
    assert (many.low, many.high) == pytest.approx((ci.low, ci.high))


def test_the_replay_is_the_gates_sequential_decision() -> None:
    """One resampled trial is the loop's Sequential on the drawn rounds: the same decision as
    looking at those rounds by hand, look by look, stopping at the first decided one."""
    b = bank("idle", "idle-again")
    rng = np.random.default_rng(5)
    got = calibrate.trial(b, b.rounds, 5, 0.2, {KEY: None}, rng)
    draw = np.random.default_rng(5).permutation(12)[:10]
    rounds = b.rounds[KEY]
    a_side, b_side = [rounds[i] for i in draw[:5]], [rounds[i] for i in draw[5:]]
    seq = ab.Sequential(0.2, 5)
    for n in range(3, 6):
        seq.look(n, [ab.KeyRounds(KEY, a_side[:n], b_side[:n], ab.Margin(0.5))
                     for _ in [0] if KEY not in seq.final])
    assert got[KEY] == (seq.final[KEY].outcome if KEY in seq.final else Comparison.UNKNOWN)


def test_recorded_a_a_rounds_rarely_alarm_and_a_planted_load_is_detected() -> None:
    """tests/data/ab: 12 A/A rounds (idle, idle-again) replayed 200 times at 3 rounds a side,
    and the same with the planted FIFO load's rounds as side B."""
    aa = bank("idle", "idle-again")
    counts = calibrate.rates(aa, aa.rounds, 3, 0.05, {KEY: None}, 200, 3)[KEY]
    assert calibrate.false_alarms(counts) <= 0.05 * 200 * 2, counts
    loaded = {KEY: recorded("idle-loaded") * 2}
    hits = calibrate.rates(aa, loaded, 3, 0.05, {KEY: None}, 200, 3)[KEY]
    assert hits[Comparison.WORSE] >= 0.8 * 200, hits


def test_a_banked_bank_keeps_its_own_date_and_round_times(tmp_path: Path) -> None:
    """`rtgate calibrate --rounds 0` on an unpacked bank: file times are the unpacking's, so the
    order, the rounds' board times and the record's date come from the results' own end times
    (before 2026-11-28 a re-replay dated the record now and timed rounds by file mtimes)."""
    with tarfile.open(ROOT / "benchmarks" / "records" / "banks" / "local.tar.xz") as tar:
        tar.extractall(tmp_path)  # the repository's own bank
    out = next(p.parent for p in tmp_path.rglob("A") if p.is_dir())
    got = calibrate.read_bank(out, 15, load_thresholds(ROOT / "thresholds.yml"), 10,
                              boards=ROOT / "bench" / "boards")
    ends = [load_result(p).end for p in out.glob("[AB]/round-*/*/*/result.json")]
    assert got.measured_at is not None
    assert got.measured_at.strftime("%Y-%m-%d") == max(e for e in ends if e)[:10] < "2026-11-28"
    walls = [w for ws in got.wall_s.values() for w in ws]
    assert walls and all(w >= 15 for w in walls), walls[:5]
    # The 2026-11-25 bank is in whole µs: a record made from it says so (issue 40).
    assert set(got.resolutions.values()) == {1.0}


def test_a_bank_mixing_us_and_ns_rounds_of_a_key_is_refused(tmp_path: Path) -> None:
    """The µs rounds of before -N beside ns rounds of after: a record would describe neither."""
    for n, (side, source) in enumerate([("A", "idle/r1"), ("B", "idle/r2"), ("A", "idle/r3")]):
        home = tmp_path / side / f"round-{n + 1}" / "running" / "idle"
        home.mkdir(parents=True)
        result = load_result(DATA / source / "result.json")
        if n == 2:  # the same round as a -N run would state it
            result = result.model_copy(update={"resolution_us": 0.001})
        result.write(home / "result.json")
    with pytest.raises(InputError, match=r"local/\w+/idle: the bank mixes rounds in whole µs "
                                         r"and in ns \(cyclictest -N\)") as caught:
        calibrate.read_bank(tmp_path, 4, load_thresholds(DATA / "thresholds.yml"), 50,
                            boards=ROOT / "bench" / "boards")
    assert caught.value.path is not None and "round-3" in caught.value.path
