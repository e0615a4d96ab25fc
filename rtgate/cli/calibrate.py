"""`rtgate calibrate`: record an A/A bank of real rounds on a board and replay the A/B gate's
decision code on it: the false-alarm rate, the chance of *same*, the power and the plan the
board kind's calibration record holds (rtgate.ab.calibrate)."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from rtgate import paths
from rtgate.ab.calibrate import (
    DEFAULT_PLANNED,
    EFFECTS,
    STALLS,
    TARGET_ALPHA,
    TARGET_POWER,
    CalibrateSettings,
    calibrate,
)
from rtgate.ab.calibrateplan import validate
from rtgate.ab.loop import ready
from rtgate.ab.settings import ABSettings, RoundSettings
from rtgate.cli.args import add_scale_option, comma_list, duration, percent, rate, rounds_at_least
from rtgate.stats import ab
from rtgate.stats.oc import CONFIDENCE, MAX_PLANNED

EPILOG = f"""\
The bank: --rounds N rounds a side of main's kernel (--kernels, DIR/<flavor>/ from `rtgate
kernel build --out`; none on `local`, which runs its running kernel: a check of the procedure,
not of a board), measured exactly as `rtgate ab` measures (deploy, boot, run; A B B A …) into
OUT/A|B/round-N/. --rounds 0 replays the bank already in OUT: nothing booted, no --kernels.

The replay: --replays resampled trials of the gate's own decision code (looks from
{ab.MIN_ROUNDS} rounds a side, the same stopping), A/A and with planted effects on side B
({', '.join(EFFECTS)} on every latency; {STALLS}). Per board × flavor × scenario: the primary
metric (most power at +20 %), the round-to-round CV, the replayed false-alarm rate, P(same
within the cap) and power per effect (Clopper-Pearson on the bank's independent trials, its
rounds over a trial's, not on the resamples; none for a bank smaller than one trial).

The claims: the rule simulated at the {100 * CONFIDENCE:g} % upper bound of the bank's log-sd
(chi-square on its rounds), checked against the replay: an upper bound of the false-alarm rate,
lower bounds of the power at +20 % and of P(same), and the fewest rounds a side whose bounds
meet a false-alarm rate <= {TARGET_ALPHA:g} and power >= {TARGET_POWER:g}, searched from
n ~ 2((c + z)s / ln(1 + m))^2 (printed) up to {MAX_PLANNED}; else "this bank cannot show it:
record N more rounds", or that no bank can at its spread.

The record (schema rtgate/calibration/v2) is the board kind's: it goes to
bench/calibration/<kind>.json (rpi5-b, kind rpi5: rpi5.json) unless --record says otherwise.
Commit it to the default branch in a reviewed pull request, where the gate's plan reads it.

exit codes:
  0  the record was written
  2  usage or input error (unknown board, no kernels, no budget or minimum effect, no rounds)
  3  the infrastructure failed before any round was banked
"""


def handler(args: argparse.Namespace) -> int:
    console = Console(stderr=True)
    settings = CalibrateSettings(
        ab=ABSettings(
            board=args.board, base=args.kernels, cand=args.kernels, cand_scenario_dir=None,
            flavors=tuple(args.flavors) if args.flavors else None,
            scenarios=tuple(args.scenarios) if args.scenarios else None,
            thresholds=args.thresholds,
            # A replay of the bank in OUT (--rounds 0) boots nothing: no kernels to demand.
            plan_only=not args.rounds,
            # Judged by no record (the bank makes the kind's); the bank is never looked at, so
            # the printed plan's looks are the bank's, never the thousands this cap allows
            # (each look's boundary is simulated).
            rounds=RoundSettings(out=args.out, round_duration=args.round_duration,
                                 max_time=args.round_duration * 10_000,
                                 planned_rounds=max(args.rounds, DEFAULT_PLANNED),
                                 scale=args.scale, min_effect_pct=args.min_effect_pct,
                                 alpha=args.alpha, use_record=False)),
        pairs=args.rounds, replays=args.replays, record=args.record, dry_run=args.dry_run)
    plan = validate(settings)
    if settings.dry_run:
        print(plan.describe(settings), end="")
        return 0
    run = ready(plan.run, settings.ab, console)
    record = calibrate(run, settings, console)
    for key in record.keys:
        power = ", ".join(f"{p.effect} {p.detected.value:.2f}" for p in key.power)
        minutes = None if key.minutes_needed is None else round(key.minutes_needed, 1)
        print(f"{record.kind}/{key.flavor}/{key.scenario}: primary {key.primary_metric}, "
              f"{key.rounds_banked} rounds banked, CV {key.cv:.3f}, false alarms "
              f"{key.false_alarm.value:.4f} [{key.false_alarm.low:.3f}, "
              f"{key.false_alarm.high:.3f}], same within cap {key.same_within_cap.value:.2f}, "
              f"power {power}; rounds needed {key.rounds_needed}, minutes {minutes}")
        if key.bounds is not None:
            b = key.bounds
            print(f"  bounds at {b.planned} rounds a side (log-sd <= {b.log_sd_high:.3g}, "
                  f"{100 * b.confidence:g} %): false alarms <= {b.false_alarm_high:.4f}, power "
                  f"at +20 % >= {b.power_low:.3f}, same >= {b.same_low:.3f}; {b.model_check}")
        if key.needed_note:
            print(f"  {key.needed_note}")
    print(f"plan: {record.plan.rounds} rounds a side of {record.plan.round_s:g} s, cap "
          f"{record.plan.max_time_s:g} s")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser(
        "calibrate", help="A/A bank on a board and the A/B gate's error rates replayed on it",
        description="Record an A/A bank of real rounds on one board and replay the A/B gate's "
                    "decision code on it; write the board kind's calibration record.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--board", required=True, help="board name from bench/boards/")
    p.add_argument("--kernels", type=Path, metavar="DIR",
                   help="main's kernels: DIR/<flavor>/ from `rtgate kernel build --out`")
    p.add_argument("--flavors", type=comma_list, help="comma-separated (default for kernel boards: "
                   "stock,rt)")
    p.add_argument("--scenarios", type=comma_list, help="comma-separated; `board`: the board's own")
    p.add_argument("--rounds", type=rounds_at_least(0), required=True, metavar="N",
                   help="rounds a side to bank (0: replay the bank in --out)")
    p.add_argument("--replays", type=rounds_at_least(100), default=2000, metavar="N",
                   help="resampled trials per effect (default 2000)")
    p.add_argument("--record", type=Path, metavar="FILE",
                   help="where the record goes (default bench/calibration/KIND.json, the "
                        "board's kind)")
    p.add_argument("--out", type=Path, required=True, help="the bank's directory")
    p.add_argument("--round-duration", type=duration, required=True,
                   help="measurement per round, e.g. 20s: the plan's round")
    add_scale_option(p)
    p.add_argument("--thresholds", type=Path, default=paths.THRESHOLDS, metavar="FILE")
    p.add_argument("--min-effect-pct", type=percent, metavar="PCT",
                   help="the margin, every key (overrides ab.min_effect_pct)")
    p.add_argument("--alpha", type=rate, metavar="RATE",
                   help="the false-alarm rate replayed (default 0.01)")
    p.add_argument("--dry-run", action="store_true",
                   help="resolve the board, kernels, every key's budget and margin, the bank and "
                        "the record's place, and print the plan as YAML: nothing measured or "
                        "written")
    p.set_defaults(func=handler)
