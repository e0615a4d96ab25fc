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
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import jinja2
from rich.console import Console
from rich.markup import escape

from rtgate import __version__, inputfile, jsonfile, paths
from rtgate.board.base import KernelArtifacts
from rtgate.board.measure import measure
from rtgate.board.spec import BoardSpec, load_target_board, scenarios_of
from rtgate.board.tuning import BootParam, Profile, load_profile
from rtgate.errors import Exit, InfraError, InputError, KernelCrash, raise_found
from rtgate.gate import markdown
from rtgate.harness.scenario import load_scenario
from rtgate.jsonfile import write_atomic
from rtgate.kernel.cache import cache_root
from rtgate.kernel.plan import flavor_fragment, make_plan
from rtgate.kernel.runtime import get_runtime
from rtgate.pipeline import KernelSource, kernel_for
from rtgate.report import plots
from rtgate.report.summary import safe_name
from rtgate.result import Result

MODELS = ("none", "voluntary", "full", "rt")
STATIC_FLAVOR = {"none": "none", "voluntary": "voluntary", "full": "preempt", "rt": "rt"}


@dataclass(frozen=True)
class SweepSettings:
    board: str
    models: list[str]
    """Of MODELS."""
    scenarios: list[str] | None
    duration: int
    """Seconds per run."""
    out: Path
    static: bool
    """One compiled-in build per model instead of preempt= on one PREEMPT_DYNAMIC build."""
    kernel: KernelSource
    scale: float | None
    tuning: str | None
    """A tuning profile's name or path, the base of every model's."""


@dataclass(frozen=True)
class Point:
    model: str
    label: str
    scenario: str
    result: Result | None
    why: str = ""


def dynamic(kernel: KernelArtifacts) -> bool:
    """The build can switch models at boot (its .config, else its version banner says so)."""
    config = kernel.dir / ".config"
    if config.is_file():
        text = inputfile.read_bytes(config, inputfile.KCONFIG).decode("utf-8", "replace")
        return "CONFIG_PREEMPT_DYNAMIC=y" in text
    return "PREEMPT_DYNAMIC" in (kernel.uts_version or "")


def build_seconds(kernel_dir: Path) -> float | None:
    """The wall time the build took, as its metadata.json recorded it (None: unknown)."""
    path = kernel_dir / "metadata.json"
    try:
        meta = jsonfile.loads(inputfile.read_text(path, inputfile.DOCUMENT), path)
        value = meta.get("build_seconds") if isinstance(meta, dict) else None
        return float(value) if isinstance(value, int | float) else None
    except (InputError, ValueError):
        return None


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


def rows(points: list[Point]) -> list[list[str]]:
    """Seed 004's table: model × load, min/avg/max/p99.99 in µs (plain text cells)."""
    out = []
    for p in points:
        if p.result is None:
            out.append([p.label, p.scenario, "—", "—", "—", "—", "—",
                        f"infrastructure: {p.why}"])
            continue
        t = p.result.totals
        out.append([p.label, p.scenario, str(t.samples), _n(t.min_us), _n(t.avg_us),
                    _n(t.max_us), str(t.p99_99) if t.p99_99 else "—", p.result.status])
    return out


HEADER = ["model", "scenario", "samples", "min µs", "avg µs", "max µs", "p99.99 µs", "status"]


def table(points: list[Point], board: str, virtual: bool) -> str:
    lines = [f"## rtgate sweep: preemption models on {markdown.code(board)}", ""]
    if virtual:
        lines += ["Virtual board: emulator-scale numbers, no real-time claim.", ""]
    lines += ["| " + " | ".join(HEADER) + " |", "|" + " --- |" * len(HEADER)]
    lines += ["| " + " | ".join(markdown.cell(c) for c in row) + " |" for row in rows(points)]
    return "\n".join(lines) + "\n"


def _n(v: float | None) -> str:
    return "—" if v is None else f"{v:.2f}".rstrip("0").rstrip(".")


def _merged(result: Result) -> tuple[dict[int, int], int]:
    merged: dict[int, int] = defaultdict(int)
    limit = 1
    for t in result.threads:
        if t.histogram:
            limit = max(limit, t.histogram.limit_us)
            for latency, count in t.histogram.buckets:
                merged[latency] += count
    return dict(merged), limit


def plots_for(points: list[Point], out: Path) -> list[tuple[str, str]]:
    """One overlay of the models' histograms per scenario, drawn by gnuplot: (scenario, stem)."""
    todo, made = [], []
    for scenario in dict.fromkeys(p.scenario for p in points):
        columns, limit = [], 1
        for p in points:
            if p.scenario == scenario and p.result is not None:
                counts, lim = _merged(p.result)
                if counts:
                    limit = max(limit, lim)
                    columns.append((f"{plots.gp_text(p.label, 20)}: max "
                                    f"{_n(p.result.totals.max_us)} µs", counts))
        if not columns:
            continue
        stem = f"plots/sweep-{safe_name(scenario)}"
        data = Path(f"{stem}.dat")
        xmax = plots.histogram_xmax([c for _, c in columns], limit, [])
        log = plots.log_scale(xmax)
        write_atomic(out / data, plots.histogram_table("latency_us", columns, xmax, log))
        todo.append(plots.Plot("histogram.gp", data, Path(stem),
                               plots.histogram_args(len(columns), xmax, [], log,
                                                    [c for _, c in columns])))
        made.append((scenario, stem))
    plots.render(todo, out)
    return made


def page(points: list[Point], notes: str, figures: list[tuple[str, str]], board: str,
         virtual: bool) -> str:
    """The site page: the table (autoescaped: names come from results) and the plots."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(paths.REPORTS / "templates"),
                             autoescape=True, undefined=jinja2.StrictUndefined)
    return env.get_template("sweep.html").render(
        root="", page="sweep", version=__version__, docs=False, board=board, virtual=virtual,
        header=HEADER, rows=rows(points), notes=notes.strip().splitlines(), figures=figures)


def validate(spec: BoardSpec, s: SweepSettings) -> tuple[Profile | None, list[str]]:
    """The models, the tuning profile, every scenario and the flavors a build would need,
    resolved before the first build or boot (rtgate.errors.raise_found, exit 2); the base
    profile and the scenarios."""
    problems: list[InputError] = []
    unknown = [m for m in s.models if m not in MODELS]
    if unknown:
        problems.append(InputError(f"unknown preemption model(s) {', '.join(unknown)} "
                                   f"(known: {', '.join(MODELS)})"))
    base = None
    try:
        base = load_profile(s.tuning) if s.tuning else None
    except InputError as exc:
        problems.append(exc)
    scenarios = scenarios_of(spec, s.scenarios)
    for scenario in scenarios:
        try:
            load_scenario(scenario)
        except InputError as exc:
            problems.append(exc)
    flavors = {"stock", *(STATIC_FLAVOR[m] for m in s.models if m in MODELS)}
    for flavor in sorted(flavors) if s.kernel.kernels is None else []:
        try:
            flavor_fragment(flavor)
        except InputError as exc:
            problems.append(exc)
    raise_found(problems, "any build or boot")
    return base, scenarios


def sweep(s: SweepSettings) -> int:
    """Every model × scenario measured; sweep.md and sweep.html written; exit 3 when a run is
    incomplete."""
    console = Console(stderr=True)
    spec = load_target_board(s.board, "a sweep needs a board that boots built kernels")
    base, scenarios = validate(spec, s)
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
    for model in s.models:
        if model != "rt" and use_dynamic:
            flavor, label, profile = "stock", f"dynamic-{model}", _with_model(base, model)
        else:
            flavor = label = STATIC_FLAVOR[model]
            profile = base
        k = kernel(flavor)
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
    notes = _build_note(kernels, static, s.kernel.kernels is not None)
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


def _build_note(kernels: dict[str, KernelArtifacts | InfraError],
                static: dict[str, float | None] | None, prebuilt: bool) -> str:
    """The kernels' recorded build times; for a dynamic sweep (``static`` given), the static
    builds it replaced, the time saved counted only from those measured."""
    times = {f: build_seconds(k.dir) for f, k in kernels.items()
             if isinstance(k, KernelArtifacts)}
    shown = ", ".join(f"{f} {t:.0f} s" if t is not None else f"{f} (time unknown)"
                      for f, t in times.items())
    lines = ["", f"Kernels: {shown or 'none'} (wall time recorded when each was built, under "
                 "the host's load and ccache state then; a cache hit reuses it)."]
    if static:
        measured = {f: t for f, t in static.items() if t is not None}
        missing = [f for f, t in static.items() if t is None]
        text = (f"PREEMPT_DYNAMIC: one non-RT build instead of {len(static)} static "
                f"({', '.join(static)}). Build time saved, as measured: "
                + (" + ".join(f"{f} {t:.0f} s" for f, t in measured.items()) or "nothing"))
        if len(measured) > 1:
            text += f" = {sum(measured.values()):.0f} s"
        if missing:
            why = ("prebuilt kernels given: the cache was not looked up" if prebuilt else
                   "no build of the same inputs recorded in the kernel cache")
            text += f"; {', '.join(missing)} not counted ({why})"
        lines.append(text + ".")
    return "\n".join(lines) + "\n"
