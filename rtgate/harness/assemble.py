"""The result of a bench run: the parser's reading of the measuring tool's raw output (cyclictest,
or rtla timerlat hist), overlaid with what only the runner knows (board, loads, environment, and
why the run is partial or degraded)."""

from __future__ import annotations

import shlex
import signal
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from rtgate.cyclictest.parse import parse
from rtgate.errors import InputError
from rtgate.harness.environment import Environment
from rtgate.harness.plan import Plan
from rtgate.harness.runner import RunLog
from rtgate.result import Board, Kernel, Load, Result, Status, Tool, Totals
from rtgate.timerlat import hist


@dataclass(frozen=True)
class RunInfo:
    run_id: str
    board: str
    virtual: bool
    flavor: str
    cyclictest_version: str
    rtla_version: str | None = None


def run_id(board: str, scenario: str, start: datetime | None = None, *,
           job: int | None = None) -> str:
    """The run's id, the key history and the A/B rounds file runs under: board, scenario and the
    UTC second the measurement started (now, when no start was seen), or a LAVA run's job
    number in its place. Every driver makes it here, so the formats never drift apart."""
    if job is not None:
        return f"{board}-{scenario}-job{job}"
    return f"{board}-{scenario}-{(start or datetime.now(UTC)):%Y%m%dT%H%M%SZ}"


def exit_text(status: int) -> str:
    """How a process ended, as a reason reads it: `with status 1`, `(killed by SIGKILL)`."""
    if status < 0:
        return f"(killed by {signal.Signals(-status).name})"
    return f"with status {status}"


def _last_line(path: Path) -> str:
    try:
        lines = [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return lines[-1].strip() if lines else ""


def _parse_raw(plan: Plan, rawdir: Path, info: RunInfo,
               strict: bool) -> tuple[Result | None, str | None]:
    """Parse the richest readable raw output: the JSON with the histogram file (overflow cycle
    numbers), else either alone, else stdout (cyclictest 1.x), each with the block maxima and
    only then without them (the result is then partial). A file cut short by a kill makes its
    candidate fail and the next one is tried — unless ``strict``: files from a machine that may
    lie are read all together or not at all, so dropping the file that contradicts a forged one
    cannot leave the forgery standing."""
    json_path, hist = plan.cyclictest.json_path, plan.cyclictest.histfile
    blocks = plan.cyclictest.blocks
    stdout = str(rawdir / "cyclictest.stdout")
    bases: list[list[str | None]] = [[json_path, hist], [json_path], [hist], [stdout]]
    with_blocks = [[*b, blocks] for b in bases if any(b)] if blocks is not None else []
    problem = "cyclictest wrote no output"
    # Why each set of files could not be read together with the blocks file.
    without: dict[tuple[str | None, ...], str] = {}
    for names in [*with_blocks, *bases]:
        key = tuple(names[:-1]) if names in with_blocks else None
        files = [Path(n) for n in names if n is not None]
        if not files:
            continue
        if absent := [f for f in files if not (f.is_file() and f.stat().st_size > 0)]:
            if strict:
                return None, f"{absent[0]}: missing or empty"
            if key is not None:
                without[key] = f"{absent[-1]}: missing or empty"
            continue
        try:
            result = parse(files, board=info.board, virtual=info.virtual,
                           scenario=plan.scenario, flavor=info.flavor, run_id=info.run_id)
        except InputError as exc:
            problem = exc.oneline()
            if strict:
                break
            if key is not None:
                without[key] = problem
            continue
        if blocks is not None and key is None:
            result.status = "partial"
            result.reasons.append(f"no block maxima: {without[tuple(names)]}")
        return result, None
    return None, problem


def _parse_timerlat(plan: Plan, info: RunInfo) -> tuple[Result | None, str | None]:
    """rtla timerlat hist's stdout, with the run's histogram limit, bins and period."""
    assert plan.timerlat is not None
    command = plan.timerlat
    path = Path(command.stdout)
    if not (path.is_file() and path.stat().st_size > 0):
        return None, f"{path}: missing or empty"
    try:
        return hist.parse(path, limit_us=command.limit_us, bucket_us=command.bucket_us,
                          period_us=command.period_us or hist.DEFAULT_PERIOD_US,
                          board=info.board, virtual=info.virtual, scenario=plan.scenario,
                          flavor=info.flavor, run_id=info.run_id), None
    except InputError as exc:
        return None, exc.oneline()


def _reasons(plan: Plan, run_log: RunLog, rawdir: Path) -> tuple[list[str], list[str]]:
    """(why partial, why degraded)."""
    partial: list[str] = []
    if run_log.interrupted:
        partial.append(f"interrupted by {run_log.interrupted} after {run_log.measured_s:.1f} s "
                       f"of {plan.duration_s} s of measurement")
    if run_log.hung:
        partial.append(f"{plan.tool} still running {plan.duration_s} s + margin after start: "
                       "stopped with SIGINT")
    rc = run_log.cyclictest_rc
    if rc not in (None, 0) and not (run_log.interrupted and rc == -signal.SIGINT):
        detail = _last_line(rawdir / f"{plan.tool}.stderr")
        partial.append(f"{plan.tool} exited {exit_text(rc)}" + (f": {detail}" if detail
                                                                      else ""))
    if run_log.reducer_rc not in (None, 0):
        detail = _last_line(rawdir / "reducer.stderr")
        partial.append(f"the block-maxima reducer exited {exit_text(run_log.reducer_rc)}"
                       + (f": {detail}" if detail else ""))
    degraded = [f"load {ld.spec.name!r} exited early {exit_text(ld.early_exit)} after "
                f"{ld.early_after_s:.1f} s (see raw/{ld.spec.name}.stderr)"
                for ld in run_log.loads if ld.early_exit is not None]
    return partial, degraded


def assemble(plan: Plan, run_log: RunLog, env: Environment, rawdir: Path,
             info: RunInfo, *, strict: bool = False) -> Result:
    parsed, problem = (_parse_timerlat(plan, info) if plan.timerlat
                       else _parse_raw(plan, rawdir, info, strict))
    partial, degraded = _reasons(plan, run_log, rawdir)
    if parsed is None:
        partial.append(f"no result from {plan.tool}'s output: {problem}")
        parsed = Result(run_id=info.run_id, board=Board(name=info.board), kernel=Kernel(),
                        scenario=plan.scenario, tool=Tool(), threads=[],
                        totals=Totals(samples=0), status="partial")
    status: Status = parsed.status
    if partial or status == "partial":
        status = "partial"
    elif degraded:
        status = "degraded"
    kernel = parsed.kernel.model_copy(update={
        "release": parsed.kernel.release or env.kernel_release,
        "version": parsed.kernel.version or env.kernel_version,
        "machine": parsed.kernel.machine or env.machine,
        "preempt_rt": env.preempt_rt,
        "flavor": info.flavor,
    })
    tools = {"cyclictest": info.cyclictest_version, **env.tools}
    tool = Tool(name="cyclictest", version=info.cyclictest_version,
                cmdline=shlex.join(plan.cyclictest.argv))
    if plan.timerlat:
        tools["rtla"] = info.rtla_version
        tool = Tool(name=plan.tool, version=info.rtla_version,
                    cmdline=shlex.join(plan.timerlat.argv))
    temperature = {} if run_log.max_temp_c is None else {
        "max_temp_c": run_log.max_temp_c, "max_temp_zone": run_log.max_temp_zone}
    environment = env.updated(
        tools=tools, scale=plan.scale, warmup_s=plan.warmup_s, duration_s=plan.duration_s,
        cyclictest_notes=[] if plan.timerlat else plan.cyclictest.notes,
        loadavg_before=run_log.loadavg_before, loadavg_after=run_log.loadavg_after,
        **temperature)
    updated = parsed.model_copy(update={
        "board": Board(name=info.board, virtual=info.virtual),
        "kernel": kernel,
        "scenario": plan.scenario,
        "tool": tool,
        "start": parsed.start or (run_log.start.isoformat() if run_log.start else None),
        "end": parsed.end or (run_log.end.isoformat() if run_log.end else None),
        "status": status,
        "reasons": list(dict.fromkeys([*parsed.reasons, *partial, *degraded])),
        "loads": [Load(name=ld.spec.name, command=ld.spec.argv, exit_status=ld.early_exit,
                       early_exit=ld.early_exit is not None) for ld in run_log.loads],
        "environment": environment.written(),
    })
    # model_copy skips validation: re-validate so a bug here cannot write an invalid result.
    return Result.model_validate(updated.model_dump(by_alias=True))
