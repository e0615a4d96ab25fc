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
from dataclasses import dataclass
from pathlib import Path

from rtgate import paths
from rtgate.errors import InfraError
from rtgate.gate.verdict import fmt

FORMATS = ("svg", "png")
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

    def outputs(self, root: Path) -> list[Path]:
        return [root / self.stem.with_suffix(f".{f}") for f in FORMATS]

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


def histogram_table(x_title: str, columns: Sequence[tuple[str, dict[int, int]]],
                    xmax: int) -> str:
    """Dense 1 µs bins 0..xmax-1, one count column per series (sparse input, zeros filled)."""
    rows = [[x, *(counts.get(x, 0) for _, counts in columns)] for x in range(xmax)]
    return table([x_title, *(t for t, _ in columns)], rows)


def histogram_xmax(columns: Sequence[dict[int, int]], limit: int,
                   budgets: Sequence[float]) -> int:
    """Up to the highest filled bin and any budget inside the histogram, at most its limit."""
    top = max((max(c) + 1 for c in columns if c), default=limit)
    inside = [math.ceil(b) + 1 for b in budgets if b < limit]
    return max(10, min(limit, max([top, *inside])))


def budget_args(budgets: Sequence[tuple[str, float]]) -> tuple[str, str]:
    return (" ".join(fmt(v) for _, v in budgets), " ".join(gp_word(n) for n, _ in budgets))


def render(plots: Sequence[Plot], root: Path, jobs: int | None = None) -> int:
    """Draw the stale plots; returns how many were drawn."""
    todo = [p for p in plots if p.stale(root)]
    if not todo:
        return 0
    gnuplot = shutil.which("gnuplot")
    if gnuplot is None:
        raise InfraError("gnuplot not found: install it (scripts/deps.sh core)")
    for p in todo:
        (root / p.stem).parent.mkdir(parents=True, exist_ok=True)
    jobs = max(1, min(jobs or os.cpu_count() or 1, math.ceil(len(todo) / 10)))
    chunks = [todo[i::jobs] for i in range(jobs)]
    scripts: list[Path] = []
    try:
        for chunk in chunks:
            fd, name = tempfile.mkstemp(dir=root, prefix=".plots-", suffix=".gp")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.writelines(p.command() + "\n" for p in chunk)
            scripts.append(Path(name))
        procs = [subprocess.Popen([gnuplot, s.name], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, cwd=root, text=True) for s in scripts]
        errors = [proc.communicate()[1] for proc in procs]
    finally:
        for script in scripts:
            script.unlink(missing_ok=True)
    failed = [(chunk, err) for chunk, proc, err in zip(chunks, procs, errors, strict=True)
              if proc.returncode != 0]
    for chunk, _ in failed:
        # A half-drawn image must not look up to date next time.
        for p in chunk:
            for out in p.outputs(root):
                out.unlink(missing_ok=True)
    if failed:
        raise InfraError(f"gnuplot failed: {' '.join(failed[0][1].split())[-300:]}", path=root)
    return len(todo)
