"""`rtgate bench`'s engine, the local bench: measure this machine as the local board under a
scenario's load and write OUT/result.json; or the breaktrace follow-up run instead (what a remote
board runs for its controller, which re-reads the raw trace files itself). Here, not in the
harness: it reads the board file and runs the tracer, both above the harness."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from rtgate import tools
from rtgate.board.collect import collect
from rtgate.board.rawrun import RawRun
from rtgate.board.spec import BoardSpec, board_path, load_board
from rtgate.ciout import escape
from rtgate.cyclictest.version import detect
from rtgate.errors import InfraError, InputError
from rtgate.harness import environment
from rtgate.harness.runner import execute, planned
from rtgate.harness.scenario import load_scenario
from rtgate.layout import RAW
from rtgate.result import Result, Trace
from rtgate.trace import autoanalysis, breaktrace, explain

RAW_OUTPUTS = ("cyclictest.json", "cyclictest.hist", "cyclictest.stdout", "cyclictest.stderr")
TRACE_READING = "trace.json"
"""The trace run's own reading of itself, beside OUT/raw/trace-*."""


@dataclass(frozen=True)
class BenchSettings:
    """One run of the local bench."""

    scenario: str
    """A scenario name from bench/scenarios/ or a path to a scenario .yml."""
    duration_s: int
    out: Path
    board: str = "local"
    flavor: str | None = None
    """The kernel flavor label; None: rt if the running kernel is PREEMPT_RT, else stock."""
    scale: float | None = None
    """Multiplies load instances and streams; None: the scenario's own scale."""


def _local(name: str) -> BoardSpec:
    board = load_board(name)
    if board.driver != "local":
        raise InputError(f"board {board.name!r} uses the {board.driver!r} driver; `rtgate bench` "
                         "measures the local board", path=board_path(board.name))
    return board


def record(settings: BenchSettings) -> RawRun:
    """Measure here: the raw files in OUT/raw/, what this machine and its runner saw in the
    RawRun, for the collect step."""
    board = _local(settings.board)
    scenario, source = load_scenario(settings.scenario)
    measuring = tools.get(scenario.tool)
    if not measuring.local:
        # Never a cyclictest run in its place: the budget that judges it would be another tool's.
        why = (measuring.tracer and autoanalysis.missing(tracer=measuring.tracer)) or (
            f"rtgate runs {measuring.name} on qemu-arm64 only so far")
        raise InfraError(f"scenario {scenario.name!r} measures with {measuring.name}, which "
                         f"cannot run on board {board.name!r}: {why}", path=source)
    caps = detect()
    out = settings.out
    rawdir = (out / RAW).resolve()
    env = environment.capture()
    virtual = bool(env.virtual) if board.virtual == "auto" else bool(board.virtual)
    with planned(scenario, source, caps, duration_s=settings.duration_s, rawdir=rawdir,
                 scale=settings.scale) as (plan, scratch):
        try:
            rawdir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(f"cannot create the output directory: {exc.strerror}",
                             path=rawdir) from exc
        # A previous run's output in the same DIR must not pass for this run's.
        for name in RAW_OUTPUTS:
            (rawdir / name).unlink(missing_ok=True)
        log = execute(plan, rawdir, scratch)
    return RawRun(out=out, board=board.name, virtual=virtual, plan=plan, flavor=settings.flavor,
                  log=log, environment=env, cyclictest_version=caps.version)


def measure(settings: BenchSettings) -> Result:
    """Measure here; the result is written to OUT/result.json and summed up on stderr."""
    measured = collect(record(settings))
    result, path = measured.result, measured.result_path
    t = result.totals
    summary = (f"{t.samples} samples, max {t.max_us:g} us, avg {t.avg_us:.2f} us"
               if t.max_us is not None and t.avg_us is not None else f"{t.samples} samples")
    print(f"rtgate bench: {result.status}: {summary} -> {path}", file=sys.stderr)
    for reason in result.reasons:
        print(f"rtgate bench:   {escape(reason)}", file=sys.stderr)
    return result


def trace(settings: BenchSettings, threshold_us: float) -> Trace:
    """The breaktrace follow-up run here, stopping at the first latency above ``threshold_us``
    or after the duration; its reading is written to OUT/trace.json, also when no trace could
    be taken (it then says why)."""
    _local(settings.board)
    out = settings.out
    found = breaktrace.run(settings.scenario, threshold_us, settings.duration_s, out,
                           scale=settings.scale)
    path = out / TRACE_READING
    try:
        out.mkdir(parents=True, exist_ok=True)
        path.write_text(found.model_dump_json(indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write the trace's reading: {exc.strerror}", path=path) from exc
    print(f"rtgate bench: {explain.paragraph(found)} -> {path}", file=sys.stderr)
    return found
