"""The sweep: the preemption models side by side under each load (seed 004's table).

Where the non-RT kernel has PREEMPT_DYNAMIC, one build serves none, voluntary and full, chosen
with ``preempt=`` on the command line; the active model is then read back on the board
(/sys/kernel/debug/sched/preempt, else the boot log's "Dynamic Preempt:") like any tuning
setting, and a run whose model did not take is incomplete. Such a model is labelled
``dynamic-none`` etc.: a dynamic "none" keeps the static-call machinery of a preemptible kernel
and is not the compiled-in ``none.config`` kernel, which ``--static`` measures instead (one build
per model). RT is its own build either way (6.12's PREEMPT_DYNAMIC excludes PREEMPT_RT).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import yaml
from rich.console import Console
from rich.markup import escape

from rtgate import inputfile, paths
from rtgate.board.base import KernelArtifacts
from rtgate.board.measure import measure
from rtgate.board.spec import BoardSpec, kind_of, load_target_board, scenarios_of
from rtgate.board.tuning import BootParam, Profile, load_profile
from rtgate.errors import Exit, InfraError, InputError, KernelCrash, Problems
from rtgate.harness.scenario import load_scenario
from rtgate.jsonfile import write_atomic
from rtgate.kernel.cache import cache_root
from rtgate.kernel.plan import flavor_fragment, make_plan
from rtgate.kernel.runtime import get_runtime
from rtgate.pipeline.kernels import build_seconds, dynamic, kernel_for, kernel_of
from rtgate.pipeline.settings import MODELS, STATIC_FLAVOR, KernelSource, SweepSettings
from rtgate.pipeline.sweeprender import Point, build_note, page, plots_for, table


def static_builds(board: str, models: list[str],
                  kernel: KernelSource) -> dict[str, float | None]:
    """The static builds a dynamic sweep replaced (flavor → seconds), as the kernel cache
    recorded them when it built the same inputs; None for one never built here, or for every
    one when the kernels were given prebuilt (their inputs unknown). Nothing is built: the time
    saved is what was measured, not a multiple of the dynamic build's."""
    out: dict[str, float | None] = {}
    for model in models:
        if model == "rt":
            continue
        flavor = STATIC_FLAVOR[model]
        if kernel.kernels:
            out[flavor] = None
            continue
        try:
            plan = make_plan(board, flavor, get_runtime(kernel.runtime), source=kernel.source,
                             series=kernel.patches)
        except (InputError, InfraError):
            out[flavor] = None
            continue
        out[flavor] = build_seconds(cache_root() / "kernels" / plan.cache_key)
    return out


def _with_model(base: Profile | None, model: str) -> Profile:
    profile = base or load_profile("none")
    return profile.model_copy(update={"boot": [*profile.boot,
                                               BootParam(param="preempt", value=model)]})


@dataclass(frozen=True)
class SweepRun:
    """One model as the sweep measures it: on which build, under which label."""

    model: str
    flavor: str
    """The build: stock (PREEMPT_DYNAMIC, the model chosen at boot) or the model's own."""
    label: str
    """What its results and table rows are called: dynamic-<model>, or the static flavor."""
    boot: str | None
    """The command-line word that chooses the model on a dynamic build."""


def runs_of(models: list[str], use_dynamic: bool) -> list[SweepRun]:
    """Each model's build and label: one PREEMPT_DYNAMIC stock build for none, voluntary and full
    when ``use_dynamic``, else one build per model; RT is its own build either way."""
    return [SweepRun(m, "stock", f"dynamic-{m}", f"preempt={m}") if m != "rt" and use_dynamic
            else SweepRun(m, STATIC_FLAVOR[m], STATIC_FLAVOR[m], None) for m in models]


@dataclass(frozen=True)
class SweepScenario:
    ref: str
    """As asked for (a name, or a file)."""
    name: str
    source: Path
    tool: str


@dataclass(frozen=True)
class SweepPlan:
    """A sweep resolved before anything runs: its scenarios, base tuning, the builds it expects
    and every model × scenario."""

    spec: BoardSpec
    base: Profile | None
    scenarios: list[SweepScenario]
    dynamic: bool
    """Expected: a PREEMPT_DYNAMIC stock build serves none, voluntary and full. The built stock
    kernel's own .config decides when the sweep runs (without it: one build per model)."""
    dynamic_from: str
    kernels: dict[str, str]
    """Per expected build, where its kernel comes from."""

    def describe(self, s: SweepSettings) -> str:
        """The plan as YAML: what would be built, booted and measured (``--dry-run``)."""
        return yaml.safe_dump({
            "board": self.spec.name, "kind": kind_of(self.spec), "driver": self.spec.driver,
            "duration_s": s.duration, "scale": s.scale,
            "tuning": self.base.name if self.base else "none",
            "models": "dynamic" if self.dynamic else "static", "models_from": self.dynamic_from,
            "kernels": self.kernels,
            "runs": [{"model": r.model, "label": r.label, "kernel": r.flavor, "boot": r.boot,
                      "scenario": sc.name, "file": paths.shown(sc.source), "tool": sc.tool}
                     for r in runs_of(s.models, self.dynamic) for sc in self.scenarios]},
            sort_keys=False, allow_unicode=True)


def _expects_dynamic(s: SweepSettings) -> tuple[bool, str]:
    """Whether the sweep expects one PREEMPT_DYNAMIC stock build, and what says so; the sweep
    itself asks the stock kernel it built or was given (``dynamic``)."""
    if s.static:
        return False, "--static: one compiled-in build per model"
    if all(m == "rt" for m in s.models):
        return False, "rt only: its own build"
    if s.kernel.kernels:
        try:
            stock = KernelArtifacts.from_dir(s.kernel.kernels / "stock")
        except InfraError as exc:
            return False, f"the prebuilt stock kernel does not load ({exc.oneline()}): one " \
                          "build per model"
        if dynamic(stock):
            return True, f"the prebuilt stock kernel ({paths.shown(stock.dir)}) has PREEMPT_DYNAMIC"
        return False, f"the prebuilt stock kernel ({paths.shown(stock.dir)}) has no " \
                      "PREEMPT_DYNAMIC: one build per model"
    fragment = flavor_fragment("stock")
    text = inputfile.read_text(fragment, inputfile.KCONFIG)
    if "CONFIG_PREEMPT_DYNAMIC=y" in text.splitlines():
        return True, (f"{paths.shown(fragment)} sets CONFIG_PREEMPT_DYNAMIC=y (the built "
                      ".config decides: without it, one build per model)")
    return False, f"{paths.shown(fragment)} does not set CONFIG_PREEMPT_DYNAMIC: one build " \
                  "per model"


def validate(spec: BoardSpec, s: SweepSettings) -> SweepPlan:
    """The models, the tuning profile, every scenario and the kernels of the builds it expects,
    resolved before the first build or boot (rtgate.errors.raise_found, exit 2)."""
    problems = Problems()

    unknown = [m for m in s.models if m not in MODELS]
    if unknown:
        problems.add(InputError(f"unknown preemption model(s) {', '.join(unknown)} "
                                f"(known: {', '.join(MODELS)})"))
    base = problems.attempt(lambda: load_profile(s.tuning) if s.tuning else None)
    scenarios = []
    for ref in scenarios_of(spec, s.scenarios):
        if loaded := problems.attempt(lambda r=ref: load_scenario(r)):
            scenarios.append(SweepScenario(ref, loaded[0].name, loaded[1], loaded[0].tool))
    # A dynamic sweep falls back to one build per model: every fragment either way.
    flavors = {"stock", *(STATIC_FLAVOR[m] for m in s.models if m in MODELS)}
    for flavor in sorted(flavors) if s.kernel.kernels is None else []:
        problems.attempt(lambda f=flavor: flavor_fragment(f))
    expected = problems.attempt(lambda: _expects_dynamic(s)) or (False, "")
    models = [m for m in s.models if m in MODELS]
    kernels = {flavor: where for flavor in dict.fromkeys(r.flavor for r in runs_of(
                   models, expected[0]))
               if (where := problems.attempt(lambda f=flavor: kernel_of(spec, f, s.kernel)))}
    problems.raise_found("any build or boot")
    return SweepPlan(spec, base, scenarios, expected[0], expected[1], kernels)


def sweep(s: SweepSettings) -> int:
    """Every model × scenario measured; sweep.md and sweep.html written; exit 3 when a run is
    incomplete."""
    console = Console(stderr=True)
    spec = load_target_board(s.board, "a sweep needs a board that boots built kernels")
    plan = validate(spec, s)
    if s.dry_run:
        print(plan.describe(s), end="")
        return 0
    base, scenarios = plan.base, [sc.ref for sc in plan.scenarios]
    kernels: dict[str, KernelArtifacts | InfraError] = {}

    def kernel(flavor: str) -> KernelArtifacts | InfraError:
        if flavor not in kernels:
            try:
                found = kernel_for(spec, flavor, s.kernel, s.out, console)
                assert found is not None
                kernels[flavor] = found
            except InfraError as exc:
                kernels[flavor] = exc
        return kernels[flavor]

    stock = None if s.static or s.models == ["rt"] else kernel("stock")
    use_dynamic = isinstance(stock, KernelArtifacts) and dynamic(stock)
    if stock is not None and not use_dynamic and not s.static:
        console.print("[yellow]the stock kernel has no PREEMPT_DYNAMIC: one static build per "
                      "model[/]")
    points: list[Point] = []
    for run in runs_of(s.models, use_dynamic):
        model, label = run.model, run.label
        profile = _with_model(base, model) if run.boot else base
        k = kernel(run.flavor)
        for scenario in scenarios:
            out = s.out / label / scenario
            if isinstance(k, InfraError):
                points.append(Point(model, label, scenario, None, k.oneline()))
                continue
            console.rule(f"[bold]{label}[/] {scenario} ({s.duration} s)")
            try:
                m = measure(spec, k, scenario, s.duration, out, flavor=label,
                            scale=s.scale, profile=profile)
            except InfraError as exc:
                points.append(Point(model, label, scenario, None, exc.oneline()))
                continue
            except KernelCrash as exc:
                # The kernel's own failure at this point: said so, the sweep goes on.
                points.append(Point(model, label, scenario, None,
                                    f"the kernel under test crashed: {exc.said}"))
                continue
            points.append(Point(model, label, scenario, m.result))

    static = static_builds(spec.kernel_target, s.models, s.kernel) if use_dynamic else None
    notes = build_note(kernels, static, s.kernel.kernels is not None)
    text = table(points, spec.name, spec.virtual is True) + notes
    write_atomic(s.out / "sweep.md", text)
    figures = plots_for(points, s.out)
    shutil.copyfile(paths.REPORTS / "style.css", s.out / "style.css")
    write_atomic(s.out / "sweep.html",
                 page(points, notes, figures, spec.name, spec.virtual is True))
    print(text)
    print(f"sweep.md: {s.out / 'sweep.md'}\nsweep.html: {s.out / 'sweep.html'}")
    bad = [p for p in points if p.result is None or p.result.status != "complete"]
    for p in bad:
        why = p.why or "; ".join(p.result.reasons if p.result else [])
        console.print(f"[red]{escape(p.label)}/{escape(p.scenario)} incomplete:[/] {escape(why)}")
    return int(Exit.INCOMPLETE if bad else Exit.OK)
