"""Benchmark: the A/B rule's error rates replayed on the A/A banks recorded on boards here, and
the candidate rules it was chosen among.

The banks (benchmarks/records/banks/<board>.tar.xz: <board>/A|B/round-N/<flavor>/<scenario>/
result.json, the raw files left out) are real rounds of one kernel recorded by `rtgate
calibrate` (docs/journal.md says when and how).
Every trial is the gate's own decision code (rtgate.ab.calibrate.rates: the Sequential looks,
stopping as the loop stops) on a resampled split of a bank: A/A (a *worse* or *better* is a
false alarm) and with every latency of side B's rounds scaled by +20 % (a *worse* is a
detection). Rates are printed with the Clopper-Pearson interval of the bank's independent
trials (resamples of one bank are not independent), as the calibration record states them.

Candidates, each at the same plan (6 rounds a side, alpha 0.01 over the board's keys, margin
10 %), on the same seeded resamples:

- rule 2 (the gate's): Student's t on the log of the primary per-round metric, exact
  group-sequential boundaries from the looks' joint distribution;
- the same with Bonferroni's split of each look's alpha increment (what rule 1 did);
- the same on each other metric as the primary (block-max p90, p99.9, p99).

    python benchmarks/ab_calibration_replay.py [--trials 1000] [--planned 6] [--board B]
"""

from __future__ import annotations

import argparse
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from scipy import stats

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rtgate import paths  # noqa: E402
from rtgate.ab import calibrate  # noqa: E402
from rtgate.gate.thresholds import load_thresholds  # noqa: E402
from rtgate.outcome import Comparison  # noqa: E402
from rtgate.stats import ab  # noqa: E402

BANKS = ROOT / "benchmarks" / "records" / "banks"


def bonferroni(alpha: float, planned: int) -> tuple[float, ...]:
    return tuple(float(stats.t.isf(ab.increment(alpha, n, planned) / 2, 2 * n - 2))
                 for n in range(ab.MIN_ROUNDS, planned + 1))


@contextmanager
def swapped(name: str, value: Callable[..., object] | None) -> Iterator[None]:
    """The rule with one of its parts replaced, for the comparison only."""
    if value is None:
        yield
        return
    before = getattr(ab, name)
    setattr(ab, name, value)
    try:
        yield
    finally:
        setattr(ab, name, before)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trials", type=int, default=1000)
    p.add_argument("--planned", type=int, default=6)
    p.add_argument("--board", help="one bank only (default: every bank)")
    args = p.parse_args()
    thresholds = load_thresholds(ROOT / "thresholds.yml")
    unpacked = Path(tempfile.mkdtemp(prefix="rtgate-banks-"))
    for archive in sorted(BANKS.glob("*.tar.xz")):
        if args.board in (None, archive.name.removesuffix(".tar.xz")):
            with tarfile.open(archive) as tar:
                tar.extractall(unpacked)  # our own records: nothing to filter
    for board_dir in sorted(d for d in unpacked.iterdir() if d.is_dir()):
        bank = calibrate.read_bank(board_dir, 0, thresholds, 10.0, boards=paths.BOARDS)
        keys = list(bank.rounds)
        label = " (a VM: says nothing of a board)" if bank.virtual else ""
        print(f"\n== {board_dir.name}{label}: {', '.join('/'.join(k) for k in keys)}; "
              f"rounds banked {[len(bank.rounds[k]) for k in keys]}")
        for k in keys:
            for m in ab.METRICS:
                values = [r.metric(m) for r in bank.rounds[k]]
                if all(v is not None for v in values):
                    x = np.array(values, dtype=float)
                    print(f"   {'/'.join(k)} {m}: CV {x.std(ddof=1) / x.mean():.3f}, "
                          f"log sd {np.log(x).std(ddof=1):.3f}")
        effects = calibrate.variants(bank, np.random.default_rng(calibrate.SEED))
        candidates: list[tuple[str, str | None, str, Callable[..., object] | None]] = [
            ("rule 2 (the gate's)", None, "boundaries", None),
            ("Bonferroni over looks", None, "boundaries", bonferroni)]
        candidates += [(f"primary {m}", m, "boundaries", None) for m in ab.METRICS]
        print(f"   {'candidate':28} {'false alarms':>30} {'same':>8} {'power +20 %':>30} "
              f"{'s':>5}")
        for name, metric, part, value in candidates:
            primary = dict.fromkeys(keys, metric)
            if metric and not all(r.metric(metric) is not None for k in keys
                                  for r in bank.rounds[k]):
                continue
            started = time.monotonic()
            with swapped(part, value):
                aa = calibrate.rates(bank, effects["A/A"], args.planned, 0.01, primary,
                                     args.trials, 1)
                hit = calibrate.rates(bank, effects["+20%"], args.planned, 0.01, primary,
                                      args.trials, 2)
            for k in keys:
                n = len(bank.rounds[k])
                fa = calibrate.rate(calibrate.false_alarms(aa[k]), args.trials, n, args.planned)
                pw = calibrate.rate(hit[k][Comparison.WORSE], args.trials, n, args.planned)
                print(f"   {name[:20]:20} {k[1]:>7} {fa.value:8.4f} [{fa.low:.3f}, "
                      f"{fa.high:.3f}] n={fa.trials:<3} {aa[k][Comparison.SAME] / args.trials:8.3f}"
                      f" {pw.value:8.3f} [{pw.low:.3f}, {pw.high:.3f}] n={pw.trials:<3} "
                      f"{time.monotonic() - started:5.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
