"""A/B decisions: is the candidate's latency tail the same as the base's, worse, better, or unknown?

The unit of replication is the ROUND: one boot and run, one result.json. Blocks and samples of
one run share that boot's state (caches, IRQ placement, the host's mood) and are not independent
replicates of a kernel, so nothing here treats them as such:

- each round is summarised by numbers of its own (its p99 and p99.9 from the exact histogram, the
  90th percentile of its block maxima), and intervals and tests are over those per-round numbers
  (Welch: the one-sided t-test of each metric is its reported interval's statistic);
- the block-maxima distributions are compared with a rank test (Mann-Whitney U), a one-sided
  Kolmogorov-Smirnov test and a k-sample Anderson-Darling test (the rank test misses a change of
  spread, KS is weak on 1 µs-discrete data, AD weighs the tails), each statistic computed on the
  blocks pooled per side but its p-value taken by permuting whole ROUNDS between the sides
  (scipy.stats.permutation_test on round labels): exact under "A and B are the same kernel"
  whatever the distribution and however dependent a round's blocks are.

A per-round histogram quantile counts only when its exact binomial order-statistic interval exists
(enough samples for that quantile) and lies below the histogram limit; its between-round spread
carries its within-round sampling error, so the interval over rounds needs nothing more.

Decisions, per board × flavor × scenario (a "key"), all holding together at the family-wise rate
``alpha`` over every key, metric, thread and test of one check:

- *worse*: some one-sided test "B is higher" rejects after Holm's correction over all tests of the
  family (statsmodels ``multipletests``), unless the key is *same*;
- *same*: every metric's interval lies within ± ``min_effect_us`` (equivalence, TOST at the
  Bonferroni share of alpha: a change certified smaller than the minimum worth reporting is no
  regression, whatever a test says);
- *better*: no test rejects, some interval lies wholly below zero;
- *unknown*: anything else, including too few rounds: measure more.

The effect reported (``headline``) is Δ p99.9: the mean over B's rounds of each round's p99.9
minus the same over A's rounds, in µs, with its simultaneous (Bonferroni over every interval of
the family) two-sided Welch interval at confidence 1 - 2·alpha/m.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import stats
from statsmodels.stats.multitest import multipletests

from rtgate.outcome import Comparison
from rtgate.result import Result

Key = tuple[str, str, str]

# Per-round summaries: name -> quantile of the round's histogram (all threads together).
HIST_QUANTILES = {"p99": 0.99, "p99.9": 0.999}
BLOCK_METRIC = "block max p90"
BLOCK_QUANTILE = 0.9
HEADLINE = "p99.9"
EFFECT_REPORTED = (
    "Δ p99.9: the mean over the candidate's rounds of each round's p99.9 (from its exact "
    "histogram) minus the same over the baseline's rounds, in µs, with its simultaneous "
    "(Bonferroni) Welch interval over rounds")
# Welch's interval needs two rounds a side; three is the least that says anything of the spread.
MIN_ROUNDS = 3
# Round-label permutations are enumerated when there are at most this many, else sampled (the
# p-value (k+1)/(R+1) of a sampled test stays valid, only coarser).
EXACT_PERMUTATIONS = 20_000
SAMPLED_PERMUTATIONS = 9_999
# The sampled permutations are seeded: the same inputs give the same decision.
SEED = 20260101


@dataclass(frozen=True)
class Round:
    """One round's data: its merged 1 µs histogram and per-thread block maxima."""

    run_id: str
    samples: int
    values_us: np.ndarray
    """Ascending latencies (µs) of the histogram's non-empty bins, all threads together."""
    counts: np.ndarray
    overflows: int
    limit_us: int | None
    """Histogram limit; None when the round has no histogram."""
    blocks: dict[int, np.ndarray] = field(default_factory=dict)
    """Block maxima (µs) per thread number, for threads that recorded them."""

    @classmethod
    def of(cls, result: Result) -> Round:
        merged: dict[int, int] = {}
        overflows, limits = 0, set()
        has_histogram = bool(result.threads) and all(t.histogram for t in result.threads)
        for thread in result.threads if has_histogram else []:
            assert thread.histogram is not None
            limits.add(thread.histogram.limit_us)
            overflows += thread.histogram.overflows
            for value, count in thread.histogram.buckets:
                merged[value] = merged.get(value, 0) + count
        values = np.array(sorted(merged), dtype=float)
        return cls(
            run_id=result.run_id, samples=result.totals.samples, values_us=values,
            counts=np.array([merged[int(v)] for v in values], dtype=np.int64),
            overflows=overflows, limit_us=min(limits) if limits else None,
            blocks={t.thread: np.asarray(t.blocks.maxima_us, dtype=float)
                    for t in result.threads if t.blocks and t.blocks.maxima_us})


@dataclass(frozen=True)
class RoundQuantile:
    value_us: float
    low_us: float
    high_us: float
    """The exact binomial order-statistic interval of the quantile within the round."""


def round_quantile(r: Round, q: float, confidence: float) -> RoundQuantile | None:
    """The round's q-quantile (the ⌈q·n⌉-th smallest sample) with its distribution-free interval
    [x_(l), x_(u)], l and u from the binomial(n, q) distribution; None when the histogram is
    missing, too few samples make l < 1 or u > n, or x_(u) overflowed the histogram."""
    n = int(r.counts.sum()) + r.overflows
    if r.limit_us is None or n == 0:
        return None
    tail = (1 - confidence) / 2
    low = int(stats.binom.ppf(tail, n, q))
    high = int(stats.binom.ppf(1 - tail, n, q)) + 1
    point = max(1, math.ceil(q * n))
    if low < 1 or high > n:
        return None
    cumulative = np.cumsum(r.counts)
    at = np.searchsorted(cumulative, [low, point, high])  # first bin holding each order statistic
    if at[-1] >= len(r.values_us):
        return None
    lo, value, hi = r.values_us[at]
    return RoundQuantile(float(value), float(lo), float(hi))


def block_p90(r: Round) -> float | None:
    """The round's 90th percentile of block maxima, all threads together (an observed value)."""
    if not r.blocks:
        return None
    pooled = np.concatenate(list(r.blocks.values()))
    return float(np.quantile(pooled, BLOCK_QUANTILE, method="inverted_cdf"))


@dataclass(frozen=True)
class KeyRounds:
    """One key's rounds: A (base) and B (candidate), and the budget's A/B parameters."""

    key: Key
    a: Sequence[Round]
    b: Sequence[Round]
    min_effect_us: float
    min_samples: int | None = None


@dataclass(frozen=True)
class Effect:
    metric: str
    estimate_us: float
    low_us: float
    high_us: float
    confidence: float
    a_mean_us: float
    b_mean_us: float
    rounds: tuple[int, int]


@dataclass(frozen=True)
class TestResult:
    name: str
    statistic: float
    p: float
    p_adjusted: float = math.nan
    rejected: bool = False


@dataclass(frozen=True)
class Decision:
    key: Key
    outcome: Comparison
    headline: Effect | None
    effects: list[Effect]
    tests: list[TestResult]
    rounds: tuple[int, int]
    min_effect_us: float
    alpha: float
    reasons: list[str]


@dataclass
class _Plan:
    """One key's per-round numbers and tests before the family-wide correction."""

    comparison: KeyRounds
    metrics: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    tests: list[TestResult] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)


def _permutations(n_a: int, n_b: int) -> float:
    return np.inf if math.comb(n_a + n_b, n_a) <= EXACT_PERMUTATIONS else SAMPLED_PERMUTATIONS


def _no_spread(a: np.ndarray, b: np.ndarray) -> bool:
    """Every round of each side agrees to the µs (1 µs-discrete data do that). Welch's t is 0/0
    or infinite there: its test gives no evidence (p = 1), and the interval is the difference
    itself, with no spread to widen it."""
    return bool(np.ptp(a) == 0 and np.ptp(b) == 0)


def _round_test(name: str, b: np.ndarray, a: np.ndarray) -> TestResult:
    """One-sided Welch t-test of the mean per-round value: is B higher? The same statistic as the
    metric's reported interval. Not a permutation test: with the rounds a gate affords, the
    smallest p-value a permutation of rounds can give (1/924 at 6 rounds a side; 1/(n + 1) once
    sampled) lies above every Holm threshold of a gate's family at a look's share of alpha, so
    such a test could never reject (measured: a candidate 1 s worse in every round stayed
    unknown). Rounds with no spread on either side give no evidence (p = 1)."""
    label = f"{name}: mean of rounds (Welch's t over rounds)"
    if _no_spread(a, b):
        return TestResult(label, 0.0, 1.0)
    res = stats.ttest_ind(b, a, equal_var=False, alternative="greater")
    return TestResult(label, float(res.statistic), float(res.pvalue))


class _PooledRounds:
    """One thread's block maxima, round by round, tabulated once on the pooled sorted values so
    that every statistic of a split of the rounds into two sides (B's first) is a sum of
    per-round tables: all round-label permutations are evaluated at once with numpy, and each
    gives exactly what scipy's function gives on the pooled blocks of that split (rank: sum of
    pooled midranks; KS: the ECDFs; AD: scipy's ``_anderson_ksamp_midrank`` and standardisation;
    the sign: ``np.quantile`` of the split's blocks)."""

    def __init__(self, rounds: list[np.ndarray]) -> None:
        z = np.sort(np.concatenate(rounds))
        self.zstar = np.unique(z)
        self.counts = np.array([np.searchsorted(np.sort(r), self.zstar, "right")
                                - np.searchsorted(np.sort(r), self.zstar, "left")
                                for r in rounds], dtype=float)  # round × distinct value
        self.sizes = self.counts.sum(axis=1)
        self.total = self.counts.sum(axis=0)
        n = len(z)
        left = np.searchsorted(z, self.zstar, "left")
        self.midrank = left + (self.total + 1) / 2  # scipy.stats.rankdata's average rank
        # Anderson-Darling's (Scholz & Stephens) terms that depend on the pooled values only.
        self.lj = 1.0 if n == self.zstar.size else self.total
        self.bj = left + self.lj / 2.0
        hs_cs = (1.0 / np.arange(n - 1, 1, -1)).cumsum()
        self.h = hs_cs[-1] + 1 if n > 2 else math.nan
        self.g = (hs_cs / np.arange(2, n)).sum()
        self.n = n

    def _sides(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Value counts and sizes of the side made of rounds ``x`` (…, k) and of the rest."""
        member = np.zeros((*x.shape[:-1], len(self.sizes)))
        np.put_along_axis(member, x.astype(int), 1.0, axis=-1)
        cx = member @ self.counts
        nx = member @ self.sizes
        return cx, self.total - cx, nx, self.n - nx

    def rank(self, x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
        cx, _, nx, ny = self._sides(x)
        u = (cx * self.midrank).sum(axis=-1) - nx * (nx + 1) / 2
        return u / (nx * ny)

    def ks(self, x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
        cx, cy, nx, ny = self._sides(x)
        cddiffs = np.cumsum(cx, axis=-1) / nx[..., None] - np.cumsum(cy, axis=-1) / ny[..., None]
        return np.clip(-cddiffs.min(axis=-1), 0, 1)

    def ad(self, x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
        """Anderson-Darling's k-sample statistic (midrank), signed by which side's 90th
        percentile is higher: AD sees any change (spread too); the sign keeps the test one-sided
        for the gate. Constant (0) when every block of every round is the same value."""
        cx, cy, nx, ny = self._sides(x)
        if self.zstar.size < 2:
            return np.zeros(nx.shape)
        n, lj, bj = self.n, self.lj, self.bj
        a2 = np.zeros(nx.shape)
        for c, size in ((cx, nx), (cy, ny)):
            mij = np.cumsum(c, axis=-1) - c / 2.0
            inner = lj / float(n) * (n * mij - bj * size[..., None]) ** 2 \
                / (bj * (n - bj) - n * lj / 4.0)
            a2 += inner.sum(axis=-1) / size
        a2 *= (n - 1.0) / n
        k, h, g = 2, self.h, self.g
        big_h = 1.0 / nx + 1.0 / ny
        a = (4 * g - 6) * (k - 1) + (10 - 6 * g) * big_h
        b = (2 * g - 4) * k**2 + 8 * h * k + (2 * g - 14 * h - 4) * big_h - 8 * h + 4 * g - 6
        c = (6 * h + 2 * g - 2) * k**2 + (4 * h - 4 * g + 6) * k + (2 * h - 6) * big_h + 4 * h
        d = (2 * h + 6) * k**2 - 4 * h * k
        sigmasq = (a * n**3 + b * n**2 + c * n + d) / ((n - 1.0) * (n - 2.0) * (n - 3.0))
        shift = self._p90(cx, nx) - self._p90(cy, ny)
        return np.sign(shift) * (a2 - (k - 1)) / np.sqrt(sigmasq)

    def _p90(self, c: np.ndarray, size: np.ndarray) -> np.ndarray:
        """np.quantile(side's blocks, 0.9) for every split: splits of one size at once, their
        sorted blocks rebuilt from the value counts."""
        flat_c, flat_n = c.reshape(-1, c.shape[-1]).astype(int), size.reshape(-1).astype(int)
        out = np.empty(len(flat_n))
        for m in np.unique(flat_n):
            rows = np.flatnonzero(flat_n == m)
            blocks = np.repeat(np.tile(self.zstar, len(rows)), flat_c[rows].ravel())
            out[rows] = np.quantile(blocks.reshape(len(rows), m), BLOCK_QUANTILE, axis=1)
        return out.reshape(size.shape)


# Statistics on the blocks pooled per side: B's blocks first, so "greater" means B is worse.
_BLOCK_TESTS = {"rank (Mann-Whitney U / nA·nB)": _PooledRounds.rank,
                "Kolmogorov-Smirnov (one-sided)": _PooledRounds.ks,
                "Anderson-Darling (signed by the p90 shift)": _PooledRounds.ad}
# Splits evaluated per numpy call: bounds memory (splits × distinct values), not the result.
_BATCH = 4096


def _block_tests(thread: int, b: list[np.ndarray], a: list[np.ndarray]) -> list[TestResult]:
    """The block-maxima distributions of one thread, pooled per side; p-values by permuting
    whole rounds between the sides, never single blocks (scipy's permutation_test on the round
    labels, its exact enumeration or seeded sample; the statistics vectorised over splits)."""
    table = _PooledRounds(b + a)
    out = []
    for name, statistic in _BLOCK_TESTS.items():
        res = stats.permutation_test(
            (np.arange(len(b)), np.arange(len(b), len(b) + len(a))),
            lambda x, y, axis, s=statistic: s(table, x, y, axis), vectorized=True,
            n_resamples=_permutations(len(a), len(b)), alternative="greater", batch=_BATCH,
            rng=np.random.default_rng(SEED))
        out.append(TestResult(f"thread {thread} block maxima: {name} (permutation of rounds)",
                              float(res.statistic), float(res.pvalue)))
    return out


def _plan(c: KeyRounds, confidence: float) -> _Plan:
    plan = _Plan(c)
    for side, rounds in (("A", c.a), ("B", c.b)):
        if len(rounds) < MIN_ROUNDS:
            plan.reasons.append(f"{side} has {len(rounds)} round(s), fewer than {MIN_ROUNDS}")
        pooled = sum(r.samples for r in rounds)
        if c.min_samples is not None and pooled < c.min_samples:
            plan.reasons.append(f"{side}'s rounds hold {pooled} samples, fewer than min_samples "
                                f"{c.min_samples}")
    if plan.reasons:
        return plan
    summaries: dict[str, Callable[[Round], float | None]] = {
        name: lambda r, q=q: (x.value_us if (x := round_quantile(r, q, confidence)) else None)
        for name, q in HIST_QUANTILES.items()}
    summaries[BLOCK_METRIC] = block_p90
    for name, summary in summaries.items():
        a, b = ([summary(r) for r in side] for side in (c.a, c.b))
        missing = sum(v is None for v in a + b)
        if missing:
            # A metric known for some rounds only is left out, never computed on a subset.
            if missing < len(a) + len(b) or name in HIST_QUANTILES:
                plan.reasons.append(f"{name}: not known in {missing} of {len(a) + len(b)} "
                                    "rounds (no histogram, too few samples, or beyond its limit)")
            continue
        plan.metrics[name] = (np.array(a, dtype=float), np.array(b, dtype=float))
        plan.tests.append(_round_test(name, plan.metrics[name][1], plan.metrics[name][0]))
    threads = sorted(set.intersection(*(set(r.blocks) for r in [*c.a, *c.b])))
    for thread in threads:
        plan.tests += _block_tests(thread, [r.blocks[thread] for r in c.b],
                                   [r.blocks[thread] for r in c.a])
    return plan


def _effect(metric: str, a: np.ndarray, b: np.ndarray, confidence: float) -> Effect:
    """B − A of the mean per-round value, with Welch's two-sided interval over rounds."""
    delta = float(b.mean() - a.mean())
    if _no_spread(a, b):
        low = high = delta
    else:
        ci = stats.ttest_ind(b, a, equal_var=False).confidence_interval(confidence)
        low, high = float(ci.low), float(ci.high)
    return Effect(metric, delta, low, high, confidence, float(a.mean()), float(b.mean()),
                  (len(a), len(b)))


def _outcome(effects: list[Effect], tests: list[TestResult], margin: float,
             reasons: list[str]) -> Comparison:
    if not effects:
        return Comparison.UNKNOWN
    if all(-margin <= e.low_us and e.high_us <= margin for e in effects):
        return Comparison.SAME
    if any(t.rejected for t in tests):
        return Comparison.WORSE
    if any(e.high_us < 0 for e in effects) and not any(e.low_us > 0 for e in effects):
        return Comparison.BETTER
    reasons.append("the intervals are wider than the margin and no test rejects: measure more")
    return Comparison.UNKNOWN


def decide(comparisons: Sequence[KeyRounds], alpha: float = 0.01) -> list[Decision]:
    """Decide every key at once: ``alpha`` is the family-wise false-alarm rate of the whole set."""
    plans = [_plan(c, 1 - alpha) for c in comparisons]
    tests = [t for p in plans for t in p.tests]
    if tests:
        rejected, adjusted, _, _ = multipletests([t.p for t in tests], alpha=alpha, method="holm")
        corrected = iter([TestResult(t.name, t.statistic, t.p, float(adj), bool(rej))
                          for t, rej, adj in zip(tests, rejected, adjusted, strict=True)])
        for p in plans:
            p.tests = [next(corrected) for _ in p.tests]
    intervals = sum(len(p.metrics) for p in plans)
    confidence = 1 - 2 * alpha / max(intervals, 1)
    decisions = []
    for p in plans:
        c = p.comparison
        effects = [_effect(name, a, b, confidence) for name, (a, b) in p.metrics.items()]
        reasons = list(p.reasons)
        outcome = _outcome(effects, p.tests, c.min_effect_us, reasons)
        headline = next((e for e in effects if e.metric == HEADLINE),
                        effects[0] if effects else None)
        decisions.append(Decision(c.key, outcome, headline, effects, p.tests,
                                  (len(c.a), len(c.b)), c.min_effect_us, alpha, reasons))
    return decisions


# ---- Sequential rounds: when the gate looks again after every pair of rounds -------------------

SPENDING = "Lan-DeMets Pocock-type alpha spending, alpha·ln(1 + (e − 1)·t), t = rounds / planned"


def spent(alpha: float, fraction: float) -> float:
    """The share of ``alpha`` spent by information fraction ``fraction`` (rounds a side done /
    rounds a side planned at the cap): Lan-DeMets' Pocock-type function. Pocock's shape spends
    early, so a clear case (a PR that changed nothing, a gross regression) stops early."""
    t = min(max(fraction, 0.0), 1.0)
    return alpha * math.log1p((math.e - 1) * t)


@dataclass(frozen=True)
class Look:
    """One look at the data: rounds a side, the alpha it spent, the decisions it made."""

    rounds: int
    alpha: float
    decisions: list[Decision]


@dataclass
class Sequential:
    """Decide after every pair of rounds, stopping a key as soon as it is decided, with the
    false-alarm rate of the whole sequence at most ``alpha``.

    Looks come at 3, 4, …, ``planned`` rounds a side; look k decides with ``decide`` at its
    increment of the spending function, spent(k / planned) − spent((k − 1) / planned) (the first
    look takes all of spent(3 / planned)). The increments add up to ``alpha`` at the cap, and a
    false claim at any look has probability at most that look's increment, so the chance of one
    anywhere in the sequence is at most ``alpha`` whatever the looks' dependence and wherever the
    loop stops (Bonferroni over looks: conservative, but exact for permutation p-values and
    Holm, where the usual Brownian-motion boundaries are not). A key's first decided look is
    final: it is not measured or looked at again. Stopping before the cap leaves the rest of
    ``alpha`` unspent.
    """

    alpha: float
    planned: int
    looks: list[Look] = field(default_factory=list)
    final: dict[Key, Decision] = field(default_factory=dict)

    def alpha_at(self, rounds: int) -> float:
        if not MIN_ROUNDS <= rounds <= self.planned:
            return 0.0
        before = 0.0 if rounds == MIN_ROUNDS else spent(self.alpha, (rounds - 1) / self.planned)
        return spent(self.alpha, rounds / self.planned) - before

    def look(self, rounds: int, comparisons: Sequence[KeyRounds]) -> Look:
        """Decide the keys not yet decided, with ``rounds`` rounds a side each."""
        share = self.alpha_at(rounds)
        open_ = [c for c in comparisons if c.key not in self.final]
        look = Look(rounds, share, decide(open_, share) if share > 0 and open_ else [])
        self.final |= {d.key: d for d in look.decisions if d.outcome is not Comparison.UNKNOWN}
        self.looks.append(look)
        return look

    @property
    def alpha_spent(self) -> float:
        return sum(look.alpha for look in self.looks)

    def stopped(self, keys: Sequence[Key]) -> bool:
        """Some key is worse (the check fails whatever the rest do), or every key is decided."""
        return (any(d.outcome is Comparison.WORSE for d in self.final.values())
                or all(k in self.final for k in keys))

    def latest(self, key: Key) -> Decision | None:
        """The key's final decision, else its decision at the latest look that saw it."""
        if key in self.final:
            return self.final[key]
        return next((d for look in reversed(self.looks) for d in look.decisions if d.key == key),
                    None)
