"""Benchmark: the A/B decision's block-maxima permutation tests, vectorised over round splits
(rtgate.stats.ab), against their definition: scipy's own functions called once per split of the
rounds (the implementation before the vectorisation, kept here as the reference). Both run on the
same seeded rounds; printed: wall time of each, the speedup, and that every statistic and p-value
agrees.

    python benchmarks/ab_speed.py [--rounds N ...] [--repeat N]
"""

from __future__ import annotations

import argparse
import math
import time
import warnings

import numpy as np
from scipy import stats

from rtgate.stats import ab


def _signed_ad(x: np.ndarray, y: np.ndarray) -> float:
    with warnings.catch_warnings():  # its own p-value's range warning: only the statistic is used
        warnings.simplefilter("ignore")
        value = stats.anderson_ksamp([x, y], variant="midrank").statistic
    shift = np.quantile(x, ab.BLOCK_QUANTILE) - np.quantile(y, ab.BLOCK_QUANTILE)
    return float(np.sign(shift) * value)


REFERENCE = {
    "rank": lambda x, y: float(stats.mannwhitneyu(x, y, alternative="greater",
                                                  method="asymptotic").statistic
                               / (len(x) * len(y))),
    "ks": lambda x, y: float(stats.ks_2samp(x, y, alternative="less").statistic),
    "ad": _signed_ad,
}


def reference_block_tests(thread: int, b: list[np.ndarray],
                          a: list[np.ndarray]) -> list[ab.TestResult]:
    """ab._block_tests by definition: each statistic on the pooled blocks of every split."""
    rounds = b + a

    def pooled(index: np.ndarray) -> np.ndarray:
        return np.concatenate([rounds[i] for i in index.astype(int)])

    out = []
    for (name, _), statistic in zip(ab._BLOCK_TESTS.items(), REFERENCE.values(), strict=True):
        res = stats.permutation_test(
            (np.arange(len(b)), np.arange(len(b), len(rounds))),
            lambda x, y, s=statistic: s(pooled(x), pooled(y)), vectorized=False,
            n_resamples=ab._permutations(len(a), len(b)), alternative="greater",
            rng=np.random.default_rng(ab.SEED))
        out.append(ab.TestResult(f"thread {thread} block maxima: {name} (permutation of rounds)",
                                 float(res.statistic), float(res.pvalue)))
    return out


def blocks(rng: np.random.Generator, n: int, per_round: tuple[int, int] = (2, 20),
           shift: float = 0.0) -> list[np.ndarray]:
    """n rounds of block maxima on the 1 µs grid (heavy ties, as measured), a boot-to-boot
    offset each, and unequal block counts."""
    return [np.floor(30 + shift + rng.normal(0, 3) + rng.gumbel(0, 6, rng.integers(*per_round)))
            for _ in range(n)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, nargs="+", default=[5, 7, 8],
                    help="rounds a side (default 5 7 8; 8 and up: sampled permutations)")
    ap.add_argument("--repeat", type=int, default=1, help="seeded data sets per size")
    args = ap.parse_args()
    rng = np.random.default_rng(7)
    print("rounds/side  permutations  reference s  vectorised s  speedup  equal")
    for n in args.rounds:
        old = new = 0.0
        equal = True
        for _ in range(args.repeat):
            b, a = blocks(rng, n, shift=2.0), blocks(rng, n)
            t0 = time.perf_counter()
            want = reference_block_tests(0, b, a)
            t1 = time.perf_counter()
            got = ab._block_tests(0, b, a)
            t2 = time.perf_counter()
            old, new = old + t1 - t0, new + t2 - t1
            equal &= all(w.name == g.name and w.p == g.p
                         and np.isclose(w.statistic, g.statistic, rtol=1e-12, atol=1e-12)
                         for w, g in zip(want, got, strict=True))
        perms = ab._permutations(n, n)
        label = f"{perms:g} sampled" if np.isfinite(perms) else f"{math.comb(2 * n, n)} (all)"
        print(f"{n:11d}  {label:>12}  {old:11.2f}  {new:12.3f}  {old / new:6.0f}×  "
              f"{'yes' if equal else 'NO'}")
        if not equal:
            return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
