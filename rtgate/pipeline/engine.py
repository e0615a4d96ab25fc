"""``pipeline``: the plan (``plan.validate``) run flavor by flavor — the kernel built or taken,
each scenario measured on the board — then judged: JUnit, summary.md and comparison.md written,
the worst run's exit code. A run the lab could not measure is recorded (infra.json) and the
loop goes on."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from rtgate import paths
from rtgate.board.measure import measure
from rtgate.board.spec import BoardSpec
from rtgate.board.tuning import Profile
from rtgate.breach import BreachTracing
from rtgate.errors import InfraError, KernelCrash
from rtgate.gate import infrarecord, junit, markdown
from rtgate.gate.verdict import Crash, Infra, Ruling, judge, worst
from rtgate.jsonfile import write_atomic
from rtgate.layout import flavor_dir, run_home
from rtgate.pipeline.kernels import kernel_for
from rtgate.pipeline.plan import validate
from rtgate.pipeline.render import comparison
from rtgate.pipeline.settings import PipelineSettings


@dataclass(frozen=True)
class Run:
    flavor: str
    scenario: str
    out: Path
    result: Path | None = None
    infra: InfraError | KernelCrash | None = None
    """Why the run has no result: the lab failed, or the kernel under test crashed."""

def run_all(spec: BoardSpec, flavors: list[str], scenarios: list[tuple[str, str]],
            s: PipelineSettings,
            profile: Profile | None, tracing: BreachTracing | None,
            console: Console) -> list[Run]:
    runs: list[Run] = []
    total = len(flavors) * len(scenarios)
    for flavor in flavors:
        try:
            kernel = kernel_for(spec, flavor, s.kernel, s.out, console)
        except InfraError as exc:
            runs += [Run(flavor, name, run_home(s.out, flavor, name), infra=exc)
                     for _, name in scenarios]
            continue
        for scenario, name in scenarios:
            # A scenario asked for by its file is kept under its own name, as results are.
            out = run_home(s.out, flavor, name)
            console.rule(f"[bold]run {len(runs) + 1}/{total}[/] {spec.name} "
                         f"{flavor or 'running kernel'} {name} ({s.duration} s)")
            try:
                m = measure(spec, kernel, scenario, s.duration, out,
                            flavor=flavor or None, scale=s.scale, profile=profile,
                            follow_up=tracing.follow_up(scenario, s.scale) if tracing else None)
            except (InfraError, KernelCrash) as exc:
                # escape: the message quotes build logs and consoles, whose [..] is not markup.
                what = "the kernel crashed" if isinstance(exc, KernelCrash) else \
                    "infrastructure failure"
                console.print(f"[red]{what}:[/] {escape(exc.oneline())}")
                runs.append(Run(flavor, name, out, infra=exc))
                continue
            runs.append(Run(flavor, name, out, result=m.result_path))
    return runs

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

def pipeline(s: PipelineSettings) -> int:
    """Every flavor × scenario measured and judged; the worst run's exit code."""
    console = Console(stderr=True)
    plan = validate(s)
    if s.dry_run:
        print(plan.describe(s), end="")
        return 0
    spec, thresholds = plan.spec, plan.thresholds
    scenarios = list(dict.fromkeys((r.scenario, r.name) for r in plan.runs))
    runs = run_all(spec, plan.flavors, scenarios, s, plan.profile,
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
