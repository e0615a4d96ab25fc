"""Find results on disk together with the raw tool outputs that belong to them.

A run is a ``result.json`` plus the raw tool outputs named in its ``sources`` (paths relative to
the result's directory). Nothing is reached through a symbolic link: the site publishes these
files, and a link planted next to a result would publish whatever it points at.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from rtgate import inputfile
from rtgate.bisect import doc as bisect_doc
from rtgate.errors import InputError
from rtgate.layout import INFRA, RAW, RESULT
from rtgate.report.provenance import Publication
from rtgate.report.summary import RunSummary
from rtgate.result import Result, load_result

SYMLINK = "a symbolic link, not followed"


@dataclass(frozen=True)
class RunFiles:
    result: Result
    result_path: Path
    raw: list[Path] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    """One note per file named in ``sources`` and not taken: ``PATH: why``."""
    publication: Publication | None = None
    """Its entry in the history, for a run loaded from one."""

    @property
    def summary(self) -> RunSummary:
        return RunSummary.of(self.result, self.publication)


def _below(home: Path, recorded: Path) -> Path | None:
    """``recorded`` relative to ``home`` when it lies below it (bench records absolute paths)."""
    if not recorded.is_absolute():
        return recorded
    for base in (home.absolute(), home.resolve()):
        if recorded.is_relative_to(base):
            return recorded.relative_to(base)
    return None


def _first_link(home: Path, relative: Path) -> Path | None:
    here = home
    for part in relative.parts:
        here = here / part
        if here.is_symlink():
            return here
    return None


def source_path(result_path: Path, recorded: str, skipped: list[str],
                elsewhere: Path | None = None) -> Path | None:
    """Where a raw file named in ``sources`` is: as recorded, or ``elsewhere`` below the result's
    directory (by default where a history copy puts it, ``raw/NAME``).

    Only regular files inside the result's directory, reached through no symbolic link, count:
    a result naming ``/etc/shadow`` or a link to it must not get it published. A link on the
    way is noted in ``skipped``.
    """
    home = result_path.parent
    recorded_path = Path(recorded)
    for relative in (_below(home, recorded_path), elsewhere or Path(RAW) / recorded_path.name):
        if relative is None or ".." in relative.parts:
            continue
        if (link := _first_link(home, relative)) is not None:
            skipped.append(f"{link}: {SYMLINK}")
            return None
        if (home / relative).is_file():
            return home / relative
    return None


def load_run(result_path: Path,
             reader: Callable[[Path], Result] = load_result) -> RunFiles:
    if result_path.is_symlink():
        raise InputError(SYMLINK, path=result_path)
    result = reader(result_path)
    skipped: list[str] = []
    named = [s.path for s in result.sources] + (result.trace.raw if result.trace else [])
    raw = [p for name in named if (p := source_path(result_path, name, skipped)) is not None]
    # Two sources behind one linked directory make one note.
    return RunFiles(result, result_path, raw, list(dict.fromkeys(skipped)))


def collect(paths: list[str | Path]) -> list[RunFiles]:
    """Every result named, or found below a named directory (``result.json``,
    ``NAME.result.json``); a path with none, or a result that is a symbolic link, is an input
    error."""
    found: list[Path] = []
    for given in map(Path, paths):
        if given.is_dir():
            hits = sorted(p for p in given.rglob(f"*{RESULT}")
                          if p.name == RESULT or p.name.endswith(f".{RESULT}"))
            # A directory of runs that all failed in the lab is not an empty input: its
            # infra.json records are what the site shows then; nor is a bisect's.
            if not hits and not any(given.rglob(INFRA)) and not any(
                    given.rglob(bisect_doc.NAME)):
                raise InputError(f"no {RESULT} below this directory", path=given)
            found += hits
        elif given.is_file():
            if given.name != bisect_doc.NAME:  # a bisect's page, not a run
                found.append(given)
        else:
            if given.exists():  # a FIFO or a device: refused saying which, never opened
                inputfile.check_regular(given, inputfile.RESULT)
            raise InputError("no such file or directory", path=given)
    runs: dict[str, RunFiles] = {}
    for path in found:
        run = load_run(path)
        # The same run given twice (a file and its directory) is one run, not a duplicate row.
        runs.setdefault(run.result.run_id, run)
    return list(runs.values())
