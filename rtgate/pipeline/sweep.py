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

from rich.console import Console
from rich.markup import escape

from rtgate import paths
from rtgate.board.base import KernelArtifacts
from rtgate.board.measure import measure
from rtgate.board.spec import load_target_board
from rtgate.board.tuning import BootParam, Profile, load_profile
from rtgate.errors import Exit, InfraError, InputError, KernelCrash
from rtgate.jsonfile import write_atomic
from rtgate.kernel.cache import cache_root
from rtgate.kernel.plan import make_plan
from rtgate.kernel.runtime import get_runtime
from rtgate.pipeline.kernels import build_seconds, dynamic, kernel_for
from rtgate.pipeline.settings import STATIC_FLAVOR, KernelSource, SweepSettings
from rtgate.pipeline.sweepplan import runs_of, validate
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
