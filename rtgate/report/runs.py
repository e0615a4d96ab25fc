"""Find results on disk together with the files that belong to them.

A run is a ``result.json`` plus what lies next to it: the JUnit report of `rtgate check` and the
raw tool outputs named in its ``sources`` (paths relative to the result's directory).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from rtgate.errors import InputError
from rtgate.report.summary import RunSummary
from rtgate.result import Result, load_result

RESULT_NAME = "result.json"
JUNIT_NAMES = ("junit.xml",)
RAW = "raw"


@dataclass(frozen=True)
class RunFiles:
    result: Result
    result_path: Path
    junit: Path | None = None
    raw: list[Path] = field(default_factory=list)

    @property
    def summary(self) -> RunSummary:
        return RunSummary.of(self.result)


def source_path(result_path: Path, recorded: str) -> Path | None:
    """Where a raw file named in ``sources`` is: as recorded, or where a history copy put it.

    Only files inside the result's directory count: the site publishes them, and a result naming
    ``/etc/shadow`` must not get it published.
    """
    home = result_path.parent.resolve()
    path = Path(recorded)
    for candidate in (home / path, home / RAW / path.name):
        if candidate.resolve().is_relative_to(home) and candidate.is_file():
            return candidate
    return None


def junit_for(result_path: Path, top: Path | None = None) -> Path | None:
    """The JUnit beside the result or, up to ``top``, in a directory above it: `rtgate check`
    writes one beside a bench result, `rtgate pipeline` one for all its results at the top."""
    here = result_path.parent
    stop = (top or here).resolve()
    while True:
        for name in JUNIT_NAMES:
            if (here / name).is_file():
                return here / name
        if here.resolve() == stop or here.resolve() == here.resolve().parent:
            return None
        here = here.parent


def load_run(result_path: Path, top: Path | None = None) -> RunFiles:
    result = load_result(result_path)
    raw = [p for s in result.sources if (p := source_path(result_path, s.path)) is not None]
    return RunFiles(result, result_path, junit_for(result_path, top), raw)


def collect(paths: list[str | Path]) -> list[RunFiles]:
    """Every result named, or found below a named directory (``result.json``,
    ``NAME.result.json``); a path with none is an input error."""
    found: list[tuple[Path, Path | None]] = []
    for given in map(Path, paths):
        if given.is_dir():
            hits = sorted(p for p in given.rglob(f"*{RESULT_NAME}")
                          if p.name == RESULT_NAME or p.name.endswith(f".{RESULT_NAME}"))
            if not hits:
                raise InputError(f"no {RESULT_NAME} below this directory", path=given)
            found += [(hit, given) for hit in hits]
        elif given.is_file():
            found.append((given, None))
        else:
            raise InputError("no such file or directory", path=given)
    runs: dict[str, RunFiles] = {}
    for path, top in found:
        run = load_run(path, top)
        # The same run given twice (a file and its directory) is one run, not a duplicate row.
        runs.setdefault(run.result.run_id, run)
    return list(runs.values())
