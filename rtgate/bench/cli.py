"""`rtgate bench`: measure the local board under a scenario's load and write DIR/result.json;
with --trace-breach, the breaktrace follow-up run instead (what a remote board runs for its
controller, which re-reads the raw trace files itself)."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from rtgate.bench import environment
from rtgate.bench.assemble import RunInfo, assemble
from rtgate.bench.loads import free_port
from rtgate.bench.plan import Params, Plan, make_plan, timeout_for
from rtgate.bench.runner import execute
from rtgate.bench.scenario import Scenario, load_scenario
from rtgate.board.spec import BoardSpec, board_path, load_board
from rtgate.cli.args import duration, scale, threshold
from rtgate.cyclictest.version import Capabilities, detect
from rtgate.errors import Exit, InfraError, InputError
from rtgate.timerlat.command import TOOL as TIMERLAT
from rtgate.trace import autoanalysis, breaktrace, explain

RAW_OUTPUTS = ("cyclictest.json", "cyclictest.hist", "cyclictest.stdout", "cyclictest.stderr")
TRACE_CLAIMS = "trace.json"
"""--trace-breach's own reading of its run, beside DIR/raw/trace-*."""

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




@contextmanager
def planned(scenario: Scenario, source: Path, caps: Capabilities, *, duration_s: int,
            rawdir: Path, scale: float | None) -> Iterator[tuple[Plan, Path]]:
    """The plan of one run of ``scenario`` here, with outputs in ``rawdir``, and the scratch
    directory its loads work in (removed after the block)."""
    # A stressor leaving an odd file behind must not cost the result: cleanup errors are ignored.
    with tempfile.TemporaryDirectory(prefix=f"rtgate-{scenario.name}-",
                                     ignore_cleanup_errors=True) as scratch:
        params = Params(cpus=os.cpu_count() or 1, port=free_port(), tmpdir=scratch,
                        scale=scale or scenario.scale,
                        timeout_s=timeout_for(scenario, duration_s))
        yield (make_plan(scenario, source, caps, duration_s=duration_s, params=params,
                         outdir=str(rawdir)), Path(scratch))


def _local(name: str) -> BoardSpec:
    board = load_board(name)
    if board.driver != "local":
        raise InputError(f"board {board.name!r} uses the {board.driver!r} driver; `rtgate bench` "
                         "measures the local board", path=board_path(board.name))
    return board


def main(args: argparse.Namespace) -> int:
    """`rtgate bench`: a measurement (run), or with --trace-breach the trace run."""
    if args.trace_breach is None:
        return run(args)
    _local(args.board)
    return _trace(args)


def run(args: argparse.Namespace) -> int:
    board = _local(args.board)
    scenario, source = load_scenario(args.scenario)
    if scenario.tool == TIMERLAT:
        # Never a cyclictest run in its place: the budget that judges it would be another tool's.
        why = autoanalysis.missing() or "rtgate runs rtla timerlat on qemu-arm64 only so far"
        raise InfraError(f"scenario {scenario.name!r} measures with timerlat, which cannot run "
                         f"on board {board.name!r}: {why}", path=source)
    caps = detect()
    out: Path = args.out
    rawdir = (out / "raw").resolve()
    env = environment.capture()
    virtual = env["virtual"] if board.virtual == "auto" else bool(board.virtual)
    flavor = args.flavor or ("rt" if env["preempt_rt"] else "stock")
    with planned(scenario, source, caps, duration_s=args.duration, rawdir=rawdir,
                 scale=args.scale) as (plan, scratch):
        try:
            rawdir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(f"cannot create the output directory: {exc.strerror}",
                             path=rawdir) from exc
        # A previous run's output in the same DIR must not pass for this run's.
        for name in RAW_OUTPUTS:
            (rawdir / name).unlink(missing_ok=True)
        outcome = execute(plan, rawdir, scratch)
    stamp = (outcome.start or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    info = RunInfo(run_id=f"{board.name}-{scenario.name}-{stamp}", board=board.name,
                   virtual=virtual, flavor=flavor, cyclictest_version=caps.version)
    result = assemble(plan, outcome, env, rawdir, info)
    path = result.write(out / "result.json")
    t = result.totals
    summary = (f"{t.samples} samples, max {t.max_us:g} us, avg {t.avg_us:.2f} us"
               if t.max_us is not None and t.avg_us is not None else f"{t.samples} samples")
    print(f"rtgate bench: {result.status}: {summary} -> {path}", file=sys.stderr)
    for reason in result.reasons:
        print(f"rtgate bench:   {reason}", file=sys.stderr)
    return int(Exit.OK if result.status == "complete" else Exit.INCOMPLETE)


def _trace(args: argparse.Namespace) -> int:
    trace = breaktrace.run(args.scenario, args.trace_breach, args.duration, args.out,
                           scale=args.scale)
    path = args.out / TRACE_CLAIMS
    try:
        # Even when no trace could be taken (and breaktrace wrote nothing): it says why.
        args.out.mkdir(parents=True, exist_ok=True)
        path.write_text(trace.model_dump_json(indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write the trace's reading: {exc.strerror}", path=path) from exc
    print(f"rtgate bench: {explain.paragraph(trace)} -> {path}", file=sys.stderr)
    return int(Exit.OK if trace.raw else Exit.INCOMPLETE)



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
    p.add_argument("--scale", type=scale, default=None,
                   help="multiply load instances/streams (default: the scenario's scale)")
    p.add_argument("--trace-breach", type=threshold, metavar="US",
                   help="instead of measuring: the breaktrace follow-up run, stopping at the "
                        "first latency above US µs or after --duration")
    p.set_defaults(func=main)
