"""The result of a bench run: the measuring tool's reading of its raw output (rtgate.tools),
overlaid with what only the runner knows (board, loads, environment, and
why the run is partial or degraded)."""

from __future__ import annotations

import signal
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from rtgate import tools
from rtgate.harness.environment import Environment
from rtgate.harness.plan import Plan
from rtgate.harness.runner import RunLog
from rtgate.result import Board, Kernel, Load, Result, Status, Tool, Totals


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
    degraded = [f"load {ld.name!r} exited early {exit_text(ld.early_exit)} after "
                f"{ld.early_after_s or 0:.1f} s (see raw/{ld.name}.stderr)"
                for ld in run_log.loads if ld.early_exit is not None]
    return partial, degraded


def assemble(plan: Plan, run_log: RunLog, env: Environment, rawdir: Path,
             info: RunInfo, *, strict: bool = False) -> Result:
    measuring = tools.get(plan.tool)
    parsed, problem = measuring.parse(plan.command, rawdir, tools.RunFacts(
        board=info.board, virtual=info.virtual, scenario=plan.scenario, flavor=info.flavor,
        run_id=info.run_id, cpus_online=env.cpus_online), strict)
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
    versions = {"cyclictest": info.cyclictest_version, "rtla": info.rtla_version}
    installed = {"cyclictest": info.cyclictest_version, **env.tools}
    if measuring.package != "cyclictest":
        installed[measuring.package] = versions.get(measuring.package)
    tool = Tool(name=plan.tool, version=versions.get(measuring.package),
                cmdline=measuring.cmdline(plan.command))
    temperature = {} if run_log.max_temp_c is None else {
        "max_temp_c": run_log.max_temp_c, "max_temp_zone": run_log.max_temp_zone}
    environment = env.updated(
        tools=installed, scale=plan.scale, warmup_s=plan.warmup_s, duration_s=plan.duration_s,
        cyclictest_notes=measuring.notes(plan.command),
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
        "loads": [Load(name=ld.name, command=ld.argv, exit_status=ld.early_exit,
                       early_exit=ld.early_exit is not None) for ld in run_log.loads],
        "environment": environment.written(),
    })
    # model_copy skips validation: re-validate so a bug here cannot write an invalid result.
    return Result.model_validate(updated.model_dump(by_alias=True))
