"""`rtgate sweep`: the preemption models side by side under each load (rtgate.pipeline.sweep)."""

from __future__ import annotations

import argparse
from pathlib import Path

from rtgate.cli.args import (
    add_kernel_source_arguments,
    add_scale_option,
    add_tuning_arguments,
    comma_list,
    duration,
)
from rtgate.cli.pipeline import kernel_source
from rtgate.pipeline.settings import MODELS, SweepSettings
from rtgate.pipeline.sweep import sweep

EPILOG = """\
Outputs in OUT: <label>/<scenario>/result.json (+ raw/, console.log), sweep.md (the table and
the build time), sweep.html with plots/sweep-<scenario>.svg|png (latency histograms of every
model overlaid). Labels: dynamic-<model> (one PREEMPT_DYNAMIC build, preempt=<model>), or the
static flavor (none, voluntary, preempt, rt).

exit codes: 0 every run complete; 2 usage or input error; 3 a run incomplete (a model that did
not take, a setting of --tuning, a partial measurement) or an infrastructure failure.
"""


def handler(args: argparse.Namespace) -> int:
    # --allow-host-changes is taken and has nothing to allow: a sweep boots built kernels, never
    # the local board's.
    return sweep(SweepSettings(
        board=args.board, models=args.models, scenarios=args.scenarios, duration=args.duration,
        out=args.out, static=args.static, kernel=kernel_source(args), scale=args.scale,
        tuning=args.tuning, dry_run=args.dry_run))


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser(
        "sweep", help="the preemption models side by side under load (table and plots)",
        description="Measure each preemption model on a board under each scenario: one "
                    "PREEMPT_DYNAMIC build switched with preempt= where possible.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--board", required=True, help="board name from bench/boards/")
    p.add_argument("--models", type=comma_list, default=list(MODELS),
                   help=f"comma-separated, of {','.join(MODELS)} (default: all)")
    p.add_argument("--scenarios", type=comma_list, help="comma-separated (default: the board's)")
    p.add_argument("--duration", type=duration, required=True, help="per run, e.g. 30s")
    p.add_argument("--out", type=Path, required=True, help="output directory")
    p.add_argument("--static", action="store_true",
                   help="one compiled-in build per model (none.config, voluntary.config, "
                        "preempt.config) instead of preempt= on one PREEMPT_DYNAMIC build")
    add_kernel_source_arguments(p, "prebuilt kernels in DIR/<flavor>/ (stock with "
                                   "PREEMPT_DYNAMIC, rt; none, voluntary, preempt with --static)")
    add_scale_option(p)
    add_tuning_arguments(p)
    p.add_argument("--dry-run", action="store_true",
                   help="resolve every model × scenario (build, boot word, scenario file, tool) "
                        "and the kernels, and print the plan as YAML: no build, no board")
    p.set_defaults(func=handler)
