"""`rtgate ab`: the base kernel (A) against the candidate (B) on one board, in interleaved
rounds, until the A/B decision is made or the time is up (rtgate.ab)."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from rtgate.ab import doc
from rtgate.ab.loop import prepare
from rtgate.ab.settings import ABSettings, RoundSettings
from rtgate.cli.args import add_ab_options, comma_list, duration
from rtgate.stats import ab

EPILOG = f"""\
Rounds alternate A B B A A B … (one boot and run each) on the one board; after each pair, once
each side has {ab.MIN_ROUNDS} rounds, every undecided board × flavor × scenario is decided with
its share of the false-alarm rate ({ab.SPENDING}; the
shares add up to at most the rate). A decided key is not measured again. min_samples apply to a
side's rounds together; every other budget applies to each round as in `rtgate check`.

The `local` board measures its running kernel: both sides are that kernel (no --base/--cand);
with --cand-scenario-dir B runs each scenario from that directory instead (e.g. the same
scenario plus an added load: a planted regression), otherwise it is an A/A check.

Before the first round the plan is resolved and printed: every key's budget, margin (same means
B/A within ×(1 + margin) either way) and primary metric, the planned rounds and, from the board's
calibration record, P(same | unchanged) and the time to a verdict — and when same is out of reach
at the record's CV, the margin or rounds that would reach it. --plan-only stops there.

Outputs in OUT: A/round-N/<flavor>/<scenario>/ and B/round-N/… (result.json, raw/, or infra.json),
ab.json (schema {doc.SCHEMA_ID}: outcome, effects with intervals, rounds, looks, alpha spent) and
ab.md (for the pull-request comment), also printed.

exit codes:
  0  same or better: every key decided, none worse, every candidate round within budget
  1  worse: a regression (the A/B test, or a candidate round over its budget)
  2  usage or input error (unknown board/scenario/flavor, no kernels, no budget or minimum effect,
     a cap too short for the first look), found before the first round
  3  a round is incomplete or the infrastructure failed: no verdict
  4  undecided at the time cap: the rounds measured could not tell same from worse or better;
     measure longer (--max-time) — a statement about the data, not a lab failure
"""


def settings_of(args: argparse.Namespace) -> ABSettings:
    return ABSettings(
        board=args.board, base=args.base, cand=args.cand,
        cand_scenario_dir=args.cand_scenario_dir,
        flavors=tuple(args.flavors) if args.flavors else None,
        scenarios=tuple(args.scenarios) if args.scenarios else None,
        thresholds=args.thresholds, plan_only=args.plan_only,
        rounds=RoundSettings(out=args.out, round_duration=args.round_duration,
                             max_time=args.max_time, planned_rounds=args.planned_rounds,
                             scale=args.scale, min_effect_pct=args.min_effect_pct,
                             alpha=args.alpha))


def handler(args: argparse.Namespace) -> int:
    console = Console(stderr=True)
    settings = settings_of(args)
    run = prepare(settings, console)
    if args.plan_only:
        return 0
    run.run()
    text = doc.write(run, settings.rounds.out)
    console.rule("[bold]A/B")
    print(text)
    out = settings.rounds.out
    print(f"ab.json: {out / doc.NAME}\nab.md: {out / doc.MARKDOWN}")
    return int(run.exit)


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser(
        "ab", help="base kernel against candidate on one board, interleaved rounds until decided",
        description="The A/B gate: rounds of the base kernel (A) and the candidate (B) on one "
                    "board, interleaved, until same, worse or better is decided or time is up.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--board", required=True, help="board name from bench/boards/")
    p.add_argument("--base", type=Path, metavar="KERNELS_A",
                   help="the base kernels: DIR/<flavor>/ from `rtgate kernel build --out`")
    p.add_argument("--cand", type=Path, metavar="KERNELS_B", help="the candidate kernels, alike")
    p.add_argument("--cand-scenario-dir", type=Path, metavar="DIR",
                   help="B runs DIR/<scenario>.yml instead of bench/scenarios/ (same name; "
                        "e.g. an added load to plant a regression)")
    p.add_argument("--flavors", type=comma_list, help="comma-separated (default for kernel boards: "
                   "stock,rt)")
    p.add_argument("--scenarios", type=comma_list, help="comma-separated; `board`: the board's own")
    p.add_argument("--max-time", type=duration, required=True,
                   help="time cap for all rounds, e.g. 10m: undecided after it (exit 4)")
    p.add_argument("--out", type=Path, required=True, help="output directory")
    add_ab_options(
        p, min_rounds=ab.MIN_ROUNDS, round_help="measurement per round, e.g. 20s",
        planned_help="rounds a side the alpha spending plans for, fixed before the first "
                     "round (the gate's, so the publisher can replay the looks); default: the "
                     "calibration record's, else what --max-time allows at the pace the plan "
                     "states",
        min_effect_help="minimum effect worth reporting, every key (overrides "
                        "ab.min_effect_pct)",
        alpha_help="false-alarm rate of the whole run (overrides ab.alpha; default 0.01)")
    p.add_argument("--plan-only", action="store_true",
                   help="resolve and print the plan (every key's budget, margin, metric, the "
                        "planned rounds, P(same | unchanged) and time to verdict from the "
                        "calibration record), measure nothing (no kernels needed)")
    p.set_defaults(func=handler)
