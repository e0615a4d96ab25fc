"""Tail statistics (rtgate.stats.tail) and the pwcet_us budget: synthetic tails with known
parameters, seeded; a real 30 s cyclictest run from this machine (tests/data/tail/README.md);
the check through the real CLI, JUnit and Markdown."""

from __future__ import annotations

import fnmatch
import json
import textwrap
import tomllib
from pathlib import Path

import numpy as np
import pytest
from clirun import RunCli
from scipy import optimize, stats

from rtgate.gate.thresholds import PwcetBudget, load_thresholds
from rtgate.gate.verdict import Verdict, evaluate
from rtgate.result import load_result
from rtgate.stats import tail
from rtgate.textfmt import fmt

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "tests" / "data" / "tail" / "local-idle-30s.result.json"
# Tests resample less than the gate: the coverage trials fit hundreds of times.
RESAMPLES = 200


def test_per_hour_becomes_per_block() -> None:
    p = tail.per_block(1e-9, 0.5, 3600)
    # 7200 independent half-second blocks: (1 - p) ** 7200 == 1 - 1e-9, p close to 1e-9 / 7200.
    assert (1 - p) ** 7200 == pytest.approx(1 - 1e-9, abs=1e-15)
    assert p == pytest.approx(1e-9 / 7200, rel=1e-6)
    assert tail.per_block(0.5, 3600, 3600) == pytest.approx(0.5)


def test_block_maxima_drop_a_short_last_block() -> None:
    assert tail.block_maxima([1, 5, 2, 2, 9, 3, 7], 3).tolist() == [5, 9]


def gev_covers(trial: int) -> bool | None:
    """Whether the 90 % interval of seeded series ``trial`` covers the true pWCET: GEV with
    xi = 0.1 (scipy's c = -xi), 1 s blocks, 200 of them, whole µs like cyclictest; None when
    the fit checks refused it (about 1 % of true GEV series, docs/statistics.md)."""
    c, loc, scale, per_hour = -0.1, 20.0, 3.0, 1e-3
    truth = stats.genextreme.isf(tail.per_block(per_hour, 1.0, 3600), c, loc, scale)
    x = np.floor(stats.genextreme.rvs(c, loc=loc, scale=scale, size=200,
                                      random_state=np.random.default_rng(trial)))
    est = tail.pwcet(x, 1.0, per_hour, resamples=RESAMPLES)
    if not est.valid:
        assert est.why_not.startswith(("stability FAILED", "fit FAILED")), est.why_not
        return None
    assert est.lower_us is not None and est.upper_us is not None
    # Estimates are of the true latency, which lies in [printed, printed + 1).
    return est.lower_us <= truth + 1 and truth <= est.upper_us


def pot_covers(trial: int) -> bool:
    """Whether the 90 % interval of seeded series ``trial`` covers the true quantile: block
    maxima with an exact GPD tail above 10 µs (xi = 0.1, scale 3), so every higher threshold
    sees a GPD with the same shape and the POT model is right whatever u it picks."""
    c, loc, scale = 0.1, 10.0, 3.0
    block_s, horizon_s, exceedance = 0.1, 600.0, 0.5
    truth = stats.genpareto.isf(tail.per_block(exceedance, block_s, horizon_s), c, loc, scale)
    x = np.floor(stats.genpareto.rvs(c, loc=loc, scale=scale, size=600,
                                     random_state=np.random.default_rng(100 + trial)))
    est = tail.max_quantile(x, block_s, horizon_s, exceedance, method="pot",
                            resamples=RESAMPLES)
    assert est.valid, est.why_not
    assert est.lower_us is not None and est.upper_us is not None
    return est.lower_us <= truth + 1 and truth <= est.upper_us


# Three seeded series each (about 5 s of fitting apiece): an interval misplaced by a wrong
# level or horizon misses all three. benchmarks/monte_carlo.py runs eight, the coverage rate.
def test_gev_interval_covers_the_true_pwcet_in_most_trials() -> None:
    # Series 0 is one of the ~1 % of true GEV series the stability check refuses: the first
    # three given a number are 1-3; more than one refusal in four would be a broken check.
    trials = [gev_covers(trial) for trial in range(4)]
    given = [t for t in trials if t is not None]
    assert len(given) >= 3, f"{4 - len(given)} of 4 true GEV series refused"
    covered = sum(given[:3])
    assert covered >= 2, f"90 % intervals covered the truth in {covered} of 3 trials"


def test_pot_interval_covers_the_true_quantile_in_most_trials() -> None:
    # POT extrapolates from 60 excesses and undercovers (9 of 12 such trials measured): most,
    # not 90 %. That is why the gate decides on GEV and names the method.
    covered = sum(pot_covers(trial) for trial in range(3))
    assert covered >= 2, f"90 % intervals covered the truth in {covered} of 3 trials"


def profile_deviance(x: np.ndarray, z: float, log_y: float) -> float:
    """Twice the GEV log-likelihood lost by holding the return level at z, computed apart from
    tail's own profile: over (xi, log sigma) with mu = z - sigma * (y^-xi - 1) / xi, from several
    starts (tail profiles over (mu, log sigma))."""
    c, loc, scale = stats.genextreme.fit(x)
    best = optimize.minimize(tail._gev_nll, [loc, np.log(scale), -c], args=(x,),
                             method="Nelder-Mead", options={"xatol": 1e-8, "fatol": 1e-10,
                                                            "maxiter": 8000})

    def held(q: np.ndarray) -> float:
        xi, log_sigma = float(q[0]), float(q[1])
        growth = -log_y if abs(xi) < 1e-9 else np.expm1(-xi * log_y) / xi
        return tail._gev_nll(np.array([z - np.exp(log_sigma) * growth, log_sigma, xi]), x)

    with np.errstate(all="ignore"):
        found = min((optimize.minimize(held, [xi0, best.x[1] + d], method="Nelder-Mead",
                                       options={"xatol": 1e-9, "fatol": 1e-10,
                                                "maxiter": 8000})
                     for xi0 in (best.x[2] - 0.1, best.x[2], best.x[2] + 0.1)
                     for d in (-0.2, 0, 0.2)), key=lambda r: r.fun)
    return 2 * (float(found.fun) - float(best.fun))


def test_the_upper_end_is_cut_at_a_quarter_of_the_lower_ends_nominal_error() -> None:
    """The 90 % interval's lower end lies where the profile deviance reaches chi2_1(0.90), its
    upper end where it reaches chi2_1(0.975): each side claims at most 5 % error, and the upper
    end, measured to err up to twice nominal for heavy tails (docs/statistics.md, "pWCET
    intervals"), is cut at nominal 1.25 %. Checked on a seeded xi = 0.2 series, the deviance
    computed apart from tail's profile."""
    x0 = np.floor(stats.genextreme.rvs(-0.2, loc=50, scale=5, size=200,
                                       random_state=np.random.default_rng(3)))
    est = tail.pwcet(x0, 1.0, 1e-9)
    assert est.valid and est.lower_us is not None and est.upper_us is not None, est.why_not
    x = tail.continuous(x0)
    log_y = np.log(-np.log1p(-tail.per_block(1e-9, 1.0, tail.HOUR_S)))
    assert profile_deviance(x, est.lower_us, log_y) == pytest.approx(
        stats.chi2.ppf(0.90, 1), abs=0.03)
    assert profile_deviance(x, est.upper_us, log_y) == pytest.approx(
        stats.chi2.ppf(0.975, 1), abs=0.03)


def gev_maxima(n: int, seed: int = 7) -> np.ndarray:
    return np.floor(stats.genextreme.rvs(-0.1, loc=20, scale=3, size=n,
                                         random_state=np.random.default_rng(seed)))


def test_a_drifting_series_fails_stationarity() -> None:
    x = gev_maxima(300)
    assert tail.pwcet(x, 1.0, 1e-3, resamples=RESAMPLES).valid  # the same draws, undrifted
    drifting = x + np.floor(np.linspace(0, 6, len(x)))  # 6 µs slower by the end of the run
    est = tail.pwcet(drifting, 1.0, 1e-3, resamples=RESAMPLES)
    assert est.value_us is None and est.lower_us is None and est.upper_us is None
    assert "stationarity FAILED" in est.why_not
    assert str(est).startswith("no valid estimate: ")


def test_autocorrelated_maxima_fail_independence() -> None:
    # AR(1) with phi = 0.6 started in its stationary law: same marginal throughout, so only
    # the dependence between neighbouring blocks is wrong.
    rng = np.random.default_rng(3)
    phi, n = 0.6, 300
    z = np.empty(n)
    z[0] = rng.normal(scale=1 / np.sqrt(1 - phi**2))
    for i in range(1, n):
        z[i] = phi * z[i - 1] + rng.normal()
    est = tail.pwcet(np.floor(20 + 3 * z), 1.0, 1e-3, resamples=RESAMPLES)
    assert est.value_us is None
    assert "independence FAILED: Ljung-Box" in est.why_not
    assert "stationarity FAILED" not in est.why_not


@pytest.mark.parametrize(("method", "n", "needed"), [("gev", 49, 50), ("pot", 299, 300)])
def test_too_few_blocks_give_no_estimate(method: tail.Method, n: int, needed: int) -> None:
    est = tail.pwcet(gev_maxima(n), 1.0, 1e-3, method=method, resamples=RESAMPLES)
    assert est.value_us is None
    assert f"blocks FAILED: {n} block maxima, {method.upper()} needs at least {needed}" \
        in est.why_not
    enough = tail.pwcet(gev_maxima(needed), 1.0, 1e-3, method=method, resamples=RESAMPLES)
    assert "blocks FAILED" not in enough.why_not
    # GEV's fit checks are calibrated from 120 blocks on: below, no number (the next test).
    assert enough.valid == (method == "pot"), enough.why_not


def test_below_the_fit_checks_calibration_a_gev_estimate_is_refused() -> None:
    """From 50 blocks the GEV can be fitted, but its upper-tail checks' cuts are tabulated from
    120 blocks on (tail.FIT_CUTS_FILE): below that a two-regime mixture is not told from one
    tail, so there is no number, whatever the other checks say."""
    first = tail.fit_cuts_table()[0].blocks
    assert first == 120
    short = tail.pwcet(gev_maxima(first - 1), 1.0, 1e-3)
    assert not short.valid
    assert short.why_not == (f"fit FAILED: {first - 1} block maxima: the upper-tail fit checks "
                             f"are calibrated from {first} blocks on; below that a mixture of "
                             "two regimes is not told from one tail (measure longer)")
    assert all(a.ok for a in short.assumptions if a.name != "fit")
    assert tail.pwcet(gev_maxima(first), 1.0, 1e-3).valid


def real_series(merge: int) -> list[tuple[str, list[int], float]]:
    """The real run's threads, block maxima merged ``merge`` blocks at a time."""
    series = []
    for t in load_result(REAL).threads:
        assert t.blocks is not None and t.interval_us is not None
        whole = t.blocks.cycles // t.blocks.block_cycles
        maxima = tail.block_maxima(t.blocks.maxima_us[:whole], merge)
        series.append((f"thread {t.thread}", maxima.tolist(),
                       merge * t.blocks.block_cycles * t.interval_us / 1e6))
    return series


def test_real_run_is_refused_dependent_then_a_mixture() -> None:
    fine, _ = tail.pwcet_all(real_series(1), 1e-3, resamples=RESAMPLES)
    assert fine.value_us is None
    assert "thread 0: " in fine.why_not and "thread 1: " in fine.why_not
    assert fine.why_not.count("independence FAILED") == 2
    # Longer blocks are independent and stationary, but this VM's maxima mix the guest's
    # latencies (tens of µs) with the host's preemptions (ms): GEV's xi comes out near 1.7.
    coarse, threads = tail.pwcet_all(real_series(6), 1e-3, resamples=RESAMPLES)
    assert coarse.value_us is None
    assert all(a.ok for t in threads for a in t.assumptions if a.name != "shape")
    assert "thread 0: shape FAILED: fitted xi = 1.68" in coarse.why_not


def synthetic_result(tmp_path: Path, scenario: str, blocks: int = 200) -> Path:
    """The real result's shape with one thread of seeded GEV maxima (xi = 0.1) of 1 s blocks."""
    doc = json.loads(REAL.read_text(encoding="utf-8"))
    doc["scenario"], doc["run_id"] = scenario, f"synthetic-{scenario}"
    maxima = gev_maxima(blocks).astype(int).tolist()
    cycles = 1000 * blocks
    thread = doc["threads"][0] | {"samples": cycles, "max_us": max(maxima), "blocks": {
        "block_cycles": 1000, "cycles": cycles, "maxima_us": maxima}}
    doc["threads"] = [thread]
    doc["totals"] |= {"samples": cycles, "max_us": max(maxima)}
    path = tmp_path / f"{scenario}.result.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def budget_line(scenario: str, pwcet_max: float) -> str:
    return (f"  - {{board: local, flavor: '*', scenario: {scenario}, max_us: 1000000, "
            f"avg_us: 100000, pwcet_us: {{per_hour: 1.0e-3, max: {pwcet_max}}}, "
            f"reason: test}}\n")


def test_pwcet_budget_through_the_cli(rtgate_cli: RunCli, tmp_path: Path) -> None:
    """Pass above the upper bound, fail below the lower bound, 'measure more' in between, and
    no estimate from the real run's dependent maxima nor from a run too short for the fit
    checks' calibration (100 blocks, a budget it would pass by far): exit codes, JUnit and
    Markdown as for other checks."""
    estimate = tail.pwcet(gev_maxima(200), 1.0, 1e-3)
    assert estimate.lower_us is not None and estimate.upper_us is not None
    lo, hi = estimate.lower_us, estimate.upper_us
    budgets = {"above": hi + 1, "below": lo - 1, "between": (lo + hi) / 2, "real": hi + 1,
               "short": 1e6}
    results = [synthetic_result(tmp_path, s) for s in ("above", "below", "between")]
    results.append(synthetic_result(tmp_path, "short", blocks=100))
    real = json.loads(REAL.read_text(encoding="utf-8")) | {"scenario": "real"}
    results.append(tmp_path / "real.result.json")
    results[-1].write_text(json.dumps(real), encoding="utf-8")
    thresholds = tmp_path / "thresholds.yml"
    thresholds.write_text("schema: rtgate/thresholds/v2\nbudgets:\n" + "".join(
        budget_line(s, round(m, 3)) for s, m in budgets.items()), encoding="utf-8")
    junit, markdown = tmp_path / "junit.xml", tmp_path / "summary.md"
    proc = rtgate_cli("check", *map(str, results), "--thresholds", str(thresholds), "--junit",
                      str(junit), "--markdown", str(markdown), cwd=ROOT)
    assert proc.returncode == 3, proc.stdout + proc.stderr  # incomplete outranks a failure
    md = markdown.read_text(encoding="utf-8")
    rows = {s: next(line for line in md.splitlines() if f"`{s}`" in line and "pwcet_us" in line)
            for s in budgets}
    assert rows["above"].endswith("✅ pass |")
    assert rows["below"].endswith("❌ fail |")
    assert rows["between"].endswith("⚠️ incomplete |")
    assert rows["real"].endswith("⚠️ incomplete |") and "no valid estimate" in rows["real"]
    assert rows["short"].endswith("⚠️ incomplete |") and "no valid estimate" in rows["short"]
    assert "thread 0: fit FAILED: 100 block maxima: the upper-tail fit checks are calibrated " \
        "from 120 blocks on" in md
    # The same seeded estimate in the CLI as here, with its interval and what it is.
    assert f"in [{fmt(lo)}, {fmt(hi)}] (at 0.001/h, 90% CI, GEV on block maxima)" \
        in rows["above"]
    assert "interval straddles the budget: measure more" in md
    assert "no valid estimate: thread 0: independence FAILED" in md
    xml = junit.read_text(encoding="utf-8")
    assert xml.count("local/stock/below: pwcet_us") == 1 and "<failure" in xml
    assert "measure more" in xml and "no valid estimate" in xml


def test_pwcet_without_block_maxima_is_incomplete(tmp_path: Path) -> None:
    old = ROOT / "tests" / "data" / "results" / "local-cpu.result.json"
    path = tmp_path / "thresholds.yml"
    path.write_text(textwrap.dedent("""\
        schema: rtgate/thresholds/v2
        budgets:
          - {board: "*", flavor: "*", scenario: "*", max_us: 155, avg_us: 7.4,
             pwcet_us: {per_hour: 1.0e-9, max: 1000000}, reason: test}
        """), encoding="utf-8")
    budget = load_thresholds(path).budgets[0]
    assert budget.pwcet_us == PwcetBudget(per_hour=1e-9, max=1e6)
    check = next(c for c in evaluate(load_result(old), budget, old).checks
                 if c.metric == "pwcet_us")
    assert check.verdict is Verdict.INCOMPLETE and check.measured is None
    assert check.why == "no valid estimate: thread 0 has no block maxima; thread 1 has no " \
        "block maxima"
    assert check.measured_text == "no valid estimate"


def _two_regimes(seed: int, blocks: int, second_us: float) -> np.ndarray:
    """Gumbel block maxima (50 µs, scale 5), 10 % of blocks from a second regime at
    ``second_us`` (issue 36's audit: at 75 µs the truth at 1e-9/h is 208 µs)."""
    rng = np.random.default_rng(seed)
    x = rng.gumbel(50.0, 5.0, blocks)
    second = rng.random(blocks) < 0.1
    x[second] = rng.gumbel(second_us, 5.0, int(second.sum()))
    return np.floor(x)


@pytest.mark.parametrize(("seed", "blocks", "second_us", "truth_us"),
                         [(0, 500, 75.0, 208.3), (1, 130, 100.0, 233.0)])
def test_two_regime_maxima_are_refused_not_given_a_confident_wrong_number(
        seed: int, blocks: int, second_us: float, truth_us: float) -> None:
    """Until 2026-11-28 these series passed every check (fitted xi about 0.2) and got a pWCET
    whose LOWER bound lay far above the truth (thousands of µs for about 210): a budget would
    fail a kernel that meets it. The upper-tail Anderson-Darling check refuses them."""
    x = _two_regimes(seed, blocks, second_us)
    p = tail.per_block(1e-9, 1.0, tail.HOUR_S)
    xc = tail.continuous(x)
    with np.errstate(all="ignore"):
        old = tail._gev_profile(p, xc, tail.CONFIDENCE, tail._gev_fit(xc))
    assert not isinstance(old, str) and old[1] > 5 * truth_us, old
    est = tail.pwcet(x, 1.0, 1e-9)
    assert not est.valid
    assert est.why_not.startswith("fit FAILED: upper-tail Anderson-Darling"), est.why_not


def test_the_audits_mixture_at_130_blocks_is_refused_by_the_shapes_stability() -> None:
    """The audit's own case (10 % of blocks at 75 µs, 130 of them) passed the upper-tail
    Anderson-Darling check in about 93 % of series: this one passes it and got a lower bound
    near 3 ms for a true 208 µs. Its largest quarter has a light tail (GPD xi about -1) where the
    GEV reads xi 0.26: the stability check across thresholds refuses it (drift 7.6; the cut
    at 130 blocks, tabulated since the evening of 2026-11-28, is 6.26)."""
    x = _two_regimes(7, 130, 75.0)
    p = tail.per_block(1e-9, 1.0, tail.HOUR_S)
    xc = tail.continuous(x)
    with np.errstate(all="ignore"):
        best = tail._gev_fit(xc)
        old = tail._gev_profile(p, xc, tail.CONFIDENCE, best)
        assert tail._upper_fit(xc, best.x, 0.5).ok  # the constant cut of the time
    assert not isinstance(old, str) and old[1] > 5 * 208.3, old
    est = tail.pwcet(x, 1.0, 1e-9)
    assert not est.valid
    assert est.why_not.startswith("stability FAILED: shape across thresholds"), est.why_not


def test_true_gev_maxima_pass_the_fit_checks() -> None:
    cuts = tail.fit_cuts(130)
    assert cuts is not None
    for seed, xi in enumerate((-0.1, 0.0, 0.2, 0.4)):
        x = np.floor(stats.genextreme.rvs(-xi, loc=50, scale=5, size=130,
                                          random_state=np.random.default_rng(seed)))
        xc = tail.continuous(x)
        with np.errstate(all="ignore"):
            best = tail._gev_fit(xc)
            fit = tail._upper_fit(xc, best.x, cuts.max_upper_ad)
            stable = tail._stability(xc, float(best.x[2]), cuts.max_shape_drift)
        assert fit.ok, (xi, fit)
        assert stable.ok, (xi, stable)


def test_a_true_gumbel_series_the_constant_cut_refused_gets_its_number() -> None:
    """Until the cuts were tabulated per number of blocks (2026-11-28, evening) one drift cut, 4,
    held at every size, and at 130 blocks it refused 2-2.4 % of true GEV series: this one (a
    true Gumbel, drift 5.9 from the GPD on its 32 largest maxima, which are noisy) among them.
    At 130 blocks the table's cut is 6.26; the estimate now covers the truth."""
    x = np.floor(stats.genextreme.rvs(0.0, loc=50, scale=5, size=130,
                                      random_state=np.random.default_rng(278)))
    xc = tail.continuous(x)
    with np.errstate(all="ignore"):
        best = tail._gev_fit(xc)
    assert not tail._stability(xc, float(best.x[2]), 4.0).ok  # the old constant cut
    est = tail.pwcet(x, 1.0, 1e-9)
    assert est.valid, est.why_not
    assert est.lower_us is not None and est.upper_us is not None
    truth = stats.genextreme.isf(tail.per_block(1e-9, 1.0, tail.HOUR_S), 0.0, 50, 5)
    assert est.lower_us <= truth <= est.upper_us


def test_the_cuts_table_is_what_its_null_cells_say() -> None:
    """Each cut is the largest over its size's simulated shapes (xi -0.2 to 0.5; those below the
    shape check's MAX_SHAPE are cut on) of the null order statistic at half of ALPHA_ASSUMPTION
    (benchmarks/pwcet_fit_cuts.py): a hand-edited cut, a cell dropped or a share that no longer
    matches the module's claim fails here."""
    doc = json.loads(tail.FIT_CUTS_FILE.read_text(encoding="utf-8"))
    assert doc["share_per_check"] == tail.ALPHA_ASSUMPTION / 2
    assert "benchmarks/pwcet_fit_cuts.py" in doc["how"] and doc["series_per_cell"] >= 1000
    share = f"{doc['share_per_check']:g}"
    assert [c["blocks"] for c in doc["cuts"]] == sorted({c["blocks"] for c in doc["cells"]})
    for cut in doc["cuts"]:
        cells = [c for c in doc["cells"] if c["blocks"] == cut["blocks"]]
        assert min(c["xi"] for c in cells) <= -0.2 and max(c["xi"] for c in cells) >= 0.5
        cut_on = [c for c in cells if c["xi"] < tail.MAX_SHAPE]
        assert cut["max_upper_ad"] == max(c["upper_ad"][share] for c in cut_on)
        assert cut["max_shape_drift"] == max(c["shape_drift"][share] for c in cut_on)
    # Installed with the package (a plain `pip install .` reads it too).
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))[
        "tool"]["setuptools"]["package-data"]["rtgate"]
    relative = tail.FIT_CUTS_FILE.relative_to(ROOT / "rtgate").as_posix()
    assert any(fnmatch.fnmatch(relative, glob) for glob in package_data)


def test_cuts_between_and_beyond_the_tabulated_sizes() -> None:
    table = tail.fit_cuts_table()
    assert tail.fit_cuts(table[0].blocks - 1) is None
    assert tail.fit_cuts(table[0].blocks) == table[0]
    low, high = table[0], table[1]
    between = tail.fit_cuts((low.blocks + high.blocks) // 2)
    assert between is not None
    assert between.max_upper_ad == max(low.max_upper_ad, high.max_upper_ad)
    assert between.max_shape_drift == max(low.max_shape_drift, high.max_shape_drift)
    beyond = tail.fit_cuts(10 * table[-1].blocks)
    assert beyond is not None
    assert (beyond.max_upper_ad, beyond.max_shape_drift) == (table[-1].max_upper_ad,
                                                             table[-1].max_shape_drift)


def test_ns_maxima_are_spread_over_a_ns_not_a_us() -> None:
    """-N block maxima (issue 40) are exact to the ns: the continuity correction spreads each
    over 1 ns; a whole µs would lift a 7 µs tail by about 7 %."""
    x = np.array([7.004, 7.125, 6.998, 7.5])
    spread = tail.continuous(x, resolution_us=0.001) - x
    assert (spread >= 0).all() and (spread < 0.001).all()
    assert (tail.continuous(x) - x).max() > 0.1  # whole µs, as before
