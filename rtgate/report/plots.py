"""Plots by the real gnuplot, from data files rtgate writes, with the templates in ``reports/``.

Each plot is a data file plus a ``call`` of a template that writes ``STEM.svg`` and ``STEM.png``.
A site for a long history has thousands of plots, so they are batched into a few gnuplot
processes (one per core) and a plot whose data file and template did not change is not redrawn.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.progress import MofNCompleteColumn, Progress

from rtgate import paths
from rtgate.errors import InfraError
from rtgate.report import bins
from rtgate.textfmt import fmt

FORMATS = ("svg", "png")
# Plots per gnuplot process: its start-up is paid once per batch, and the progress bar moves.
BATCH = 25
# A histogram reaching beyond this is drawn on log-spaced bins and a log latency axis: 1 µs
# bins over a 20 ms range are a comb of one-bucket spikes.
LOG_ABOVE_US = 1000
# On a log axis the first bin, [0, 1) µs, is drawn from here.
LOG_FLOOR_US = 0.5
# Legend text comes from results (kernel strings are written by anyone): gnuplot only ever gets
# characters that mean nothing to it, inside quotes that cannot be closed.
_UNSAFE = re.compile(r"[^A-Za-z0-9 ._:+()/,=%µ≥-]")


def gp_text(text: str, limit: int = 80) -> str:
    return _UNSAFE.sub("", text)[:limit].strip() or "?"


def gp_word(text: str) -> str:
    """One word of a space-separated template argument."""
    return gp_text(text).replace(" ", "_")


@dataclass(frozen=True)
class Plot:
    template: str
    """A file name in ``reports/``."""
    data: Path
    """The data file, relative to the site root."""
    stem: Path
    """Where the images go, relative to the site root, without extension."""
    args: tuple[str, ...] = ()
    """Further template arguments: numbers and gp_word() lists only."""
    formats: tuple[str, ...] = FORMATS
    """What the template writes: a plot of years of runs is PNG only, its size bounded by its
    pixels, where an SVG grows with every point."""

    def outputs(self, root: Path) -> list[Path]:
        return [root / self.stem.with_suffix(f".{f}") for f in self.formats]

    def stale(self, root: Path) -> bool:
        newest_input = max((root / self.data).stat().st_mtime,
                           (paths.REPORTS / self.template).stat().st_mtime,
                           (paths.REPORTS / "terminals.gp").stat().st_mtime)
        return any(not o.exists() or o.stat().st_mtime < newest_input
                   for o in self.outputs(root))

    def command(self) -> str:
        template = str(paths.REPORTS / self.template).replace("'", "''")
        words = [str(self.data), str(self.stem), *self.args]
        return f"call '{template}' " + " ".join(f"'{w}'" for w in words)


def table(titles: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    head = " ".join(f'"{gp_text(t)}"' for t in titles)
    return head + "\n" + "".join(" ".join(map(str, r)) + "\n" for r in rows)


def log_scale(xmax: int) -> bool:
    return xmax > LOG_ABOVE_US


def histogram_table(x_title: str, columns: Sequence[tuple[str, dict[int, int]]],
                    xmax: int, log: bool) -> str:
    """One row per non-empty bin (1 µs bins, or log-spaced ones: bins.EDGES), each followed by
    a row of zeros where the next bin is empty, so that gnuplot's steps drop to the floor
    between them: the table costs the non-empty buckets, never the range they span."""
    if log:
        columns = [(t, bins.rebin(c.items())) for t, c in columns]
    upper = bins.upper_edge if log else (lambda x: x + 1)
    filled = sorted({x for _, counts in columns for x in counts if x < xmax})
    rows: list[list[object]] = []
    for x, following in zip(filled, [*filled[1:], None], strict=True):
        rows.append([_edge(x, log), *(counts.get(x, 0) for _, counts in columns)])
        if following != upper(x) and upper(x) < xmax:
            rows.append([_edge(upper(x), log), *(0 for _ in columns)])
    return table([x_title, *(t for t, _ in columns)], rows)


def _edge(x: int, log: bool) -> object:
    return LOG_FLOOR_US if log and x == 0 else x


def histogram_xmax(columns: Sequence[dict[int, int]], limit: int,
                   budgets: Sequence[float]) -> int:
    """Up to the highest filled bin and any budget inside the histogram, at most its limit."""
    top = max((max(c) + 1 for c in columns if c), default=limit)
    inside = [math.ceil(b) + 1 for b in budgets if b < limit]
    return max(10, min(limit, max([top, *inside])))


def budget_args(budgets: Sequence[tuple[str, float]]) -> tuple[str, str]:
    return (" ".join(fmt(v) for _, v in budgets), " ".join(gp_word(n) for n, _ in budgets))


def histogram_args(ncolumns: int, xmax: int, budgets: Sequence[tuple[str, float]],
                   log: bool, columns: Sequence[dict[int, int]] = ()) -> tuple[str, ...]:
    """histogram.gp's arguments after its data and stem. A log axis starts a decade below
    the lowest filled bin (at LOG_FLOOR_US at the lowest), not in empty decades."""
    lowest = min((min(c) for c in columns if c), default=0)
    xmin = max(LOG_FLOOR_US, 10 ** math.floor(math.log10(lowest))) if lowest else LOG_FLOOR_US
    return (str(ncolumns), str(xmax), *budget_args(budgets), str(int(log)), fmt(xmin))


def _draw(gnuplot: str, batch: Sequence[Plot], root: Path) -> str | None:
    """One gnuplot process for a batch of plots; the error text when it failed."""
    fd, name = tempfile.mkstemp(dir=root, prefix=".plots-", suffix=".gp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.writelines(p.command() + "\n" for p in batch)
        proc = subprocess.run([gnuplot, Path(name).name], cwd=root, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True, check=False)
    finally:
        Path(name).unlink(missing_ok=True)
    if proc.returncode == 0:
        return None
    # A half-drawn image must not look up to date next time.
    for p in batch:
        for out in p.outputs(root):
            out.unlink(missing_ok=True)
    return " ".join(proc.stderr.split())[-300:]


def render(plots: Sequence[Plot], root: Path, jobs: int | None = None) -> int:
    """Draw the stale plots, one gnuplot per core; returns how many were drawn.

    A cold site for a long history takes minutes, so a progress bar shows on a terminal.
    """
    todo = [p for p in plots if p.stale(root)]
    if not todo:
        return 0
    gnuplot = shutil.which("gnuplot")
    if gnuplot is None:
        raise InfraError("gnuplot not found: install it (scripts/deps.sh core)")
    for p in todo:
        (root / p.stem).parent.mkdir(parents=True, exist_ok=True)
    workers = jobs or os.cpu_count() or 1
    # A handful of plots (one new run) still goes to every core.
    size = max(1, min(BATCH, math.ceil(len(todo) / workers)))
    batches = [todo[i:i + size] for i in range(0, len(todo), size)]
    errors: list[str] = []
    console = Console(stderr=True)
    with Progress(*Progress.get_default_columns(), MofNCompleteColumn(), console=console,
                  transient=True, disable=not console.is_terminal) as bar, \
            ThreadPoolExecutor(max_workers=workers) as pool:
        task = bar.add_task("gnuplot", total=len(todo))
        futures = {pool.submit(_draw, gnuplot, batch, root): len(batch) for batch in batches}
        for future in as_completed(futures):
            if (error := future.result()) is not None:
                errors.append(error)
            bar.advance(task, futures[future])
    if errors:
        raise InfraError(f"gnuplot failed: {errors[0]}", path=root)
    return len(todo)
