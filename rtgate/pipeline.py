"""The pipeline: build → deploy → boot → bench → restore → check, for every flavor × scenario.

It is a thin loop over the stages: the kernel stage builds (or takes from the cache, or from
``--kernels``), the board stage measures, the gate judges. An infrastructure failure of one run
(no boot, wrong release, timeout) is recorded and the loop goes on, so one stuck emulator does
not hide the verdicts of the other runs; it still makes the whole pipeline exit 3.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import yaml
from rich.console import Console
from rich.markup import escape
from rich.text import Text

from rtgate import paths
from rtgate.board.base import KernelArtifacts
from rtgate.board.measure import measure
from rtgate.board.spec import (
    BoardSpec,
    QemuOptions,
    flavors_of,
    kind_of,
    load_board,
    scenarios_of,
)
from rtgate.board.tuning import Profile, load_profile
from rtgate.breach import BreachTracing
from rtgate.ciout import printable
from rtgate.errors import InfraError, InputError, KernelCrash, raise_found
from rtgate.gate import infrarecord, junit, markdown
from rtgate.gate.thresholds import Thresholds, flavor_of, load_thresholds
from rtgate.gate.verdict import Crash, Infra, Ruling, judge, worst
from rtgate.harness.scenario import load_scenario
from rtgate.jsonfile import write_atomic
from rtgate.kernel import record
from rtgate.kernel.build import build
from rtgate.kernel.plan import flavor_fragment
from rtgate.kernel.targets import load_target
from rtgate.layout import flavor_dir, run_home
from rtgate.result import Result


@dataclass(frozen=True)
class KernelSource:
    """Where a flavor's kernel comes from: prebuilt in KERNELS/<flavor>/, else built for the
    board from ``source`` with the ``patches`` series, the toolchain on ``runtime``."""

    kernels: Path | None
    source: str | None
    patches: Path | None
    runtime: str


@dataclass(frozen=True)
class PipelineSettings:
    board: str
    flavors: list[str] | None
    scenarios: list[str] | None
    duration: int
    """Seconds per run."""
    out: Path
    kernel: KernelSource
    scale: float | None
    thresholds: Path
    tuning: str | None
    """A tuning profile's name or path."""
    allow_host_changes: bool
    kernel_args: list[str]
    """Words added to the booted kernel's command line (qemu boards)."""
    trace_on_breach: float | str | None
    """µs, or the budget's word; None: no follow-up trace run."""
    trace_cap: int
    allow_unbudgeted: bool
    dry_run: bool = False
    """Print the resolved plan as YAML and stop: no build, no board."""


@dataclass(frozen=True)
class Run:
    flavor: str
    scenario: str
    out: Path
    result: Path | None = None
    infra: InfraError | KernelCrash | None = None
    """Why the run has no result: the lab failed, or the kernel under test crashed."""


def kernel_for(spec: BoardSpec, flavor: str, kernel: KernelSource, out: Path,
               console: Console) -> KernelArtifacts | None:
    if not spec.kernel_target:
        return None
    if kernel.kernels:
        artifacts = KernelArtifacts.from_dir(kernel.kernels / flavor)
    else:
        console.rule(f"[bold]build[/] {spec.kernel_target} {flavor}")
        built = build(spec.kernel_target, flavor, source=kernel.source, series=kernel.patches,
                      runtime=kernel.runtime, out=out / "kernels" / flavor)
        # The release is the build's (a pull request's Makefile sets it): plain text.
        console.print(Text(f"kernel {printable(built.kernel_release)} "
                           f"({'cache hit' if built.cache_hit else 'built'}) in {built.out}"))
        artifacts = KernelArtifacts.from_dir(built.out)
    # The artifact leaves kernels/ out: its record stays with the results (rtgate kcidb).
    record.keep(artifacts.dir, out / record.BUILDS / flavor)
    return artifacts


def tuning_profile(spec: BoardSpec, tuning: str | None,
                   allow_host_changes: bool) -> Profile | None:
    """``--tuning``, refused on the local board unless the user allows changing the host."""
    if not tuning:
        return None
    profile = load_profile(tuning)
    if spec.driver == "local" and (profile.boot or profile.runtime) and not allow_host_changes:
        raise InputError(f"tuning profile {profile.name!r} changes this machine's settings: "
                         "give --allow-host-changes (run-time writes are undone at the end)")
    return profile


def with_kernel_args(spec: BoardSpec, words: list[str]) -> BoardSpec:
    """The board with ``words`` appended to the kernel command line it boots with."""
    if not words:
        return spec
    if not isinstance(spec.options, QemuOptions):
        raise InputError(f"board {spec.name!r} takes no --kernel-arg (only qemu boards do)")
    options = spec.options.model_copy(update={"append": [*spec.options.append, *words]})
    return spec.model_copy(update={"options": options})


def run_all(spec: BoardSpec, flavors: list[str], scenarios: list[str], s: PipelineSettings,
            profile: Profile | None, tracing: BreachTracing | None,
            console: Console) -> list[Run]:
    runs: list[Run] = []
    total = len(flavors) * len(scenarios)
    for flavor in flavors:
        try:
            kernel = kernel_for(spec, flavor, s.kernel, s.out, console)
        except InfraError as exc:
            runs += [Run(flavor, sc, s.out / flavor / sc, infra=exc) for sc in scenarios]
            continue
        for scenario in scenarios:
            out = run_home(s.out, flavor, scenario)
            console.rule(f"[bold]run {len(runs) + 1}/{total}[/] {spec.name} "
                         f"{flavor or 'running kernel'} {scenario} ({s.duration} s)")
            try:
                m = measure(spec, kernel, scenario, s.duration, out,
                            flavor=flavor or None, scale=s.scale, profile=profile,
                            follow_up=tracing.follow_up(scenario, s.scale) if tracing else None)
            except (InfraError, KernelCrash) as exc:
                # escape: the message quotes build logs and consoles, whose [..] is not markup.
                what = "the kernel crashed" if isinstance(exc, KernelCrash) else \
                    "infrastructure failure"
                console.print(f"[red]{what}:[/] {escape(exc.oneline())}")
                runs.append(Run(flavor, scenario, out, infra=exc))
                continue
            runs.append(Run(flavor, scenario, out, result=m.result_path))
    return runs


def _ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.1f}x" if a is not None and b else "—"


def _versus(stock: float | None, rt: float | None) -> str:
    """RT's number against stock's in words that stay true whichever is larger: "2.2x lower than
    stock's", "2.5x higher than stock's" (a loaded emulator can make RT the slower one)."""
    if stock is None or rt is None or not stock or not rt:
        return "not compared (not measured on both kernels)"
    if stock >= rt:
        return f"{stock / rt:.1f}x lower than stock's"
    return f"{rt / stock:.1f}x higher than stock's"


def _num(v: float | None) -> str:
    return "—" if v is None else f"{v:.2f}".rstrip("0").rstrip(".")


def comparison(results: list[Result]) -> str:
    """Flavors side by side per scenario, each against RT: the paper's headline ratios."""
    lines = ["## rtgate pipeline: flavors compared", ""]
    for scenario in dict.fromkeys(r.scenario for r in results):
        rows = [r for r in results if r.scenario == scenario]
        rt = next((r for r in rows if flavor_of(r) == "rt"), None)
        board = rows[0].board
        virtual = " — virtual board, not a real-time claim" if board.virtual else ""
        lines += [f"### {markdown.code(board.name)} / {markdown.code(scenario)}{virtual}", "",
                  "| flavor | samples | avg µs | max µs | p99.99 µs | avg vs RT | max vs RT |",
                  "| --- | --- | --- | --- | --- | --- | --- |"]
        for r in rows:
            t = r.totals
            ref = rt.totals if rt else None
            lines.append(
                f"| {markdown.cell(flavor_of(r))} | {t.samples} | {_num(t.avg_us)} | "
                f"{_num(t.max_us)} | "
                f"{t.p99_99 if t.p99_99 else '—'} | "
                f"{_ratio(t.avg_us, ref.avg_us) if ref else '—'} | "
                f"{_ratio(t.max_us, ref.max_us) if ref else '—'} |")
        stock = next((r for r in rows if flavor_of(r) == "stock"), None)
        if rt and stock:
            lines += ["", f"PREEMPT_RT's maximum latency is "
                          f"{_versus(stock.totals.max_us, rt.totals.max_us)}, its average is "
                          f"{_versus(stock.totals.avg_us, rt.totals.avg_us)}. The Pi 5 paper "
                          "measured 294x and 2.49x lower on a Pi 5 under all-in load"
                          + ("; an emulator's ratios say nothing about a Pi." if board.virtual
                             else ".")]
        lines.append("")
    return "\n".join(lines)


def failure(board: str, run: Run) -> Infra:
    """A run without a result as the gate rules on it: the kernel's crash, or the lab's
    failure."""
    exc = run.infra
    assert exc is not None
    log = Path(exc.path) if exc.path else run.out
    if isinstance(exc, KernelCrash):
        return Crash(board, flavor_dir(run.flavor), run.scenario, log, exc.oneline(),
                     said=exc.said, evidence=exc.evidence)
    return Infra(board, flavor_dir(run.flavor), run.scenario, log, exc.oneline())


_T = TypeVar("_T")


@dataclass(frozen=True)
class PlannedRun:
    flavor: str | None
    """None: the board's running kernel, its flavor read when it runs."""
    scenario: str
    """As asked for (a name, or a file)."""
    name: str
    """The scenario's own name: what results and budgets are keyed by."""
    source: Path
    tool: str
    budget: str | None
    """Where the budget that judges it is (file:line); None: none (yet) known."""


@dataclass(frozen=True)
class PipelinePlan:
    """A pipeline resolved before anything runs: every flavor × scenario with its scenario
    file, tool, budget and kernel."""

    spec: BoardSpec
    thresholds: Thresholds
    profile: Profile | None
    tracing: BreachTracing | None
    flavors: list[str]
    kernels: dict[str, str]
    """Per flavor, where its kernel comes from."""
    runs: list[PlannedRun]

    def describe(self, s: PipelineSettings) -> str:
        """The plan as YAML: what would be built, booted and measured (``--dry-run``)."""
        return yaml.safe_dump({
            "board": self.spec.name, "kind": kind_of(self.spec), "driver": self.spec.driver,
            "duration_s": s.duration, "scale": s.scale,
            "tuning": self.profile.name if self.profile else "none",
            "trace_on_breach": s.trace_on_breach,
            "kernels": {flavor or "running": where for flavor, where in self.kernels.items()},
            "runs": [{"flavor": r.flavor or "running", "scenario": r.name,
                      "file": paths.shown(r.source), "tool": r.tool, "budget": r.budget}
                     for r in self.runs]}, sort_keys=False, allow_unicode=True)



def validate(s: PipelineSettings) -> PipelinePlan:
    """Every flavor × scenario resolved to its scenario, tool, budget, tuning and kernel before
    any build or boot; every problem found is reported (rtgate.errors.raise_found, exit 2)."""
    spec = load_board(s.board)  # nothing else can be resolved without the board
    problems: list[InputError] = []

    def attempt(step: Callable[[], _T]) -> _T | None:
        try:
            return step()
        except InputError as exc:
            problems.append(exc)
            return None

    flavors = attempt(lambda: flavors_of(spec, s.flavors)) or []
    thresholds = attempt(lambda: load_thresholds(s.thresholds))
    profile = attempt(lambda: tuning_profile(spec, s.tuning, s.allow_host_changes))
    booted = attempt(lambda: with_kernel_args(spec, s.kernel_args)) or spec
    kernels = {flavor: where for flavor in flavors
               if (where := attempt(lambda f=flavor: _kernel_of(spec, f, s.kernel)))}
    kind = kind_of(spec)
    runs = []
    for scenario in scenarios_of(spec, s.scenarios):
        loaded = attempt(lambda sc=scenario: load_scenario(sc))
        if loaded is None:
            continue
        found, source = loaded
        for flavor in flavors:
            budget = None
            if thresholds is not None and flavor:
                chosen = thresholds.select(kind, flavor, found.name,
                                           profile.name if profile else "none", found.tool)
                budget = _shown_source(chosen.source) if chosen else None
                if chosen is None and not s.allow_unbudgeted:
                    problems.append(InputError(
                        f"no budget matches board={spec.name} flavor={flavor} "
                        f"scenario={found.name}" + ("" if found.tool == "cyclictest" else
                                                    f" tool={found.tool}")
                        + " (--allow-unbudgeted measures it unjudged)", path=s.thresholds))
            runs.append(PlannedRun(flavor or None, scenario, found.name, source, found.tool,
                                   budget))
    raise_found(problems, "any build or boot")
    assert thresholds is not None
    tracing = (BreachTracing(s.trace_on_breach, s.trace_cap, thresholds, paths.BOARDS)
               if s.trace_on_breach is not None else None)
    return PipelinePlan(booted, thresholds, profile, tracing, flavors, kernels, runs)


def _shown_source(source: str) -> str:
    where, _, line = source.rpartition(":")
    return f"{paths.shown(where)}:{line}" if where else source


def _kernel_of(spec: BoardSpec, flavor: str, kernel: KernelSource) -> str:
    """Where ``flavor``'s kernel comes from; an InputError when it cannot."""
    if not spec.kernel_target:
        return "the board's running kernel"
    if kernel.kernels:
        try:
            KernelArtifacts.from_dir(kernel.kernels / flavor)
        except InfraError:
            pass  # a broken build is that flavor's infrastructure failure, recorded as it runs
        return f"prebuilt: {kernel.kernels / flavor}"
    load_target(spec.kernel_target)
    flavor_fragment(flavor)
    if kernel.patches is not None and not kernel.patches.exists():
        raise InputError("no such patch series", path=kernel.patches)
    return f"built: {spec.kernel_target} {flavor}" + (f" from {kernel.source}"
                                                       if kernel.source else "")


def pipeline(s: PipelineSettings) -> int:
    """Every flavor × scenario measured and judged; the worst run's exit code."""
    console = Console(stderr=True)
    plan = validate(s)
    if s.dry_run:
        print(plan.describe(s), end="")
        return 0
    spec, thresholds = plan.spec, plan.thresholds
    runs = run_all(spec, plan.flavors, scenarios_of(spec, s.scenarios), s, plan.profile,
                   plan.tracing, console)

    outcomes: list[Ruling] = judge([r.result for r in runs if r.result], thresholds,
                                   boards=paths.BOARDS, allow_unbudgeted=s.allow_unbudgeted)
    failures = [(r.out, failure(spec.name, r)) for r in runs if r.infra]
    for directory, infra in failures:
        infrarecord.save(infra, directory)  # for `rtgate report`: a site even when all failed
    outcomes += [infra for _, infra in failures]
    write_atomic(s.out / "junit.xml", junit.render(outcomes))
    write_atomic(s.out / "summary.md", markdown.render(outcomes))
    text = comparison([o.result for o in outcomes if o.result is not None])
    write_atomic(s.out / "comparison.md", text)

    console.rule("[bold]verdict")
    # The tables are the command's output: plain stdout, unwrapped, fit to paste.
    print(markdown.render(outcomes))
    print(text)
    for name in ("junit.xml", "summary.md", "comparison.md"):
        print(f"{name}: {s.out / name}")
    return int(worst([o.exit for o in outcomes]))
