"""The sweep's outputs: sweep.md (seed 004's table, the kernels' build times), the models'
histograms overlaid (gnuplot) and sweep.html."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import jinja2

from rtgate import __version__, paths
from rtgate.board.base import KernelArtifacts
from rtgate.errors import InfraError
from rtgate.gate import markdown
from rtgate.jsonfile import write_atomic
from rtgate.pipeline.kernels import build_seconds
from rtgate.report import bins, plots
from rtgate.report.summary import safe_name
from rtgate.result import Result


@dataclass(frozen=True)
class Point:
    model: str
    label: str
    scenario: str
    result: Result | None
    why: str = ""


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
            for latency, count in bins.whole_us(t.histogram.buckets).items():
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


def build_note(kernels: dict[str, KernelArtifacts | InfraError],
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
