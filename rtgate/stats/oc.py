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


def rounds_for_same(log_sd: float, margin: float, boundary: float, z: float = 1.645) -> float:
    """Rounds a side at which an unchanged kernel's interval fits the margin about 90 % of the
    time at a look whose boundary is ``boundary``: n ≈ 2((c + z)·s / ln(1 + m))² — the start of
    a search, not a guarantee (it ignores the earlier looks and the spread's own noise)."""
    return 2 * ((boundary + z) * log_sd / math.log1p(margin)) ** 2


def margin_for_same(log_sd: float, rounds: int, boundary: float, z: float = 1.645) -> float:
    """The margin (a share) that ``rounds_for_same`` would meet at ``rounds`` a side."""
    return math.expm1((boundary + z) * log_sd * math.sqrt(2 / rounds))


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
