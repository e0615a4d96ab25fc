"""The tail of a latency distribution: pWCET with a confidence interval, from block maxima.

One run's maximum is one draw from the tail; two runs of one kernel disagree. Extreme-value
theory models the maximum of a block of many cycles (GEV) and the excess of those maxima over a
high threshold (peaks over threshold, generalized Pareto), which extrapolates to exceedance
probabilities a short run never reached. The extrapolation holds only under its assumptions, so
they are checked next to every estimate, and an estimate whose checks fail is no number at all
("no valid estimate: <why>"):

- enough blocks: ``MIN_BLOCKS`` maxima for GEV; POT needs ``MIN_EXCEEDANCES`` above its threshold;
- independence of consecutive block maxima: Ljung-Box (statsmodels) on their ranks, since on raw
  heavy-tailed values a few spikes dominate the autocorrelations;
- stationarity: first half against second half, Mann-Whitney U (a drifting level) and two-sample
  Kolmogorov-Smirnov (a changing shape), each at half of ``ALPHA_ASSUMPTION``.

- a plausible shape: the fitted shape xi below ``MAX_SHAPE`` (finite variance). A scheduler's
  latency tail is light or moderately heavy; a fitted xi of 0.5 or more says the maxima mix two
  regimes (on a VM: the guest's own latencies and the host's preemptions of milliseconds), and
  no single extreme-value law extrapolates such a mixture (this VM's 30 s run: xi = 1.7).

POT threshold: the 90 % quantile of the block maxima (``THRESHOLD_QUANTILE``), with at least
``MIN_EXCEEDANCES`` maxima above it: a common rule (the top 10 %) that keeps the GPD's
asymptotics plausible while leaving enough excesses to fit two parameters. Taking the excesses
of block maxima, not of single samples, declusters them: a burst of slow cycles counts once.

Ties: cyclictest prints whole µs, cut toward zero, so a printed k means a latency in [k, k + 1).
The fits assume a continuous distribution and 1 µs-discrete maxima pile up in ties, so each
maximum gets U[0, 1) added (a continuity correction) from a generator with a fixed seed: the same
data always give the same estimate. Estimates are thus of the true latency, up to 1 µs above
what cyclictest would print: on the safe side of a budget.

Confidence interval: BCa bootstrap over blocks (``scipy.stats.bootstrap``), refitting each
resample. Blocks that pass the independence check are the replicates to resample; the same
procedure serves GEV and POT, and re-choosing the POT threshold in each resample puts that
choice's variability into the interval. Profile likelihood would need the likelihood
re-parametrized in the return level and a root search on it, i.e. fitting code of our own.
BCa rather than the plain percentile interval: a far quantile's sampling distribution is skewed
and the percentile interval undercovered it (POT on a known GPD tail, 600 blocks: 7 of 12
intervals held the truth, BCa 9 of 12), at the cost of one jackknife refit per block. Both can
undercover with few blocks and heavy tails: the benchmark (benchmarks/tail_coverage.py)
measures coverage on real runs.

Per hour to per block: with blocks of ``d`` seconds an hour has ``m = 3600 / d`` of them, and a
latency exceeded with probability P per hour satisfies ``F(x) ** m = 1 - P`` for independent
blocks, so each block exceeds it with ``p = 1 - (1 - P) ** (1 / m)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt
from scipy import stats
from statsmodels.stats.diagnostic import acorr_ljungbox

Floats = npt.NDArray[np.float64]
Method = Literal["gev", "pot"]

MIN_BLOCKS = 50
THRESHOLD_QUANTILE = 0.9
MIN_EXCEEDANCES = 30
MAX_SHAPE = 0.5
# Each assumption check wrongly refuses good data this often.
ALPHA_ASSUMPTION = 0.01
# Two-sided, so each one-sided statement the gate makes from it (the pWCET is at most the
# upper bound; at least the lower bound) is wrong at most 5 % of the time.
CONFIDENCE = 0.90
RESAMPLES = 500
HOUR_S = 3600.0
SEED = 20240601


@dataclass(frozen=True)
class Assumption:
    """One assumption behind an estimate, checked on the data."""

    name: str
    ok: bool
    detail: str

    def __str__(self) -> str:
        return f"{self.name} {'ok' if self.ok else 'FAILED'}: {self.detail}"


@dataclass(frozen=True)
class Estimate:
    """A high quantile of the maximum over a horizon, with its interval, or why there is none."""

    method: Method
    value_us: float | None
    lower_us: float | None
    upper_us: float | None
    confidence: float
    assumptions: tuple[Assumption, ...]
    why_not: str = ""

    @property
    def valid(self) -> bool:
        return self.value_us is not None

    def __str__(self) -> str:
        if self.value_us is None or self.lower_us is None or self.upper_us is None:
            return f"no valid estimate: {self.why_not}"
        return (f"{self.value_us:.1f} µs, {self.confidence:.0%} CI "
                f"[{self.lower_us:.1f}, {self.upper_us:.1f}] ({self.method.upper()})")


def block_maxima(latencies: npt.ArrayLike, block_cycles: int) -> npt.NDArray[np.int64]:
    """The maximum of each whole block of ``block_cycles`` consecutive latencies; a shorter last
    block is dropped (fewer cycles give a stochastically smaller maximum)."""
    values = np.asarray(latencies, dtype=np.int64)
    whole = len(values) // block_cycles * block_cycles
    return values[:whole].reshape(-1, block_cycles).max(axis=1)


def per_block(exceedance: float, block_s: float, horizon_s: float) -> float:
    """The per-block exceedance probability equivalent to ``exceedance`` over ``horizon_s``."""
    blocks = horizon_s / block_s
    # -expm1(log1p(-P) / m) is 1 - (1 - P) ** (1 / m) without cancellation for tiny P.
    return -math.expm1(math.log1p(-exceedance) / blocks)


def continuous(maxima: npt.ArrayLike, seed: int = SEED) -> Floats:
    """Whole-µs maxima spread over the microsecond each stands for (see the module docstring)."""
    values = np.asarray(maxima, dtype=np.float64)
    return values + np.random.default_rng(seed).uniform(0.0, 1.0, size=values.shape)


def assumptions(maxima: npt.ArrayLike, method: Method = "gev") -> tuple[Assumption, ...]:
    """The checks an extreme-value estimate from these block maxima (in time order) rests on."""
    x = np.asarray(maxima, dtype=np.float64)
    n = len(x)
    # round() first: 30 / (1 - 0.9) is 300.00000000000006 in floating point.
    needed = MIN_BLOCKS if method == "gev" else math.ceil(
        round(MIN_EXCEEDANCES / (1 - THRESHOLD_QUANTILE), 6))
    enough = Assumption("blocks", n >= needed, f"{n} block maxima, {method.upper()} needs at "
                        f"least {needed}")
    if n < MIN_BLOCKS:
        return (enough,)
    return (enough, _independence(x), _stationarity(x))


def _independence(x: Floats) -> Assumption:
    lags = min(10, len(x) // 5)
    ranks = stats.rankdata(x)
    p = float(acorr_ljungbox(ranks, lags=[lags], return_df=True)["lb_pvalue"].iloc[0])
    return Assumption("independence", p >= ALPHA_ASSUMPTION,
                      f"Ljung-Box on ranks, {lags} lags: p = {p:.3g} (autocorrelated below "
                      f"{ALPHA_ASSUMPTION:g}); longer blocks decorrelate their maxima")


def _stationarity(x: Floats) -> Assumption:
    first, second = np.array_split(x, 2)
    p_level = float(stats.mannwhitneyu(first, second, alternative="two-sided").pvalue)
    p_shape = float(stats.ks_2samp(first, second).pvalue)
    ok = min(p_level, p_shape) >= ALPHA_ASSUMPTION / 2
    return Assumption("stationarity", ok,
                      f"first half vs second half: Mann-Whitney p = {p_level:.3g}, KS p = "
                      f"{p_shape:.3g} (changing below {ALPHA_ASSUMPTION / 2:g})")


Quantile = Callable[[Floats], float]


def _shape(method: Method, x: Floats) -> Assumption:
    if method == "gev":
        xi = -float(stats.genextreme.fit(x)[0])  # scipy's c is -xi
    else:
        u = float(np.quantile(x, THRESHOLD_QUANTILE))
        xi = float(stats.genpareto.fit(x[x > u] - u, floc=0)[0])
    return Assumption("shape", bool(xi < MAX_SHAPE),
                      f"fitted xi = {xi:.2f} (a mixture of regimes from {MAX_SHAPE:g} on)")


def _gev(p: float, data: Floats) -> Quantile:
    # The fit to all the data starts each resample's fit: about three times faster.
    start = stats.genextreme.fit(data)

    def quantile(x: Floats) -> float:
        c, loc, scale = stats.genextreme.fit(x, start[0], loc=start[1], scale=start[2])
        return float(stats.genextreme.isf(p, c, loc, scale))
    return quantile


def _pot(p: float, data: Floats) -> Quantile:
    def quantile(x: Floats) -> float:
        u = float(np.quantile(x, THRESHOLD_QUANTILE))
        excess = x[x > u] - u
        rate = len(excess) / len(x)
        # The data's excess count was checked (assumptions); a resample's ties may leave a few
        # fewer. A quantile below the threshold is no tail estimate.
        if p >= rate:
            return math.nan
        c, _, scale = stats.genpareto.fit(excess, floc=0)
        return u + float(stats.genpareto.isf(p / rate, c, 0, scale))
    return quantile


_MODELS: dict[Method, Callable[[float, Floats], Quantile]] = {"gev": _gev, "pot": _pot}


def max_quantile(maxima: npt.ArrayLike, block_s: float, horizon_s: float, exceedance: float,
                 *, method: Method = "gev", confidence: float = CONFIDENCE,
                 resamples: int = RESAMPLES, seed: int = SEED) -> Estimate:
    """The latency the maximum over ``horizon_s`` exceeds with probability ``exceedance``,
    estimated from ``maxima`` (whole µs, in time order) of blocks ``block_s`` seconds long."""
    checks = assumptions(maxima, method)
    x = continuous(maxima, seed)
    if all(a.ok for a in checks):
        with np.errstate(all="ignore"):
            checks += (_shape(method, x),)
    failed = [str(a) for a in checks if not a.ok]
    if failed:
        return Estimate(method, None, None, None, confidence, checks, "; ".join(failed))
    quantile = _MODELS[method](per_block(exceedance, block_s, horizon_s), x)
    with np.errstate(all="ignore"):
        value = quantile(x)
        ci = stats.bootstrap((x,), quantile, vectorized=False, n_resamples=resamples,
                             confidence_level=confidence, method="BCa",
                             rng=np.random.default_rng(seed)).confidence_interval
    lower, upper = float(ci.low), float(ci.high)
    if not all(map(math.isfinite, (value, lower, upper))):
        return Estimate(method, None, None, None, confidence, checks,
                        f"the {method.upper()} fit did not give a finite quantile "
                        "(on the data or on its resamples)")
    return Estimate(method, value, lower, upper, confidence, checks)


def pwcet(maxima: npt.ArrayLike, block_s: float, per_hour: float, *, method: Method = "gev",
          confidence: float = CONFIDENCE, resamples: int = RESAMPLES,
          seed: int = SEED) -> Estimate:
    """The probabilistic WCET: the latency exceeded with probability ``per_hour`` per hour."""
    return max_quantile(maxima, block_s, HOUR_S, per_hour, method=method, confidence=confidence,
                        resamples=resamples, seed=seed)


def pwcet_all(series: Sequence[tuple[str, npt.ArrayLike, float]], per_hour: float, *,
              method: Method = "gev", confidence: float = CONFIDENCE,
              resamples: int = RESAMPLES, seed: int = SEED) -> tuple[Estimate, list[Estimate]]:
    """The pWCET of several threads running together, and each thread's, from ``(name, maxima,
    block_s)`` per thread.

    The system exceeds x when any thread does, so its pWCET at P is at least every thread's
    pWCET at P/k (k threads) and, by the union bound, at most the largest of them: the overall
    estimate and bounds are the largest of the threads' at P/k. Each thread's interval is at
    confidence 1 - (1 - confidence)/k (Bonferroni), so all k hold together at ``confidence``.
    """
    k = len(series)
    level = 1 - (1 - confidence) / k
    each = [max_quantile(maxima, block_s, HOUR_S, per_hour / k, method=method, confidence=level,
                         resamples=resamples, seed=seed) for _, maxima, block_s in series]
    if not each:
        return Estimate(method, None, None, None, confidence, (), "no threads"), each
    invalid = [f"{name}: {e.why_not}" for (name, _, _), e in zip(series, each, strict=True)
               if not e.valid]
    if invalid:
        return Estimate(method, None, None, None, confidence, (), "; ".join(invalid)), each
    return Estimate(method, max(e.value_us or 0.0 for e in each),
                    max(e.lower_us or 0.0 for e in each), max(e.upper_us or 0.0 for e in each),
                    confidence, ()), each
