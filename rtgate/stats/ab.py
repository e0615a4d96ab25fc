"""A/B decisions: is the candidate's latency tail the same as the base's, worse, better, or unknown?

The unit of replication is the ROUND: one boot and run, one result.json. Blocks and samples of
one run share that boot's state (caches, IRQ placement, the host's mood) and are not independent
replicates of a kernel, so every statistic here is over per-round numbers: a round's p99 and
p99.9 from its exact histogram, and the 90th percentile of its block maxima.

One metric per board × flavor × scenario (a "key") is tested: its PRIMARY metric, registered
before any round is measured (the board kind's calibration record names the one with the most
power on the board's own A/A rounds; without a record the block-max p90, else p99.9, else
p99). The other metrics are reported with intervals at the same level and never tested: a test
that cannot buy power only spends alpha.

The test is Student's two-sample t on the LOG of the per-round values. Logs make a relative
change (what a margin in % asks about) a shift with the variance unchanged, and tame the heavy
right tail of per-round maxima; under "the same kernel" both sides have one variance, so the
pooled t is exact for normal logs, where Welch's approximate degrees of freedom are not at the
tiny levels a gate works at. Its level on real, non-normal rounds is what `rtgate calibrate`
measures by replaying this code on a board's A/A bank.

Looks come after every pair of rounds from ``MIN_ROUNDS`` a side to the planned number. The
alpha-spending function (Lan-DeMets, Pocock-type) gives each look its increment of alpha, and
each look's boundary is taken from the JOINT distribution of the looks' t statistics
(``boundaries``: simulated once per plan with a fixed seed and cached), so the increments are
spent exactly rather than split by Bonferroni. The boundary c_k makes a repeated confidence
interval, exp(d ± c_k·se) as a ratio B/A, that covers the true ratio at every look at once with
probability 1 − alpha:

- *worse*: the interval lies wholly above 1; *better*: wholly below 1 — each at alpha/2, so a
  false *better* is exactly as rare as a false *worse*;
- *same*: the interval lies within the margin (equivalence: a change certified smaller than the
  minimum worth reporting), checked first; a false *same* when the true change is at the margin
  has probability at most alpha/2;
- *unknown*: anything else, including too few rounds: measure more.

Alpha over keys: each of the K keys of a run gets alpha/K (Bonferroni; keys stop separately, so
their looks are not aligned and nothing sharper holds in general).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
from scipy import stats

from rtgate.outcome import Comparison
from rtgate.result import NSEC_US, Result
from rtgate.stats import stalls as stalls_

Key = tuple[str, str, str]

# Per-round summaries: name -> quantile of the round's histogram (all threads together).
HIST_QUANTILES = {"p99": 0.99, "p99.9": 0.999}
BLOCK_METRIC = "block max p90"
BLOCK_QUANTILE = 0.9
# In order of preference: without a calibration record the primary metric is the first every
# round of the key has (the deepest tail the rounds can estimate).
METRICS = (BLOCK_METRIC, "p99.9", "p99")
RULE = ("rtgate-ab-3: Student's t on the log of the primary per-round metric, its standard "
        "error never below the calibration bank's pooled log-sd; two-sided repeated confidence "
        "intervals from exact group-sequential boundaries (O'Brien-Fleming-type alpha "
        "spending) on 3/4 of the key's alpha; beside it an exact permutation test of the "
        "per-round counts of blocks over a pre-registered stall threshold on 1/4; alpha/K per "
        "key; worse if either test is, same only by equivalence within the margin and no more "
        "stalls")
EFFECT_REPORTED = (
    "the primary metric's change B/A: the geometric mean of the candidate's per-round values "
    "over the baseline's, with its repeated confidence interval (the look's boundary); the "
    "other metrics with intervals at the same level, untested")
SPENDING = ("Lan-DeMets O'Brien-Fleming-type alpha spending, 2·(1 − Φ(z_{alpha/2} / √t)), "
            "t = rounds / planned; each look's boundary from the looks' joint distribution")
# Student's t needs two rounds a side; three is the least that says anything of the spread.
MIN_ROUNDS = 3
RESOLUTION_US = 1.0
"""Whole µs: block maxima, and the histograms' bin unless rtla's -b widened it; the data's
resolution is the least change a margin can resolve, whatever its percentage (``resolution``)."""
QUANTILE_CONFIDENCE = 0.99
"""A round's histogram quantile counts when its order-statistic interval at this level exists."""
# Paths simulated for the boundaries, and the least number of paths a tail share is taken over.
PATHS = 200_000
TAIL_PATHS = 200
# The simulation is seeded: the same plan gives the same boundaries, hence the same decisions.
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
    bin_us: float = RESOLUTION_US
    """The widest histogram bin of the round (rtla's -b): its quantiles' resolution. Log-linear
    ns bins count as 1 ns: wider only above 2.048 µs, and there under 0.1 % of the value."""
    resolution_us: float = RESOLUTION_US
    """The block maxima's unit: 1 µs, or 1 ns with cyclictest -N."""
    summaries: dict[str, float | None] = field(default_factory=dict, compare=False, repr=False)
    """The round's metrics once computed (a calibration replays each round thousands of times)."""
    measured: dict[str, float] = field(default_factory=dict)
    """Metrics the measuring tool read from the round's result itself (a tool measuring no
    wake-up latency, like rtla osnoise's longest single noise): taken as they are."""

    def metric(self, name: str) -> float | None:
        if name in self.measured:
            return self.measured[name]
        if name not in self.summaries:
            summary = SUMMARIES.get(name)
            self.summaries[name] = summary(self) if summary else None
        return self.summaries[name]

    @classmethod
    def of(cls, result: Result, measured: dict[str, float] | None = None) -> Round:
        merged: dict[float, int] = {}
        overflows, limits = 0, set()
        has_histogram = bool(result.threads) and all(t.histogram for t in result.threads)
        for thread in result.threads if has_histogram else []:
            assert thread.histogram is not None
            limits.add(thread.histogram.limit_us)
            overflows += thread.histogram.overflows
            for value, count in thread.histogram.buckets:
                merged[value] = merged.get(value, 0) + count
        edges = sorted(merged)
        return cls(
            run_id=result.run_id, samples=result.totals.samples,
            values_us=np.array(edges, dtype=float),
            counts=np.array([merged[v] for v in edges], dtype=np.int64),
            overflows=overflows, limit_us=min(limits) if limits else None,
            blocks={t.thread: np.asarray(t.blocks.maxima_us, dtype=float)
                    for t in result.threads if t.blocks and t.blocks.maxima_us},
            bin_us=max((NSEC_US if t.histogram.log_linear else t.histogram.bucket_us
                        for t in result.threads if t.histogram), default=RESOLUTION_US),
            resolution_us=result.resolution_us,
            measured=dict(measured or {}))


def floored(r: Round, resolution_us: float) -> Round:
    """The round as a tool measuring to ``resolution_us`` would have reported it: every latency
    floored to a multiple of it (cyclictest without -N and rtla without -n divide their ns by
    1000 in integers, cutting toward zero), the histogram's bins merged accordingly. Flooring
    commutes with maxima and order statistics, so a floored ns round's block maxima and
    quantiles are those of the same samples measured in µs (docs/statistics.md, "A record's
    resolution")."""
    if r.resolution_us >= resolution_us:
        return r

    def cut(values: np.ndarray) -> np.ndarray:
        # round() first: a ns value held as a float (7.000 µs as 6.9999…) is not cut a µs short.
        return np.floor(np.round(np.asarray(values, dtype=float) / resolution_us, 6)) \
            * resolution_us

    edges, at = np.unique(cut(r.values_us), return_inverse=True)
    counts = np.bincount(at, weights=r.counts, minlength=len(edges)).astype(np.int64)
    return Round(run_id=r.run_id, samples=r.samples, values_us=edges, counts=counts,
                 overflows=r.overflows, limit_us=r.limit_us,
                 blocks={t: cut(b) for t, b in r.blocks.items()},
                 bin_us=max(r.bin_us, resolution_us), resolution_us=resolution_us,
                 # A tool's own metrics keep their units (osnoise's % is no latency).
                 measured=dict(r.measured))


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


def _hist_metric(q: float) -> Callable[[Round], float | None]:
    def value(r: Round) -> float | None:
        x = round_quantile(r, q, QUANTILE_CONFIDENCE)
        return x.value_us if x else None
    return value


SUMMARIES: dict[str, Callable[[Round], float | None]] = {
    BLOCK_METRIC: block_p90, **{name: _hist_metric(q) for name, q in HIST_QUANTILES.items()}}


@dataclass(frozen=True)
class Margin:
    """The equivalence margin and minimum effect: a share of the baseline, never finer than the
    histograms' resolution (a 1 µs change of a 5 µs p99 is 20 %, whatever the share asks)."""

    relative: float
    floor_us: float = RESOLUTION_US

    def ratio(self, baseline_us: float) -> float:
        """The margin as a ratio B/A at this baseline: 1 + max(share, floor / baseline)."""
        return 1 + max(self.relative, self.floor_us / max(baseline_us, self.floor_us))

    def __str__(self) -> str:
        # Past 100 % a "±" reads as a latency below zero: a bisect's margin is a factor.
        if self.relative > 1:
            return f"×{1 + self.relative:g} either way (at least {self.floor_us:g} µs)"
        return (f"×{1 + self.relative:g} either way, B/A in [{1 / (1 + self.relative):.3g}, "
                f"{1 + self.relative:g}] (at least "
                f"{self.floor_us:g} µs)")


def resolution(rounds: Sequence[Round], metric: str) -> float:
    """The data's resolution for ``metric``, the floor of its margin: block maxima are in the
    rounds' unit (µs, ns with -N), a histogram quantile is as fine as the widest bin it is read
    from."""
    if metric == BLOCK_METRIC:
        return max((r.resolution_us for r in rounds), default=RESOLUTION_US)
    return max((r.bin_us for r in rounds), default=RESOLUTION_US)


@dataclass(frozen=True)
class KeyRounds:
    """One key's rounds: A (base) and B (candidate), its margin and its registered metric."""

    key: Key
    a: Sequence[Round]
    b: Sequence[Round]
    margin: Margin
    min_samples: int | None = None
    primary: str | None = None
    """The pre-registered metric (the calibration record's); None: the first of ``METRICS``
    every round has."""
    stall_threshold_us: float | None = None
    """The calibration record's stall threshold; None: from A's rounds at the first look."""


@dataclass(frozen=True)
class Effect:
    """A metric's change B/A (geometric means over rounds) with its interval."""

    metric: str
    ratio: float
    low: float
    high: float
    confidence: float
    a_geomean_us: float
    b_geomean_us: float
    rounds: tuple[int, int]

    def __str__(self) -> str:
        return (f"{self.metric} {100 * (self.ratio - 1):+.1f} % [{100 * (self.low - 1):+.1f}, "
                f"{100 * (self.high - 1):+.1f}] ({self.a_geomean_us:.4g} → "
                f"{self.b_geomean_us:.4g} µs)")


@dataclass(frozen=True)
class Decision:
    key: Key
    outcome: Comparison
    headline: Effect | None
    """The primary metric's effect: the one tested."""
    effects: list[Effect]
    statistic: float | None
    """Student's t of the primary metric's logs."""
    boundary: float | None
    """The look's critical |t|."""
    rounds: tuple[int, int]
    margin: Margin
    margin_ratio: float | None
    """The margin at this baseline, as a ratio B/A."""
    alpha: float
    """The key's false-alarm rate (over all its looks): the tail test's and the stall test's."""
    reasons: list[str]
    stalls: stalls_.StallTest | None = None
    """The stall test at this look; None without block maxima in every round."""


def log_values(rounds: Sequence[Round], metric: str) -> np.ndarray | None:
    """The metric's log per round (µs), floored at the data's resolution (``resolution``: 1 ns
    for -N rounds, whose sub-µs tails a 1 µs floor would flatten to one value); None when a
    round lacks it."""
    values = [r.metric(metric) for r in rounds]
    if any(v is None for v in values):
        return None
    return np.log(np.maximum(np.array(values, dtype=float), resolution(rounds, metric)))


def student(a: np.ndarray, b: np.ndarray) -> tuple[float, float, int]:
    """mean(b) − mean(a), its pooled standard error, and the degrees of freedom."""
    df = len(a) + len(b) - 2
    ss = float(((a - a.mean()) ** 2).sum() + ((b - b.mean()) ** 2).sum())
    return float(b.mean() - a.mean()), math.sqrt(ss / df * (1 / len(a) + 1 / len(b))), df


def _exp(x: float) -> float:
    """exp that says inf past a float's range: an O'Brien-Fleming first look's boundary (|t| in
    the tens or more) times a wide spread is a ratio no float holds."""
    return math.inf if x > 709.0 else math.exp(x)


def _effect(metric: str, a: np.ndarray, b: np.ndarray, boundary: float,
            floor_se: float = 0.0) -> Effect:
    d, se, df = student(a, b)
    se = max(se, floor_se)
    return Effect(metric, math.exp(d), _exp(d - boundary * se), _exp(d + boundary * se),
                  1 - 2 * float(stats.t.sf(boundary, df)), math.exp(a.mean()),
                  math.exp(b.mean()), (len(a), len(b)))


def stall_test(c: KeyRounds, boundary: float) -> stalls_.StallTest | None:
    """The key's stall test at this look: the recorded threshold, else A's first-look rounds'."""
    limit, source = c.stall_threshold_us, "the calibration record"
    if limit is None:
        limit = stalls_.threshold([r.blocks for r in c.a[:MIN_ROUNDS]])
        source = f"A's first {MIN_ROUNDS} rounds, q{100 * stalls_.STALL_QUANTILE:g}"
    if limit is None:
        return None
    return stalls_.test([r.blocks for r in c.a], [r.blocks for r in c.b], limit, source,
                        boundary)


def decide_key(c: KeyRounds, alpha: float, boundary: float | None = None,
               design: Design | None = None, stall_boundary: float | None = None) -> Decision:
    """One key at one look: ``boundary`` is the tail test's critical |t| and ``stall_boundary``
    the stall test's p-value boundary (None: a single fixed-size look at ``alpha``, split
    between the two as in the sequential rule); ``design`` the tail's floor under the standard
    error and the first look that may say worse or better (None: no floor, from the first)."""
    reasons = []
    for side, rounds in (("A", c.a), ("B", c.b)):
        if len(rounds) < MIN_ROUNDS:
            reasons.append(f"{side} has {len(rounds)} round(s), fewer than {MIN_ROUNDS}")
        pooled = sum(r.samples for r in rounds)
        if c.min_samples is not None and pooled < c.min_samples:
            reasons.append(f"{side}'s rounds hold {pooled} samples, fewer than min_samples "
                           f"{c.min_samples}")
    # A metric of the tool's own (not a wake-up latency's) is the only one compared.
    metrics = METRICS if c.primary is None or c.primary in METRICS else (c.primary,)
    logs = {} if reasons else {m: (a, b) for m in metrics
                               if (a := log_values(c.a, m)) is not None
                               and (b := log_values(c.b, m)) is not None}
    primary = c.primary or next((m for m in metrics if m in logs), metrics[0])
    undecided = Decision(c.key, Comparison.UNKNOWN, None, [], None, boundary,
                         (len(c.a), len(c.b)), c.margin, None, alpha, reasons)
    if reasons:
        return undecided
    if primary not in logs:
        reasons.append(f"{primary}: not known in every round (no histogram or block maxima, too "
                       "few samples, or beyond the histogram's limit)")
        return undecided
    df = len(c.a) + len(c.b) - 2
    if boundary is None:
        boundary = float(stats.t.isf(alpha * (1 - stalls_.STALL_SHARE) / 2, df))
    if stall_boundary is None:
        stall_boundary = alpha * stalls_.STALL_SHARE
    stall = stall_test(c, stall_boundary)
    floor = design.floor_se(len(c.a), len(c.b)) if design else 0.0
    effects = [_effect(m, a, b, boundary, floor if m == primary else 0.0)
               for m, (a, b) in logs.items()]
    head = next(e for e in effects if e.metric == primary)
    d, se, _ = student(*logs[primary])
    se = max(se, floor)
    t = d / se if se > 0 else 0.0 if d == 0 else math.copysign(math.inf, d)
    floored = Margin(c.margin.relative,
                     max(c.margin.floor_us, resolution([*c.a, *c.b], primary)))
    margin = floored.ratio(head.a_geomean_us)
    decisive = design is None or min(len(c.a), len(c.b)) >= design.first_decisive
    if 1 / margin <= head.low and head.high <= margin:
        outcome = Comparison.SAME
    elif head.low > 1 and decisive:
        outcome = Comparison.WORSE
    elif head.high < 1 and decisive:
        outcome = Comparison.BETTER
    else:
        outcome = Comparison.UNKNOWN
        if head.low > 1 or head.high < 1:
            assert design is not None
            reasons.append(f"{primary}: the interval excludes no change, but the rule says "
                           f"worse or better only from {design.first_decisive} rounds a side")
        else:
            reasons.append(f"{primary}: the interval is wider than the margin (× {margin:.3g}) "
                           "and holds no change: measure more")
    if stall is not None:
        # Worse if either test is worse; same only when both are.
        if stall.worse and decisive:
            outcome = Comparison.WORSE
        elif outcome is not Comparison.WORSE and not stall.same:
            if outcome is not Comparison.UNKNOWN:
                reasons.append(f"{primary} says {outcome.value}, but B's stall blocks exceed "
                               "A's beyond the stall margin without reaching the stall test's "
                               "boundary: measure more")
            outcome = Comparison.UNKNOWN
    return Decision(c.key, outcome, head, effects, t, boundary, (len(c.a), len(c.b)), floored,
                    margin, alpha, reasons, stall)


def decide(comparisons: Sequence[KeyRounds], alpha: float = 0.01) -> list[Decision]:
    """Every key once, fixed size: ``alpha`` is the false-alarm rate of the set (alpha/K a key)."""
    share = alpha / max(len(comparisons), 1)
    return [decide_key(c, share) for c in comparisons]


# ---- Sequential rounds: when the gate looks again after every pair of rounds -------------------

POCOCK = "pocock"
OBRIEN_FLEMING = "obrien-fleming"
# Rule 3's spending (since 2026-11-28): chosen by simulation against boot-to-boot modes
# (benchmarks/ab_modes.py, docs/statistics.md): Pocock's early looks rested on 4 degrees of
# freedom, where two-mode boots tripled the false-alarm rate.
RULE_SPENDING = OBRIEN_FLEMING


def spent(alpha: float, fraction: float, spending: str = RULE_SPENDING) -> float:
    """The share of ``alpha`` spent by information fraction ``fraction`` (rounds a side done /
    rounds a side planned at the cap). Lan-DeMets' Pocock-type function spends early, so a clear
    case stops early; the O'Brien-Fleming-type one, 2·(1 − Φ(z_{alpha/2}/√t)), keeps nearly all
    of alpha for the late looks, where a few odd boots weigh less."""
    t = min(max(fraction, 0.0), 1.0)
    if spending == OBRIEN_FLEMING:
        if t <= 0:
            return 0.0
        return float(2 * stats.norm.sf(stats.norm.isf(alpha / 2) / math.sqrt(t)))
    return alpha * math.log1p((math.e - 1) * t)


def increment(alpha: float, rounds: int, planned: int, spending: str = RULE_SPENDING) -> float:
    """The alpha the look at ``rounds`` a side spends (the first look all of spent(3/planned))."""
    if not MIN_ROUNDS <= rounds <= planned:
        return 0.0
    before = 0.0 if rounds == MIN_ROUNDS else spent(alpha, (rounds - 1) / planned, spending)
    return spent(alpha, rounds / planned, spending) - before


@lru_cache(maxsize=256)
def boundaries(alpha: float, planned: int, spending: str = RULE_SPENDING) -> tuple[float, ...]:
    """Critical |t| at the looks ``MIN_ROUNDS``..``planned`` rounds a side, two-sided, so that
    under "the same kernel" (normal logs, one variance: t is free of both) the chance of a first
    crossing at look k is the spending function's increment there, exactly.

    Solved look by look on ``PATHS`` simulated sequences, directly: P(first crossing at k) is
    the share of paths still alive (no earlier crossing) whose look-k marginal two-sided p-value
    p_k is at most b_k, so b_k is the alive paths' p-value of rank increment × ``PATHS``
    (interpolated between neighbouring order statistics). That holds where at least
    ``TAIL_PATHS`` paths (alive or not) lie below b_k; deeper in the tail so few paths say too
    little, and b_k = increment / (the alive share of the ``TAIL_PATHS`` smallest p-values):
    P(first crossing at k) = P(p_k ≤ b_k) · P(alive | p_k ≤ b_k), and the alive share falls as
    b_k does (a path extreme now was likely extreme before), so the share over more paths
    overstates it and b_k errs small (conservative). Solved, not iterated: the fixed point
    b ← increment / share(b) need not converge."""
    if planned < MIN_ROUNDS:
        return ()
    rng = np.random.default_rng(SEED)
    sums = np.zeros((2, PATHS))
    squares = np.zeros((2, PATHS))
    alive = np.ones(PATHS, dtype=bool)
    out = []
    for n in range(1, planned + 1):
        x = rng.standard_normal((2, PATHS))
        sums += x
        squares += x * x
        if n < MIN_ROUNDS:
            continue
        means = sums / n
        ss = (squares - n * means**2).sum(axis=0)
        df = 2 * n - 2
        t = (means[1] - means[0]) / np.sqrt(ss / df * 2 / n)
        p = 2 * stats.t.sf(np.abs(t), df)
        b = _look_boundary(p, alive, increment(alpha, n, planned, spending))
        out.append(float(stats.t.isf(b / 2, df)))
        alive &= p > b
    return tuple(out)


def _look_boundary(p: np.ndarray, alive: np.ndarray, goal: float) -> float:
    """The p-value boundary at which the share of all paths that are alive with p ≤ b is
    ``goal`` (see ``boundaries``)."""
    if alive.all():  # the first look: p_k is uniform, the share is exact
        return goal
    paths = len(p)
    alive_p = np.sort(p[alive])
    rank = goal * paths  # alive paths at or below the boundary
    if rank >= len(alive_p):
        return 1.0
    whole = int(rank)
    below = alive_p[whole - 1] if whole >= 1 else 0.0
    # Never below the increment: P(alive, p_k ≤ b) ≤ P(p_k ≤ b) = b, exactly.
    b = max(float(below + (rank - whole) * (alive_p[whole] - below)), goal)
    if np.count_nonzero(p <= b) >= TAIL_PATHS:
        return b
    smallest = np.argpartition(p, TAIL_PATHS - 1)[:TAIL_PATHS]
    share = np.count_nonzero(alive[smallest]) / TAIL_PATHS
    return min(goal / max(share, 1 / TAIL_PATHS), 1.0)


@dataclass(frozen=True)
class Look:
    """One look at the data: rounds a side, the alpha it spent, the decisions it made."""

    rounds: int
    alpha: float
    decisions: list[Decision]


@dataclass(frozen=True)
class Design:
    """How one key's looks decide: its alpha, the spending's shape, the first look that may say
    *worse* or *better* (*same* may come from the first look on), and a floor under the
    standard error from the calibration bank's pooled log-sd (None: none)."""

    alpha: float
    spending: str = RULE_SPENDING
    first_decisive: int = MIN_ROUNDS
    floor_sd: float | None = None

    def boundaries(self, planned: int) -> tuple[float, ...]:
        return boundaries(self.alpha, planned, self.spending)

    def floor_se(self, na: int, nb: int) -> float:
        return 0.0 if self.floor_sd is None else self.floor_sd * math.sqrt(1 / na + 1 / nb)


@dataclass
class Sequential:
    """Decide after every pair of rounds, stopping a key as soon as it is decided, with the
    false-alarm rate of the whole sequence at most ``alpha`` over its ``keys`` keys.

    Looks come at 3, 4, …, ``planned`` rounds a side; each key's look k uses the boundary of
    ``boundaries(alpha / keys, planned)``. A key's first decided look is final: it is not
    measured or looked at again. Stopping before the cap leaves the rest of ``alpha`` unspent.
    """

    alpha: float
    planned: int
    keys: int = 1
    spending: str = RULE_SPENDING
    first_decisive: int = MIN_ROUNDS
    floors: dict[Key, float] = field(default_factory=dict)
    """Per key, the calibration bank's pooled log-sd: the standard error's floor."""
    looks: list[Look] = field(default_factory=list)
    final: dict[Key, Decision] = field(default_factory=dict)

    @property
    def key_alpha(self) -> float:
        return self.alpha / max(self.keys, 1)

    @property
    def tail_alpha(self) -> float:
        return self.key_alpha * (1 - stalls_.STALL_SHARE)

    @property
    def stall_alpha(self) -> float:
        return self.key_alpha * stalls_.STALL_SHARE

    def design(self, key: Key) -> Design:
        """The tail test's design: its share of the key's alpha."""
        return Design(self.tail_alpha, self.spending, self.first_decisive, self.floors.get(key))

    def alpha_at(self, rounds: int) -> float:
        """The family's alpha spent at the look at ``rounds`` a side: the tail tests' and the
        stall tests' shares."""
        keys = max(self.keys, 1)
        return (increment(self.tail_alpha * keys, rounds, self.planned, self.spending)
                + keys * self.stall_boundary(rounds))

    def boundary(self, rounds: int) -> float:
        return boundaries(self.tail_alpha, self.planned, self.spending)[rounds - MIN_ROUNDS]

    def stall_boundary(self, rounds: int) -> float:
        """The stall test's p-value boundary at this look (``stalls.spending``: its share spent
        evenly over the looks its exact test can reach; Bonferroni over the looks, so the
        sequence keeps its share whatever the correlation)."""
        return stalls_.spending(self.stall_alpha, self.planned).get(rounds, 0.0)

    def look(self, rounds: int, comparisons: Sequence[KeyRounds]) -> Look:
        """Decide the keys not yet decided, with ``rounds`` rounds a side each."""
        share = self.alpha_at(rounds)
        open_ = [c for c in comparisons if c.key not in self.final]
        look = Look(rounds, share, [decide_key(c, self.key_alpha, self.boundary(rounds),
                                               self.design(c.key), self.stall_boundary(rounds))
                                    for c in open_] if share > 0 else [])
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
