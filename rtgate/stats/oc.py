"""Operating characteristics of the A/B rule by simulation: how often it says same, worse or
better, and after how many rounds, when each key's per-round logs have a known spread.

The rule is replayed on whole arrays of simulated sequences at once (``decide_paths``), look by
look as ``rtgate.stats.ab.Sequential`` looks, so a plan's P(same | unchanged), its power and its
expected rounds are known before any round is measured. Pure: arrays in, arrays out."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from rtgate.stats import ab

UNKNOWN, SAME, WORSE, BETTER = 0, 1, 2, 3
TRIALS = 4000
SEED = 20261128


@dataclass(frozen=True)
class Characteristics:
    """Shares of simulated runs of one key ending in each outcome, and the rounds a side the
    decided ones took (the undecided ones run to the plan's end)."""

    same: float
    worse: float
    better: float
    unknown: float
    mean_rounds: float
    """Rounds a side until the key's decision, the cap's for undecided runs."""
    trials: int


def decide_paths(a: np.ndarray, b: np.ndarray, design: ab.Design, margin_log: float,
                 floor_sd: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Each path's first decision and the rounds a side it came at (0: never), for paths of
    per-round logs ``a`` and ``b`` (shape: paths × planned), the key's margin as a log ratio;
    ``floor_sd``: each path's own floor under the standard error's sd (its own bank's), else
    the design's."""
    paths, planned = a.shape
    outcome = np.full(paths, UNKNOWN)
    at = np.zeros(paths, dtype=int)
    bounds = design.boundaries(planned)
    for n in range(ab.MIN_ROUNDS, planned + 1):
        xa, xb = a[:, :n], b[:, :n]
        d = xb.mean(axis=1) - xa.mean(axis=1)
        ss = ((xa - xa.mean(axis=1, keepdims=True)) ** 2).sum(axis=1) \
            + ((xb - xb.mean(axis=1, keepdims=True)) ** 2).sum(axis=1)
        se = np.sqrt(ss / (2 * n - 2) * 2 / n)
        se = np.maximum(se, design.floor_se(n, n) if floor_sd is None
                        else floor_sd * math.sqrt(2 / n))
        c = bounds[n - ab.MIN_ROUNDS]
        low, high = d - c * se, d + c * se
        open_ = outcome == UNKNOWN
        same = open_ & (low >= -margin_log) & (high <= margin_log)
        decisive = n >= design.first_decisive
        worse = open_ & ~same & (low > 0) & decisive
        better = open_ & ~same & (high < 0) & decisive
        for mask, code in ((same, SAME), (worse, WORSE), (better, BETTER)):
            outcome[mask] = code
            at[mask] = n
    return outcome, at


def characteristics(outcome: np.ndarray, at: np.ndarray, planned: int) -> Characteristics:
    trials = len(outcome)
    share = {code: float(np.count_nonzero(outcome == code)) / trials
             for code in (UNKNOWN, SAME, WORSE, BETTER)}
    rounds = np.where(at > 0, at, planned)
    return Characteristics(share[SAME], share[WORSE], share[BETTER], share[UNKNOWN],
                           float(rounds.mean()), trials)


def normal(log_sd: float, effect: float, planned: int, design: ab.Design, margin: float,
           trials: int = TRIALS, seed: int = SEED) -> Characteristics:
    """The rule on normal per-round logs of spread ``log_sd``, B shifted by the ratio
    ``1 + effect``, the key's margin ``margin`` (a share: ×(1 + margin) either way)."""
    rng = np.random.default_rng(seed)
    a = rng.normal(0.0, log_sd, (trials, planned))
    b = rng.normal(math.log1p(effect), log_sd, (trials, planned))
    return characteristics(*decide_paths(a, b, design, math.log1p(margin)), planned)


def rounds_for(log_sd: float, change: float, boundary: float, z: float) -> float:
    """Rounds a side at which a look whose boundary is ``boundary`` puts the interval of a true
    ratio ``1 + change`` beyond no change (power) or an unchanged kernel's within a margin
    ``change`` (same) with probability Φ(z): n ≈ 2((c + z)·s / ln(1 + m))² — the start of a
    search, not a guarantee (it ignores the earlier looks and the spread's own noise)."""
    return 2 * ((boundary + z) * log_sd / math.log1p(change)) ** 2


def margin_for_same(log_sd: float, rounds: int, boundary: float, z: float = 1.645) -> float:
    """The margin (a share) that ``rounds_for`` would meet at ``rounds`` a side."""
    return math.expm1((boundary + z) * log_sd * math.sqrt(2 / rounds))


CONFIDENCE = 0.95
"""Of the bank's log-sd bound and of the simulated rates' Clopper-Pearson intervals."""
MAX_PLANNED = 20
"""The largest plan (rounds a side) ``search`` tries: beyond it a pull request waits hours."""


def log_sd_upper(log_sd: float, rounds: int, confidence: float = CONFIDENCE) -> float:
    """The one-sided upper confidence bound of a normal spread estimated from ``rounds``
    rounds: s·√(df / χ²_{1−confidence}(df)), df = rounds − 1 (a 24-round bank: s × 1.35)."""
    df = rounds - 1
    return log_sd * math.sqrt(df / float(stats.chi2.ppf(1 - confidence, df)))


def _clopper_pearson(events: int, trials: int, confidence: float) -> tuple[float, float]:
    ci = stats.binomtest(events, trials).proportion_ci(confidence, method="exact")
    return float(ci.low), float(ci.high)


@dataclass(frozen=True)
class BoundedRates:
    """The rule's operating characteristics at a plan, as bounds: simulated on normal logs of
    spread ``log_sd`` (a bank's upper bound), the standard error floored at the bank's own
    log-sd; each rate's Clopper-Pearson end on the simulated runs (the false alarms' never
    above the tail test's alpha), the stall test's share of alpha added to the tail test's
    false alarms (its permutation test holds its share)."""

    planned: int
    log_sd: float
    false_alarm_high: float
    same_low: float
    power_low: float
    effect: float
    trials: int


def bounds(log_sd: float, floor_sd: float, planned: int, alpha: float, margin: float,
           effect: float, stall_alpha: float = 0.0, trials: int = TRIALS,
           seed: int = SEED) -> BoundedRates:
    """The tail test's rates at ``alpha`` (its share of the key's) over ``planned`` rounds a
    side, true spread ``log_sd``, the floor ``floor_sd``, the margin and the effect shares."""
    design = ab.Design(alpha, floor_sd=floor_sd)
    aa = normal(log_sd, 0.0, planned, design, margin, trials, seed)
    hit = normal(log_sd, effect, planned, design, margin, trials, seed + 1)
    alarms = round((aa.worse + aa.better) * trials)
    # Never above the tail test's alpha: on normal logs the boundaries spend exactly alpha, and
    # the floor only shrinks |t| (|d| / max(se, floor) <= |d| / se).
    return BoundedRates(planned, log_sd,
                  min(1.0, min(alpha, _clopper_pearson(alarms, trials, CONFIDENCE)[1])
                      + stall_alpha),
                  _clopper_pearson(round(aa.same * trials), trials, CONFIDENCE)[0],
                  _clopper_pearson(round(hit.worse * trials), trials, CONFIDENCE)[0],
                  effect, trials)


@dataclass(frozen=True)
class PlanSearch:
    """The smallest plan whose bounds meet the targets, found from the formula's start."""

    start: float
    """n ≈ 2((c + z)·s / ln(1 + m))² at the bank's log-sd bound: where the search began."""
    boundary: float
    """The c in it: the last look's boundary of the plan the start rounds to."""
    log_sd_high: float
    needed: int | None
    at: BoundedRates
    """The bounds at ``needed``, else at the largest plan tried."""
    more_rounds: int | None
    """Bank rounds to record beyond the bank's so that its bound lets the largest plan meet the
    targets (if their spread stays the bank's); None when a plan was found or none can be."""
    note: str


def search(log_sd: float, rounds: int, alpha: float, margin: float, *, effect: float = 0.2,
           target_alpha: float = 0.01, target_power: float = 0.9, stall_alpha: float = 0.0,
           max_planned: int = MAX_PLANNED, trials: int = TRIALS) -> PlanSearch:
    """The smallest plan (rounds a side) whose false-alarm bound is at most ``target_alpha`` and
    power bound at ``effect`` at least ``target_power`` when the true spread is the bank's
    upper bound (``rounds`` banked rounds of log-sd ``log_sd``; the floor is the bank's log-sd;
    ``alpha`` the tail test's share of the key's), or why the bank cannot show one: "record N
    more rounds" when a larger bank could, or that none can when even the bank's point spread
    falls short at ``max_planned``."""
    high = log_sd_upper(log_sd, rounds)
    z = float(stats.norm.ppf(target_power))

    def at(sd: float, planned: int) -> BoundedRates:
        return bounds(sd, log_sd, planned, alpha, margin, effect, stall_alpha, trials)

    def meets(b: BoundedRates) -> bool:
        return b.false_alarm_high <= target_alpha and b.power_low >= target_power

    c = ab.boundaries(alpha, 8)[-1]
    start = rounds_for(high, effect, c, z)
    first = min(max(math.ceil(start), ab.MIN_ROUNDS), max_planned)
    c = ab.boundaries(alpha, first)[-1]
    start = rounds_for(high, effect, c, z)
    planned = min(max(math.ceil(start), ab.MIN_ROUNDS), max_planned)
    found = at(high, planned)
    if meets(found):
        while planned > ab.MIN_ROUNDS and meets(lower := at(high, planned - 1)):
            planned, found = planned - 1, lower
    else:
        while planned < max_planned and not meets(found):
            planned += 1
            found = at(high, planned)
    formula = (f"n ≈ 2((c + z)·s / ln(1 + m))² = 2(({c:.2f} + {z:.2f})·{high:.3g} / "
               f"ln {1 + effect:g})² = {start:.1f} rounds a side (s: the bank's log-sd "
               f"{log_sd:.3g} at its {100 * CONFIDENCE:g} % upper bound over {rounds} rounds)")
    if meets(found):
        return PlanSearch(start, c, high, planned, found, None,
                      f"{planned} rounds a side meet the bounds; {formula}")
    point = at(log_sd, max_planned)
    if not meets(point):
        return PlanSearch(start, c, high, None, found, None,
                      f"no bank can show it: even at the bank's own log-sd {log_sd:.3g} "
                      f"{max_planned} rounds a side give power ≥ {point.power_low:.2f} at "
                      f"+{100 * effect:g} % (false alarms ≤ {point.false_alarm_high:.4f}); "
                      f"{formula}")
    # The largest spread at which the largest plan still meets the targets, then the bank at
    # which the bound falls to it if the spread stays the bank's.
    lo, hi = log_sd, high
    for _ in range(10):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if meets(at(mid, max_planned)) else (lo, mid)
    need = rounds + 1
    while log_sd_upper(log_sd, need) > lo:
        need += 1
    return PlanSearch(start, c, high, None, found, need - rounds,
                  f"this bank cannot show it: record {need - rounds} more rounds ({need} in "
                  f"all, if their spread stays {log_sd:.3g}) and replay; at its bound "
                  f"{max_planned} rounds a side give power ≥ {found.power_low:.2f}; {formula}")


def log_sd_of_cv(cv: float) -> float:
    """The log-normal spread with this coefficient of variation."""
    return math.sqrt(math.log1p(cv * cv))


BIMODAL = 5 / 9
"""The bimodality coefficient of a uniform distribution: above it, more than one mode is likely
(SAS's rule; Pfister et al. 2013, Front. Psychol. 4:700)."""


def mode_check(logs: np.ndarray) -> tuple[bool, str]:
    """Whether a bank's per-round logs look like more than one boot mode, and what was found:
    Shapiro-Wilk's normality test (p < 0.05) or the bimodality coefficient (> 5/9). Weak on a
    bank of a few dozen rounds: a mode of 30 % of boots ×1.11 hides in it; that is why the rule's
    floor is always applied, not only when this says so."""
    n = len(logs)
    if n < 8:
        return False, f"not tested ({n} rounds; at least 8)"
    p = float(stats.shapiro(logs).pvalue)
    g = float(stats.skew(logs, bias=False))
    k = float(stats.kurtosis(logs, bias=False))
    bc = (g * g + 1) / (k + 3 * (n - 1) ** 2 / ((n - 2) * (n - 3)))
    found = p < 0.05 or bc > BIMODAL
    return found, (f"{'more than one mode or a non-normal spread' if found else 'one mode'}: "
                   f"Shapiro-Wilk p {p:.3g} on {n} rounds' logs, bimodality coefficient "
                   f"{bc:.2f} (> {BIMODAL:.3f} suggests two)")
