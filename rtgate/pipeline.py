"""`rtgate pipeline`: build → deploy → boot → bench → restore → check, for every flavor × scenario.

It is a thin loop over the stages: the kernel stage builds (or takes from the cache, or from
``--kernels``), the board stage measures, the gate judges. An infrastructure failure of one run
(no boot, wrong release, timeout) is recorded and the loop goes on, so one stuck emulator does
not hide the verdicts of the other runs; it still makes the whole pipeline exit 3.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from rtgate import paths
from rtgate.board.base import KernelArtifacts
from rtgate.board.measure import measure
from rtgate.board.spec import BoardSpec, QemuOptions, flavors_of, load_board, scenarios_of
from rtgate.board.tuning import Profile, load_profile
from rtgate.cli.args import breach_threshold, comma_list, duration, scale
from rtgate.errors import InfraError, InputError
from rtgate.gate import infrarecord, junit, markdown
from rtgate.gate.thresholds import flavor_of, load_thresholds
from rtgate.gate.verdict import Infra, Ruling, judge, worst
from rtgate.jsonfile import write_atomic
from rtgate.layout import flavor_dir, run_home
from rtgate.result import Result
from rtgate.trace import breach
from rtgate.trace.breach import BreachTracing

EPILOG = """\
For each flavor the kernel is built for the board (a cache hit when nothing changed) unless
--kernels DIR holds DIR/<flavor>/ from `rtgate kernel build --out`; then for each scenario the
board deploys it, boots it (the running release must be the built one), measures, and restores
its known-good kernel. The `local` board measures the running kernel: give at most one flavor,
a label for the results.

Outputs in OUT: <flavor>/<scenario>/result.json (+ raw/, console.log) — or infra.json, what
failed, when the lab could not measure —, kernels/<flavor>/,
junit.xml, summary.md (for $GITHUB_STEP_SUMMARY), comparison.md (flavors side by side: avg,
max and their ratio to RT — the Pi 5 paper's "294x" headline).

exit codes (the worst run decides: 2, then 3, then 1):
  0  every run complete and within budget
  1  a budget was exceeded: a latency regression
  2  usage or input error (unknown board/scenario/flavor, bad patch series, no budget matches)
  3  a run is incomplete or the infrastructure failed (kernel build failed, board did not boot,
     wrong release, timeout, partial/degraded measurement): never a pass, not a latency verdict
"""


@dataclass(frozen=True)
class Run:
    flavor: str
    scenario: str
    out: Path
    result: Path | None = None
    infra: InfraError | None = None


def kernel_for(spec: BoardSpec, flavor: str, args: argparse.Namespace, out: Path,
            console: Console) -> KernelArtifacts | None:
    if not spec.kernel_board:
        return None
    if args.kernels:
        return KernelArtifacts.from_dir(args.kernels / flavor)
    from rtgate.kernel.build import build  # the kernel stage pulls in its toolchain checks

    console.rule(f"[bold]build[/] {spec.kernel_board} {flavor}")
    built = build(spec.kernel_board, flavor, source=args.source, series=args.patches,
                  runtime=args.runtime, out=out / "kernels" / flavor)
    console.print(f"kernel {built.kernel_release} "
                  f"({'cache hit' if built.cache_hit else 'built'}) in {built.out}")
    return KernelArtifacts.from_dir(built.out)


def tuning_profile(spec: BoardSpec, args: argparse.Namespace) -> Profile | None:
    """``--tuning``, refused on the local board unless the user allows changing the host."""
    if not args.tuning:
        return None
    profile = load_profile(args.tuning)
    if spec.driver == "local" and (profile.boot or profile.runtime) \
            and not args.allow_host_changes:
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


def run_all(spec: BoardSpec, flavors: list[str], scenarios: list[str],
            args: argparse.Namespace, console: Console) -> list[Run]:
    runs: list[Run] = []
    total = len(flavors) * len(scenarios)
    for flavor in flavors:
        try:
            kernel = kernel_for(spec, flavor, args, args.out, console)
        except InfraError as exc:
            runs += [Run(flavor, s, args.out / flavor / s, infra=exc) for s in scenarios]
            continue
        for scenario in scenarios:
            out = run_home(args.out, flavor, scenario)
            console.rule(f"[bold]run {len(runs) + 1}/{total}[/] {spec.name} "
                         f"{flavor or 'running kernel'} {scenario} ({args.duration} s)")
            try:
                m = measure(spec, kernel, scenario, args.duration, out,
                            flavor=flavor or None, scale=args.scale, profile=args.profile,
                            follow_up=args.breach_tracing.follow_up(scenario, args.scale)
                            if args.breach_tracing else None)
            except InfraError as exc:
                # escape: the message quotes build logs and consoles, whose [..] is not markup.
                console.print(f"[red]infrastructure failure:[/] {escape(exc.oneline())}")
                runs.append(Run(flavor, scenario, out, infra=exc))
                continue
            runs.append(Run(flavor, scenario, out, result=m.result_path))
    return runs


def _ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.1f}x" if a is not None and b else "—"


def _versus(stock: float | None, rt: float | None) -> str:
    """RT against stock in words that stay true whichever is larger: "2.2x shorter than",
    "2.5x longer than" (a loaded emulator can make RT the slower one)."""
    if stock is None or rt is None or not stock or not rt:
        return "— (not measured) against"
    if stock >= rt:
        return f"{stock / rt:.1f}x shorter than"
    return f"{rt / stock:.1f}x longer than"


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
                          f"{_versus(stock.totals.max_us, rt.totals.max_us)} stock's, "
                          f"its average {_versus(stock.totals.avg_us, rt.totals.avg_us)} "
                          f"(the Pi 5 paper measured 294x and 2.49x shorter under all-in load)."]
        lines.append("")
    return "\n".join(lines)


def handler(args: argparse.Namespace) -> int:
    console = Console(stderr=True)
    spec = load_board(args.board)
    flavors = flavors_of(spec, args.flavors)
    thresholds = load_thresholds(args.thresholds)  # a bad budget file fails before any build
    args.profile = tuning_profile(spec, args)
    spec = with_kernel_args(spec, args.kernel_arg)
    args.breach_tracing = (BreachTracing(args.trace_on_breach, args.trace_cap, thresholds)
                           if args.trace_on_breach is not None else None)
    runs = run_all(spec, flavors, scenarios_of(spec, args.scenarios), args, console)

    outcomes: list[Ruling] = judge([r.result for r in runs if r.result], thresholds,
                                    allow_unbudgeted=args.allow_unbudgeted)
    failures = [(r.out, Infra(spec.name, flavor_dir(r.flavor), r.scenario,
                              Path(r.infra.path) if r.infra.path else r.out, r.infra.oneline()))
                for r in runs if r.infra]
    for directory, infra in failures:
        infrarecord.save(infra, directory)  # for `rtgate report`: a site even when all failed
    outcomes += [infra for _, infra in failures]
    write_atomic(args.out / "junit.xml", junit.render(outcomes))
    write_atomic(args.out / "summary.md", markdown.render(outcomes))
    text = comparison([o.result for o in outcomes if o.result is not None])
    write_atomic(args.out / "comparison.md", text)

    console.rule("[bold]verdict")
    # The tables are the command's output: plain stdout, unwrapped, fit to paste.
    print(markdown.render(outcomes))
    print(text)
    for name in ("junit.xml", "summary.md", "comparison.md"):
        print(f"{name}: {args.out / name}")
    return int(worst([o.exit for o in outcomes]))



def add_tuning_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tuning", metavar="PROFILE",
                   help="tuning profile from bench/tuning/ (none, isolated) or a .yml path: "
                        "applied on the board, read back after boot and at the end (a setting "
                        "not in effect makes the run incomplete, exit 3), recorded in the result")
    p.add_argument("--allow-host-changes", action="store_true",
                   help="the local board may apply a profile's run-time writes to this machine "
                        "(undone at the end of the run, or at the next start after a crash)")


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser(
        "pipeline", help="build, boot, measure and gate every flavor × scenario on a board",
        description="The whole gate on one board: kernel builds, boots, measurements under "
                    "load, budgets, and a comparison of the flavors.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--board", required=True, help="board name from bench/boards/")
    p.add_argument("--flavors", type=comma_list, help="comma-separated (default for kernel boards: "
                   "stock,rt)")
    p.add_argument("--scenarios", type=comma_list,
                   help="comma-separated, e.g. all-in; `board` (the default) stands for the "
                        "board's own `scenarios`, e.g. idle,board")
    p.add_argument("--duration", type=duration, required=True, help="per run, e.g. 30s, 1h")
    p.add_argument("--out", type=Path, required=True, help="output directory")
    p.add_argument("--kernels", type=Path, metavar="DIR",
                   help="prebuilt kernels in DIR/<flavor>/ (e.g. CI artifacts): no build")
    p.add_argument("--source", help="kernel source: git:URL@REF | tar:PATH | debian:PACKAGE")
    p.add_argument("--patches", type=Path, metavar="SERIES", help="quilt series file")
    p.add_argument("--runtime", choices=["host", "docker"], default="host",
                   help="where the kernel toolchain runs")
    p.add_argument("--scale", type=scale, default=None, help="multiply load instances/streams")
    p.add_argument("--thresholds", type=Path, default=paths.THRESHOLDS, metavar="FILE")
    add_tuning_arguments(p)
    p.add_argument("--kernel-arg", action="append", default=[], metavar="WORD",
                   help="add WORD to the booted kernel's command line (qemu-arm64), e.g. "
                        "rtgate_planted.length_us=300000 (repeatable)")
    p.add_argument("--trace-on-breach", type=breach_threshold(breach.BUDGET), nargs="?",
                   const=breach.BUDGET, metavar="US",
                   help="after a run whose max exceeds US µs (default: the budget's max_us), "
                        "a follow-up run with rtla timerlat armed to stop there; its analysis "
                        "goes into the result, the JUnit failure and the run page")
    p.add_argument("--trace-cap", type=duration, default=breach.DEFAULT_CAP_S,
                   metavar="DURATION", help="time cap of the follow-up trace run (default 60s)")
    p.add_argument("--allow-unbudgeted", action="store_true",
                   help="a result no budget matches is reported as skipped, not an error")
    p.set_defaults(func=handler)

