"""The tail of a latency distribution: pWCET with a confidence interval, from block maxima.

One run's maximum is one draw from the tail; two runs of one kernel disagree. Extreme-value
theory models the maximum of a block of many cycles (GEV) and the excess of those maxima over a
high threshold (peaks over threshold, generalized Pareto), which extrapolates to exceedance
probabilities a short run never reached. The extrapolation holds only under its assumptions, so
they are checked next to every estimate, and an estimate whose checks fail is no number at all
("no valid estimate: <why>"):

- enough blocks: ``MIN_BLOCKS`` maxima to fit a GEV (a number needs the 120 its upper-tail
  checks are calibrated from, below); POT needs ``MIN_EXCEEDANCES`` above its threshold;
- independence of consecutive block maxima: Ljung-Box (statsmodels) on their ranks, since on raw
  heavy-tailed values a few spikes dominate the autocorrelations;
- stationarity: first half against second half, Mann-Whitney U (a drifting level) and two-sample
  Kolmogorov-Smirnov (a changing shape), each at half of ``ALPHA_ASSUMPTION``.

- a plausible shape: the fitted shape xi below ``MAX_SHAPE`` (finite variance). A scheduler's
  latency tail is light or moderately heavy; a fitted xi of 0.5 or more says the maxima mix two
  regimes (on a VM: the guest's own latencies and the host's preemptions of milliseconds), and
  no single extreme-value law extrapolates such a mixture (this VM's 30 s run: xi = 1.7).
- the fit itself, in the upper tail (GEV, since 2026-11-28): a milder mixture — 10 % of blocks
  from a second regime a few scales higher — fits a GEV of moderate shape (xi about 0.2, passing
  the check above) whose extrapolation is confidently wrong (issue 36: a 6 ms estimate for a
  true 208 µs, the lower bound above the truth in 98 % of series). The upper-tail
  Anderson-Darling statistic AU² (Ahmad, Sinclair & Spurr 1988: the squared distance between
  the fitted and the empirical distribution, weighted by 1 / (1 − F), so the largest maxima
  count most) of the maxima against the ML fit, refused above its cut.
- the shape's stability across thresholds (GEV, since 2026-11-28): AU² catches the audit's
  mixture in only about 7 % of 130-block series. There the GEV's shape is the bulk-to-cluster
  spread, while the largest maxima alone (a generalized Pareto fitted to the excesses of the top
  ``STABILITY_FRACTION`` over the next maximum: peaks over a higher threshold) are the upper
  regime's own light tail. For true GEV maxima both estimate the same xi. Refused when the
  drift (xi_GEV − xi_top)·√k (k excesses, the GPD shape's standard error scaling) exceeds its
  cut: one-sided, since only a GEV tail heavier than its own largest maxima extrapolates to a
  confidently too-high pWCET (the mixture's failure); a top heavier than the fit is AU²'s to
  catch.

The two cuts depend on the number of blocks (the GPD's shape on 30 excesses is biased and
heavy-tailed; √k does not standardize it there), so they come from a committed table,
``FIT_CUTS_FILE``, made by null simulation (benchmarks/pwcet_fit_cuts.py: true GEV maxima of xi
−0.2 to 0.5, 120 to 1000 blocks): each check's cut at a size is the largest over the shapes of
its null's 1 − ALPHA_ASSUMPTION / 2 quantile, so the two checks together refuse a true GEV
series at most about ``ALPHA_ASSUMPTION`` of the time. Measured on other seeds in
benchmarks/pwcet_fit_check.py (docs/statistics.md). Below the table's first size (120 blocks:
30 excesses) the checks are not calibrated and the GEV estimate is refused ("fit FAILED: ...
calibrated from 120 blocks on"), an *incomplete* for a ``pwcet_us`` budget: at those sizes a
two-regime mixture is not told from one tail (AU² caught the audit's in 2 % of 50-block
series). Neither is tested on a degenerate fit (xi at most −1, the endpoint on the largest
maximum), which the interval's search refuses on its own.

POT threshold: the 90 % quantile of the block maxima (``THRESHOLD_QUANTILE``), with at least
``MIN_EXCEEDANCES`` maxima above it: a common rule (the top 10 %) that keeps the GPD's
asymptotics plausible while leaving enough excesses to fit two parameters. Taking the excesses
of block maxima, not of single samples, declusters them: a burst of slow cycles counts once.

Ties: cyclictest prints whole µs, cut toward zero, so a printed k means a latency in [k, k + 1).
The fits assume a continuous distribution and 1 µs-discrete maxima pile up in ties, so each
maximum gets U[0, 1) added (a continuity correction) from a generator with a fixed seed: the same
data always give the same estimate. Estimates are thus of the true latency, up to 1 µs above
what cyclictest would print: on the safe side of a budget. Maxima in ns (cyclictest -N) get
U[0, 1 ns) (``resolution_us``): a whole µs of spread would lift a 7 µs tail by 7 %.

Confidence interval, GEV (what the gate's ``pwcet_us`` budget uses): profile likelihood: every
return level z whose profile log-likelihood (the best fit with the return level held at z) lies
within a cut of the maximum: chi2_1(confidence) / 2 below the estimate, so the lower bound errs
nominally (1 - confidence) / 2; chi2_1(1 - (1 - confidence) / UPPER_STRICTNESS) / 2 above it, so
the upper bound errs nominally a quarter as often (1.25 % at 90 %). The claim stays "each side
errs at most (1 - confidence) / 2": this far out (10^-13 per block) the fitted shape runs low
and a symmetric cut let the truth lie above the upper bound more often than the claim allows,
worst for heavy tails with many blocks (the measured coverage of both cuts: docs/statistics.md
and the journal). The profile is fitted over (mu, log sigma), which
the data pin down, the shape following from z; its ends are found walking out from the estimate
in doubling steps, then by bisection. A far quantile's sampling distribution is strongly skewed
and a bootstrap interval (BCa over blocks) undercovered it on GEV maxima with a known answer
(docs/journal.md, 2026-11-25). When the region reaches a shape of 1 (the data allow any tail)
there is no valid estimate: a refusal, never a number that misleads. Coverage by shape and
number of blocks: benchmarks/pwcet_coverage.py (docs/statistics.md, "pWCET intervals").

Confidence interval, POT: BCa bootstrap over blocks (``scipy.stats.bootstrap``), refitting each
resample; re-choosing the POT threshold in each resample puts that choice's variability into the
interval. It can undercover with few excesses: the gate does not use it.

Per hour to per block: with blocks of ``d`` seconds an hour has ``m = 3600 / d`` of them, and a
latency exceeded with probability P per hour satisfies ``F(x) ** m = 1 - P`` for independent
blocks, so each block exceeds it with ``p = 1 - (1 - P) ** (1 / m)``.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import numpy.typing as npt
from scipy import optimize, stats
from statsmodels.stats.diagnostic import acorr_ljungbox

Floats = npt.NDArray[np.float64]
Method = Literal["gev", "pot"]

MIN_BLOCKS = 50
THRESHOLD_QUANTILE = 0.9
MIN_EXCEEDANCES = 30
MAX_SHAPE = 0.5
STABILITY_FRACTION = 0.25
FIT_CUTS_FILE = Path(__file__).with_name("pwcet-fit-cuts.json")
"""The upper-tail checks' cuts per number of blocks, from null simulation (module doc)."""
# Each assumption check wrongly refuses good data this often.
ALPHA_ASSUMPTION = 0.01
# Two-sided, so each one-sided statement the gate makes from it (the pWCET is at most the
# upper bound; at least the lower bound) is wrong at most 5 % of the time.
CONFIDENCE = 0.90
# The GEV profile interval's upper end is cut at nominal error (1 - CONFIDENCE) / 2 / this, the
# lower end at (1 - CONFIDENCE) / 2: the measured shortfall of the upper end (module doc).
UPPER_STRICTNESS = 4.0
RESAMPLES = 500
HOUR_S = 3600.0
SEED = 20240601
# The profile's search keeps the shape in [-1, 1]: beyond 1 the mean is infinite, so a region that
# reaches it on the upper side bounds nothing (refused); below -1 the likelihood is unbounded.
SHAPE_RANGE = (-1.0, 1.0)
SHAPE_SEARCH = (-5.0, 5.0)  # where the profile looks for the shape a return level calls for


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


def continuous(maxima: npt.ArrayLike, seed: int = SEED, resolution_us: float = 1.0) -> Floats:
    """Maxima spread over the step each stands for, whole µs or (-N) ns (see the module
    docstring)."""
    values = np.asarray(maxima, dtype=np.float64)
    return values + np.random.default_rng(seed).uniform(0.0, resolution_us, size=values.shape)


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


def _gev_nll(theta: Floats, x: Floats) -> float:
    """GEV negative log-likelihood at (mu, log sigma, xi); inf outside the support."""
    mu, sigma, xi = float(theta[0]), math.exp(min(float(theta[1]), 700.0)), float(theta[2])
    if not (sigma > 0 and math.isfinite(mu) and math.isfinite(xi)):
        return math.inf
    z = (x - mu) / sigma
    if abs(xi) < 1e-9:
        return len(x) * math.log(sigma) + float(z.sum() + np.exp(-z).sum())
    t = 1.0 + xi * z
    if (t <= 0).any():
        return math.inf
    log_t = np.log(t)
    return len(x) * math.log(sigma) + float((1 + 1 / xi) * log_t.sum()
                                            + np.exp(-log_t / xi).sum())


def _return_level(theta: Floats, log_y: float) -> float:
    """The GEV's quantile exceeded with probability p, log_y = log(-log(1 - p))."""
    mu, sigma, xi = float(theta[0]), math.exp(float(theta[1])), float(theta[2])
    if abs(xi) < 1e-9:
        return mu - sigma * log_y
    return mu + sigma * math.expm1(-xi * log_y) / xi


def _gev_fit(x: Floats) -> optimize.OptimizeResult:
    """The GEV's maximum-likelihood fit over (mu, log sigma, xi), from scipy's as a start."""
    c, loc, scale = stats.genextreme.fit(x)
    return optimize.minimize(_gev_nll, [loc, math.log(scale), -c], args=(x,),
                             method="Nelder-Mead",
                             options={"xatol": 1e-6, "fatol": 1e-8, "maxiter": 4000})


def upper_ad(x: Floats, theta: Floats) -> float:
    """The upper-tail Anderson-Darling AU² of the maxima against the GEV ``theta`` (module doc):
    AU² = n/2 − 2·Σ F(x_i) − Σ (2 − (2i − 1)/n)·ln(1 − F(x_(i))); NaN on a degenerate fit
    (xi at most −1, the endpoint on the largest maximum), where it is not tested."""
    mu, sigma, xi = float(theta[0]), math.exp(float(theta[1])), float(theta[2])
    if xi <= -1:
        return math.nan
    u = np.clip(np.sort(stats.genextreme.cdf(x, -xi, mu, sigma)), 1e-12, 1 - 1e-12)
    n = len(u)
    weights = 2 - (2 * np.arange(1, n + 1) - 1) / n
    return float(n / 2 - 2 * u.sum() - (weights * np.log1p(-u)).sum())


def shape_drift(x: Floats, xi: float) -> float:
    """(xi_GEV − xi_top)·√k: the GEV's shape ``xi`` against a GPD's fitted to the excesses of the
    top ``STABILITY_FRACTION`` of the maxima (k of them) over the next maximum (module doc)."""
    k = round(STABILITY_FRACTION * len(x))
    ordered = np.sort(x)
    top = float(stats.genpareto.fit(ordered[-k:] - ordered[-k - 1], floc=0)[0])
    return (xi - top) * math.sqrt(k)


@dataclass(frozen=True)
class FitCuts:
    """The two upper-tail checks' cuts at one number of blocks (``FIT_CUTS_FILE``)."""

    blocks: int
    max_upper_ad: float
    max_shape_drift: float


@functools.cache
def fit_cuts_table() -> tuple[FitCuts, ...]:
    """The committed table, by number of blocks (made by benchmarks/pwcet_fit_cuts.py)."""
    doc = json.loads(FIT_CUTS_FILE.read_text(encoding="utf-8"))
    return tuple(sorted((FitCuts(int(c["blocks"]), float(c["max_upper_ad"]),
                                 float(c["max_shape_drift"])) for c in doc["cuts"]),
                        key=lambda c: c.blocks))


def fit_cuts(blocks: int) -> FitCuts | None:
    """The cuts for ``blocks`` maxima: between two tabulated sizes the larger of each (fewer
    false refusals, whichever way the null moves between them), beyond the last the last's
    (both statistics are scaled to settle as blocks grow); None below the first, where the
    checks are not calibrated."""
    table = fit_cuts_table()
    below = [c for c in table if c.blocks <= blocks]
    if not below:
        return None
    around = [below[-1]] + ([c for c in table if c.blocks > blocks][:1]
                            if below[-1].blocks < blocks else [])
    return FitCuts(blocks, max(c.max_upper_ad for c in around),
                   max(c.max_shape_drift for c in around))


def _uncalibrated(n: int) -> Assumption:
    return Assumption("fit", False, f"{n} block maxima: the upper-tail fit checks are calibrated "
                      f"from {fit_cuts_table()[0].blocks} blocks on; below that a mixture of two "
                      "regimes is not told from one tail (measure longer)")


def _upper_fit(x: Floats, theta: Floats, cut: float) -> Assumption:
    """The upper-tail Anderson-Darling check against the fitted GEV (module doc)."""
    au2 = upper_ad(x, theta)
    if math.isnan(au2):
        return Assumption("fit", True, f"upper-tail Anderson-Darling not tested: a degenerate "
                          f"fit (xi = {float(theta[2]):.2f}, the endpoint on the largest "
                          "maximum)")
    return Assumption("fit", au2 <= cut,
                      f"upper-tail Anderson-Darling AU² = {au2:.3f} against the fitted GEV "
                      f"(refused above {cut:.3g} at {len(x)} blocks: the largest maxima follow "
                      "no single GEV, e.g. two regimes)")


def _stability(x: Floats, xi: float, cut: float) -> Assumption:
    """The GEV's shape against a GPD's fitted to the largest maxima (module doc)."""
    k = round(STABILITY_FRACTION * len(x))
    drift = shape_drift(x, xi)
    return Assumption("stability", drift <= cut,
                      f"shape across thresholds: GEV xi = {xi:.2f} on all maxima, GPD on the top "
                      f"{k}; (difference)·√{k} = {drift:.2f} (refused above {cut:.3g} at "
                      f"{len(x)} blocks: the largest maxima have a lighter tail than the fit "
                      "extrapolates, e.g. two regimes)")


def _gev_profile(p: float, x: Floats, confidence: float,
                 best: optimize.OptimizeResult) -> tuple[float, float, float] | str:
    """The return level at per-block probability ``p``, with its profile-likelihood interval
    (the module's doc) around the ML fit ``best``, or why there is none."""
    log_y = math.log(-math.log1p(-p))
    if not math.isfinite(best.fun):
        return "the GEV fit found no parameters that hold the data"
    mu0, log_sigma0, xi0 = (float(v) for v in best.x)
    l0, sigma0 = float(best.fun), math.exp(log_sigma0)
    z0 = _return_level(best.x, log_y)
    edges = {-1: stats.chi2.ppf(confidence, 1) / 2,
             +1: stats.chi2.ppf(1 - (1 - confidence) / UPPER_STRICTNESS, 1) / 2}

    def growth(xi: float) -> float:  # (y^-xi - 1) / xi: z = mu + sigma * growth(xi)
        return -log_y if abs(xi) < 1e-9 else math.expm1(-xi * log_y) / xi

    def shape_for(ratio: float) -> float | None:
        """The xi with growth(xi) = ratio (growth rises from 0 to infinity), in SHAPE_SEARCH."""
        if not ratio > 0:
            return None
        target = math.log(ratio)
        lo, hi = SHAPE_SEARCH
        if math.log(growth(lo)) > target or math.log(growth(hi)) < target:
            return None
        return float(optimize.brentq(lambda xi: math.log(growth(xi)) - target, lo, hi,
                                     xtol=1e-10))

    def profile(z: float, start: Floats) -> tuple[float, Floats, float]:
        """Least negative log-likelihood with the return level held at z, less the maximum's
        (half the deviance), over (mu, log sigma): the data pin both down, the shape follows
        from z. Also the minimum's (mu, log sigma) and shape."""
        def nll(q: Floats) -> float:
            xi = shape_for((z - float(q[0])) / math.exp(float(q[1])))
            return math.inf if xi is None else _gev_nll(np.array([q[0], q[1], xi]), x)
        simplex = [start, start + [0.5 * sigma0, 0.0], start + [0.0, 0.2]]
        found = optimize.minimize(nll, start, method="Nelder-Mead",
                                  options={"initial_simplex": simplex, "xatol": 1e-6,
                                           "fatol": 1e-6, "maxiter": 1000})
        xi = shape_for((z - float(found.x[0])) / math.exp(float(found.x[1])))
        return float(found.fun) - l0, found.x, math.nan if xi is None else xi

    def end(direction: int) -> float | str:
        edge = edges[direction]
        start, inside, step = np.array([mu0, log_sigma0]), z0, 0.5 * sigma0
        for _ in range(60):
            z = z0 + direction * step
            deviance, q, _ = profile(z, start)
            if deviance > edge:
                # Bisection, each fit started from the last one inside the region: the profile
                # is only known to the inner fit's precision, so no root finder that needs signs.
                outside = z
                while abs(outside - inside) > 1e-3 * sigma0 + 1e-5 * abs(inside):
                    middle = (inside + outside) / 2
                    deviance, q, shape = profile(middle, start)
                    if deviance > edge:
                        outside = middle
                    else:
                        start, inside = q, middle
                if profile(inside, start)[2] >= SHAPE_RANGE[1]:
                    break
                return inside
            start, inside, step = q, z, 2 * step
        return (f"the likelihood bounds no {'upper' if direction > 0 else 'lower'} limit: "
                f"shapes of {SHAPE_RANGE[1]:g} and more (an unbounded tail) fit the data")

    lower, upper = end(-1), end(+1)
    if isinstance(lower, str):
        return lower
    if isinstance(upper, str):
        return upper
    return z0, lower, upper


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


def max_quantile(maxima: npt.ArrayLike, block_s: float, horizon_s: float, exceedance: float,
                 *, method: Method = "gev", confidence: float = CONFIDENCE,
                 resamples: int = RESAMPLES, seed: int = SEED,
                 resolution_us: float = 1.0) -> Estimate:
    """The latency the maximum over ``horizon_s`` exceeds with probability ``exceedance``,
    estimated from ``maxima`` (in time order, to ``resolution_us``) of blocks ``block_s``
    seconds long."""
    checks = assumptions(maxima, method)
    x = continuous(maxima, seed, resolution_us)
    if all(a.ok for a in checks):
        with np.errstate(all="ignore"):
            checks += (_shape(method, x),)
    failed = [str(a) for a in checks if not a.ok]
    if failed:
        return Estimate(method, None, None, None, confidence, checks, "; ".join(failed))
    p = per_block(exceedance, block_s, horizon_s)
    with np.errstate(all="ignore"):
        if method == "gev":
            best = _gev_fit(x)
            cuts = fit_cuts(len(x))
            if cuts is None:
                checks += (_uncalibrated(len(x)),)
                return Estimate(method, None, None, None, confidence, checks, str(checks[-1]))
            if math.isfinite(best.fun):
                checks += (_upper_fit(x, best.x, cuts.max_upper_ad),
                           _stability(x, float(best.x[2]), cuts.max_shape_drift))
                failed = [str(a) for a in checks[-2:] if not a.ok]
                if failed:
                    return Estimate(method, None, None, None, confidence, checks,
                                    "; ".join(failed))
            found = _gev_profile(p, x, confidence, best)
            if isinstance(found, str):
                return Estimate(method, None, None, None, confidence, checks, found)
            value, lower, upper = found
        else:
            quantile = _pot(p, x)
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
              resamples: int = RESAMPLES, seed: int = SEED,
              resolution_us: float = 1.0) -> tuple[Estimate, list[Estimate]]:
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
                         resamples=resamples, seed=seed, resolution_us=resolution_us)
            for _, maxima, block_s in series]
    if not each:
        return Estimate(method, None, None, None, confidence, (), "no threads"), each
    invalid = [f"{name}: {e.why_not}" for (name, _, _), e in zip(series, each, strict=True)
               if not e.valid]
    if invalid:
        return Estimate(method, None, None, None, confidence, (), "; ".join(invalid)), each
    return Estimate(method, max(e.value_us or 0.0 for e in each),
                    max(e.lower_us or 0.0 for e in each), max(e.upper_us or 0.0 for e in each),
                    confidence, ()), each
