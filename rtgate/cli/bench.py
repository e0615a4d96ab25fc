"""`rtgate bench`: measure the local board under a scenario's load and write DIR/result.json;
with --trace-breach, the breaktrace follow-up run instead."""

from __future__ import annotations

import argparse
from pathlib import Path

from rtgate.board.localbench import BenchSettings, measure, trace
from rtgate.cli.args import add_scale_option, duration, threshold
from rtgate.errors import Exit

EPILOG = """\
Writes DIR/raw/ (cyclictest JSON, histogram, stdout/stderr; each load's stdout/stderr) and
DIR/result.json. --scale multiplies the {scaled:N} counts of a scenario's loads (stress-ng
instances, iperf3 streams), e.g. --scenario all-in --scale 0.1 on a 2-core machine.

exit codes:
  0  complete measurement
  2  usage or input error (unknown board/scenario, invalid scenario file, a cyclictest option
     the installed cyclictest lacks)
  3  partial or degraded measurement (interrupted, a load exited early, cyclictest failed),
     or an infrastructure failure (a `tool: timerlat` scenario: this kernel has no timerlat
     tracer); the raw files and a result.json are kept where possible

--trace-breach US does not measure: it runs the scenario's loads and its cyclictest armed with
-b US --tracemark (ftrace set up and put back; root) for at most --duration, and writes
DIR/raw/trace-* and DIR/trace.json; exit 0 when the trace run ran (broke or not), 3 when no
trace could be taken here (no tracefs, not root: trace.json says why).
"""


def main(args: argparse.Namespace) -> int:
    """`rtgate bench`: a measurement, or with --trace-breach the trace run."""
    settings = BenchSettings(scenario=args.scenario, duration_s=args.duration, out=args.out,
                             board=args.board, flavor=args.flavor, scale=args.scale)
    if args.trace_breach is None:
        return int(Exit.OK if measure(settings).status == "complete" else Exit.INCOMPLETE)
    return int(Exit.OK if trace(settings, args.trace_breach).raw else Exit.INCOMPLETE)


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser(
        "bench", help="measure latency with cyclictest under a scenario's load",
        description="Run the real cyclictest on the local board while a scenario's loads run.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--board", default="local", help="board name from bench/boards/ (local)")
    p.add_argument("--scenario", required=True,
                   help="scenario name from bench/scenarios/ (idle, cpu, vm, io, net, all-in) "
                        "or a path to a scenario .yml")
    p.add_argument("--duration", type=duration, required=True,
                   help="measurement length: seconds, or with s/m/h/d (10s, 5m, 1h)")
    p.add_argument("--out", type=Path, required=True, help="output directory DIR")
    p.add_argument("--flavor", help="kernel flavor label (default: rt if PREEMPT_RT, else stock)")
    add_scale_option(p, "multiply load instances/streams (default: the scenario's scale)")
    p.add_argument("--trace-breach", type=threshold, metavar="US",
                   help="instead of measuring: the breaktrace follow-up run, stopping at the "
                        "first latency above US µs or after --duration")
    p.set_defaults(func=main)
