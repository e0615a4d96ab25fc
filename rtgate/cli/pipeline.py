"""`rtgate pipeline`: the whole gate on one board, every flavor × scenario (rtgate.pipeline)."""

from __future__ import annotations

import argparse
from pathlib import Path

from rtgate import breach, paths
from rtgate.cli.args import (
    add_kernel_source_arguments,
    add_scale_option,
    add_tuning_arguments,
    breach_threshold,
    comma_list,
    duration,
)
from rtgate.pipeline.engine import pipeline
from rtgate.pipeline.settings import KernelSource, PipelineSettings

EPILOG = """\
For each flavor the kernel is built for the board (a cache hit when nothing changed) unless
--kernels DIR holds DIR/<flavor>/ from `rtgate kernel build --out`; then for each scenario the
board deploys it, boots it (the running release must be the built one), measures, and restores
its known-good kernel. The `local` board measures the running kernel: give at most one flavor,
a label for the results.

Outputs in OUT: <flavor>/<scenario>/result.json (+ raw/, console.log) — or infra.json, what
failed, when the lab could not measure —, kernels/<flavor>/,
junit.xml, summary.md (for $GITHUB_STEP_SUMMARY), comparison.md (flavors side by side: avg,
max and their ratio to RT — the Pi 5 paper's "294x" headline).

exit codes (the worst run decides: 2, then 3, then 1):
  0  every run complete and within budget
  1  a budget was exceeded: a latency regression
  2  usage or input error (unknown board/scenario/flavor, bad patch series, no budget matches)
  3  a run is incomplete or the infrastructure failed (kernel build failed, board did not boot,
     wrong release, timeout, partial/degraded measurement): never a pass, not a latency verdict
"""


def kernel_source(args: argparse.Namespace) -> KernelSource:
    """The kernel-source options (add_kernel_source_arguments) as the engines take them."""
    return KernelSource(kernels=args.kernels, source=args.source, patches=args.patches,
                        runtime=args.runtime)


def handler(args: argparse.Namespace) -> int:
    return pipeline(PipelineSettings(
        board=args.board, flavors=args.flavors, scenarios=args.scenarios,
        duration=args.duration, out=args.out, kernel=kernel_source(args), scale=args.scale,
        thresholds=args.thresholds, tuning=args.tuning,
        allow_host_changes=args.allow_host_changes, kernel_args=args.kernel_arg,
        trace_on_breach=args.trace_on_breach, trace_cap=args.trace_cap,
        allow_unbudgeted=args.allow_unbudgeted, dry_run=args.dry_run))


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser(
        "pipeline", help="build, boot, measure and gate every flavor × scenario on a board",
        description="The whole gate on one board: kernel builds, boots, measurements under "
                    "load, budgets, and a comparison of the flavors.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--board", required=True, help="board name from bench/boards/")
    p.add_argument("--flavors", type=comma_list, help="comma-separated (default for kernel boards: "
                   "stock,rt)")
    p.add_argument("--scenarios", type=comma_list,
                   help="comma-separated, e.g. all-in; `board` (the default) stands for the "
                        "board's own `scenarios`, e.g. idle,board")
    p.add_argument("--duration", type=duration, required=True, help="per run, e.g. 30s, 1h")
    p.add_argument("--out", type=Path, required=True, help="output directory")
    add_kernel_source_arguments(
        p, "prebuilt kernels in DIR/<flavor>/ (e.g. CI artifacts): no build")
    add_scale_option(p)
    p.add_argument("--thresholds", type=Path, default=paths.THRESHOLDS, metavar="FILE")
    add_tuning_arguments(p)
    p.add_argument("--kernel-arg", action="append", default=[], metavar="WORD",
                   help="add WORD to the booted kernel's command line (qemu-arm64), e.g. "
                        "rtgate_planted.length_us=300000 (repeatable)")
    p.add_argument("--trace-on-breach", type=breach_threshold(breach.BUDGET), nargs="?",
                   const=breach.BUDGET, metavar="US",
                   help="after a run whose max exceeds US µs (default: the budget's max_us), "
                        "a follow-up run with rtla timerlat armed to stop there; its analysis "
                        "goes into the result, the JUnit failure and the run page")
    p.add_argument("--trace-cap", type=duration, default=breach.DEFAULT_CAP_S,
                   metavar="DURATION", help="time cap of the follow-up trace run (default 60s)")
    p.add_argument("--allow-unbudgeted", action="store_true",
                   help="a result no budget matches is reported as skipped, not an error")
    p.add_argument("--dry-run", action="store_true",
                   help="resolve every flavor × scenario (scenario, tool, budget, tuning, "
                        "kernel) and print the plan as YAML: no build, no board")
    p.set_defaults(func=handler)

