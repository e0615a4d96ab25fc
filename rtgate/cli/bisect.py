"""`rtgate bisect`: which patch of a series made the latency worse, and the proof that it did."""

from __future__ import annotations

import argparse
from pathlib import Path

from rtgate.bisect.run import bisect
from rtgate.bisect.settings import MAX_MIN_EFFECT_PCT, BisectSettings
from rtgate.cli.args import add_ab_options, comma_list, count, duration
from rtgate.kernel.cache import TRUST_DOMAINS
from rtgate.kernel.runtime import RUNTIMES
from rtgate.stats.ab import MIN_ROUNDS

EPILOG = """\
Each step builds a prefix of the series (a temporary series file of the first k patches; the
kernel cache and ccache rebuild only what changed), then runs the A/B gate (`rtgate ab`) of it
against the good end until same, worse or better, or --step-time: unknown at the cap is skipped
like `git bisect skip`, as is a prefix that does not build or boot. A culprit is named only when
confirmed: worse than its parent in --repeats measurements, and the bad end without it same as the
good end (when that revert applies; otherwise the report says so).

Outputs in OUT: state.json (the measurements so far: run the same command again to resume),
steps/NN_…/ (each step's A/B rounds, ab.json, ab.md; skipped.json when it did not build),
variants/…/ (series and kernels), bisect.json (schema rtgate/bisect/v1) and bisect.md, also
printed.

--replay DIR re-decides a finished bisect from the rounds in DIR/steps/ (a pull request's, from
an artifact: untrusted data) and measures nothing: the same command with the same settings, and
--planned-rounds as the bisect had it, writes bisect.json and bisect.md in OUT from them alone.
A step directory that is not the one the search asks for is refused (exit 2, bisect.md says
why); rounds that end before the bisect finished are no verdict (exit 3).

The margin: a step is *same* when the primary metric's ratio B/A is within x(1 + PCT/100)
either way. The gate's ab.min_effect_pct (at most 100: the smallest change worth refusing) is
the default, but a bisect hunts one regression the ends have already shown, so its steps need
only tell that regression from no change: --min-effect-pct may be up to 10000 (docs/ab-bisect.md,
"The bisect's margin"). A regression smaller than the margin is not what the search finds.

exit codes:
  0  nothing to bisect: the whole series is same as (or better than) the good end
  1  culprit found and confirmed
  2  usage or input error, or the ends are wrong (the good end over its budget, an explicit bad
     end not worse), with the measurements
  3  no confirmed culprit: skipped prefixes leave several, the regression may be spread, the
     revert is still worse, or a step could not be measured
"""


def handler(args: argparse.Namespace) -> int:
    return bisect(BisectSettings(
        board=args.board, flavor=args.flavor, series=args.series, good=args.good or 0,
        bad=args.bad, scenarios=args.scenarios, round_duration=args.round_duration,
        max_time=args.max_time, planned_rounds=args.planned_rounds, repeats=args.repeats,
        out=args.out, replay=args.replay, scale=args.scale, thresholds=args.thresholds,
        min_effect_pct=args.min_effect_pct, alpha=args.alpha, runtime=args.runtime,
        trust=args.trust, dry_run=args.dry_run))


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser(
        "bisect", help="find the patch of a series that made latency worse, and confirm it",
        description="Binary search over prefixes of a patch series with the A/B gate against "
                    "the good end; names a culprit only when confirmed.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--board", required=True, help="a kernel board from bench/boards/")
    p.add_argument("--flavor", required=True, help="the kernel flavor to build (stock, rt)")
    p.add_argument("--series", type=Path, required=True, metavar="FILE",
                   help="quilt series file; its patches beside it")
    p.add_argument("--good", type=count, metavar="N",
                   help="the first N patches are good (default 0: the unpatched kernel)")
    p.add_argument("--bad", type=count, metavar="M",
                   help="the first M patches are bad (default: the whole series)")
    p.add_argument("--scenarios", type=comma_list, help="comma-separated; `board`: the board's own")
    p.add_argument("--step-time", dest="max_time", type=duration, required=True,
                   help="time cap of one step's A/B rounds, e.g. 10m: unknown (skipped) after")
    p.add_argument("--repeats", type=int, default=2,
                   help="culprit-against-parent measurements that must all be worse (default 2)")
    p.add_argument("--out", type=Path, required=True, help="output directory (and state)")
    p.add_argument("--replay", type=Path, metavar="DIR",
                   help="measure nothing: re-decide the bisect whose rounds are in DIR/steps/ "
                        "(e.g. a pull request's, from an artifact) into OUT")
    add_ab_options(
        p, min_rounds=MIN_ROUNDS, round_help="measurement per A/B round, e.g. 20s",
        planned_help="rounds a side every step's alpha spending plans for, fixed before the "
                     "first round (as `rtgate ab`; needed to --replay); default: what "
                     "--step-time allows at each step's first pair's pace",
        min_effect_help=f"every step's equivalence margin and minimum effect, in %% of the "
                        f"base's primary metric, up to {MAX_MIN_EFFECT_PCT:g} (overrides "
                        "ab.min_effect_pct, which stays at most 100 for the gate): size it to "
                        "the regression being hunted, e.g. 900 (a ratio of x10) on qemu-arm64",
        alpha_help="false-alarm rate of each step (overrides ab.alpha; default 0.01)",
        max_effect_pct=MAX_MIN_EFFECT_PCT)
    p.add_argument("--runtime", choices=RUNTIMES, default="host",
                   help="where the kernels build (as `rtgate kernel build`)")
    p.add_argument("--cache-trust", dest="trust", choices=TRUST_DOMAINS,
                   help="the kernel cache's trust domain: untrusted for a pull request's series")
    p.add_argument("--dry-run", action="store_true",
                   help="resolve the series and its ends, every scenario and every step's A/B "
                        "plan (budgets, margins, planned rounds) and print it as YAML: no "
                        "build, no board")
    p.set_defaults(func=handler)
