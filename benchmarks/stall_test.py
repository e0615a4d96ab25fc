"""The stall test's choice and power, by simulation (issue 36, item 1).

Which test compares per-round stall counts (blocks whose maximum exceeds the key's threshold)
with the ROUND as the unit, at a level that holds with 3-8 rounds a side? Stalls cluster by
boot, so counts are overdispersed: each round's rate is 1.6 blocks (the q99 of 160 blocks)
times a gamma boot factor (shape 0.5, or 5 for mild clustering, or none: Poisson). Candidates,
one-sided (B more), at 5 %:

- permutation: exact over the label splits of the per-round counts (the rule's);
- conditional binomial: B's total given the total, p = 1/2 (exact for Poisson blocks);
- quasi-Poisson: the rate ratio's log with the dispersion estimated from the rounds (Wald);
- Welch on the counts.

Then the rule's power against rare stalls on the GEV model of benchmarks/ab_modes.py (4 threads
× 40 one-second blocks, ξ 0.3, 30 % of boots ×1.23): 3 ms in one block of 10 or of 20 of each B
round, the threshold the q99 of A's first three rounds' block maxima, the permutation test at
the stall share of the rpi5 plan (alpha 0.5 % a key × 1/4, spent over the looks it can reach:
``rtgate.stats.stalls.spending``), looks at 3-8 rounds a side.

    python benchmarks/stall_test.py [--trials 4000]    (make bench-stall-test)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rtgate.stats import stalls  # noqa: E402

LEVEL = 0.05


def cp(k: int, n: int) -> str:
    """Clopper-Pearson 95 % interval of k in n, in %."""
    low = stats.beta.ppf(0.025, k, n - k + 1) if k else 0.0
    high = stats.beta.ppf(0.975, k + 1, n - k) if k < n else 1.0
    return f"[{100 * low:.2f}, {100 * high:.2f}]"
SEED = 20261128
THREADS, BLOCKS, XI, LOC, SCALE = 4, 40, 0.3, 50.0, 5.0


def counts(rng: np.random.Generator, trials: int, n: int, shape: float | None) -> np.ndarray:
    rate = 1.6 if shape is None else 1.6 * rng.gamma(shape, 1 / shape, (trials, n))
    return rng.poisson(rate, (trials, n)).astype(float)


def level(trials: int) -> None:
    print(f"A/A level at one-sided {100 * LEVEL:g} %, {trials} trials a cell "
          "(Clopper-Pearson 95 %):")
    for shape, label in ((None, "Poisson"), (5.0, "gamma 5"), (0.5, "gamma 0.5")):
        for n in (3, 5, 8):
            rng = np.random.default_rng(SEED + n)
            a, b = counts(rng, trials, n, shape), counts(rng, trials, n, shape)
            hits = {"permutation": 0, "conditional binomial": 0, "quasi-Poisson": 0, "Welch": 0}
            for x, y in zip(a, b, strict=True):
                hits["permutation"] += stalls.permutation_p(x, y) <= LEVEL
                total = x.sum() + y.sum()
                if total:
                    hits["conditional binomial"] += stats.binomtest(
                        int(y.sum()), int(total), 0.5, alternative="greater").pvalue <= LEVEL
                    ma, mb = x.mean() + 0.5 / n, y.mean() + 0.5 / n
                    phi = max(1.0, (((x - x.mean()) ** 2).sum() + ((y - y.mean()) ** 2).sum())
                              / (2 * n - 2) / max((x.mean() + y.mean()) / 2, 1e-9))
                    z = np.log(mb / ma) / np.sqrt(phi * (1 / (n * ma) + 1 / (n * mb)))
                    hits["quasi-Poisson"] += stats.t.sf(z, 2 * n - 2) <= LEVEL
                if x.std() > 0 and y.std() > 0:
                    hits["Welch"] += stats.ttest_ind(y, x, equal_var=False,
                                                     alternative="greater").pvalue <= LEVEL
            row = "; ".join(f"{name} {100 * k / trials:.1f} % {cp(k, trials)}"
                            for name, k in hits.items())
            print(f"  {label:<9} {n} a side: {row}", flush=True)


def gev_rounds(rng: np.random.Generator, trials: int, n: int) -> np.ndarray:
    u = rng.random((trials, n, THREADS * BLOCKS))
    maxima = LOC + SCALE * ((-np.log(u)) ** -XI - 1) / XI
    return np.round(maxima * np.where(rng.random((trials, n, 1)) < 0.3, 1.23, 1.0))


def power(trials: int) -> None:
    alpha = 0.005 * stalls.STALL_SHARE
    looks = stalls.spending(alpha, 8)
    print(f"power at the rpi5 plan (stall alpha {alpha:g}, looks {sorted(looks)}), "
          f"{trials} trials:")
    for every in (0, 10, 20):
        rng = np.random.default_rng(SEED + every)
        a, b = gev_rounds(rng, trials, 8), gev_rounds(rng, trials, 8)
        if every:
            b[:, :, ::every] = np.maximum(b[:, :, ::every], 3000.0)
        limit = np.quantile(a[:, :3].reshape(trials, -1), stalls.STALL_QUANTILE, axis=1,
                            method="inverted_cdf")
        ca = (a > limit[:, None, None]).sum(axis=2).astype(float)
        cb = (b > limit[:, None, None]).sum(axis=2).astype(float)
        worse = 0
        for t in range(trials):
            worse += any(stalls.permutation_p(ca[t, :n], cb[t, :n]) <= part
                         for n, part in looks.items())
        label = f"3 ms in 1/{every} blocks" if every else "A/A (false alarms)"
        print(f"  {label:<22} worse {100 * worse / trials:.2f} % {cp(worse, trials)}",
              flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=4000)
    args = ap.parse_args()
    level(args.trials)
    power(max(args.trials // 4, 200))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
