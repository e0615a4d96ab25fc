"""Reading back what the gate wrote (a run's or an A/B round's result.json, laid out as
rtgate.layout says), safely, for the publisher and the A/B replay alike: a symbolic link on the
way is refused (an artifact's links point wherever its job chose), a result is taken only for
the board, flavor and scenario it claims to be where the gate writes them, and a missing
result's infra.json is read as infrarecord believes it (a crash only with its evidence)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from rtgate.errors import InputError
from rtgate.gate import infrarecord
from rtgate.gate.thresholds import flavor_of
from rtgate.gate.verdict import Infra
from rtgate.layout import INFRA, RESULT, RESULT_GLOBS, RUNNING
from rtgate.result import Result, load_result

LINKED = "a symbolic link where the gate writes a directory or a result: refused"


def linked(root: Path, path: Path) -> bool:
    """Whether ``path`` or a directory between ``root`` (which is the caller's) and it is a
    symbolic link."""
    chain = [path, *path.relative_to(root).parents]
    return any((root / p).is_symlink() for p in chain if p != Path("."))


def misplaced(result: Result, board: str, flavor: str | None, scenario: str) -> str | None:
    """Why ``result`` is not the one the gate wrote for ``board``/``flavor``/``scenario`` (a
    flavor of None: the board's running kernel, whichever flavor it has), None when it is."""
    claimed = (result.board.name, flavor_of(result), result.scenario)
    if claimed[0] != board or claimed[2] != scenario or (flavor and claimed[1] != flavor):
        return (f"the result claims {'/'.join(claimed)}, where the gate writes "
                f"{board}/{flavor or RUNNING}/{scenario}: refused")
    return None


def result_path(root: Path, home: Path) -> Path:
    """Where the gate writes the result of the run at ``home`` (below ``root``); an InputError
    when a symbolic link is on the way."""
    path = home / RESULT
    if linked(root, path):
        raise InputError(LINKED, path=path)
    return path


@dataclass(frozen=True)
class ReadBack:
    """One run's result.json, read back from where the gate writes it: the result, or why it is
    refused, or the failure recorded in its place."""

    path: Path
    result: Result | None = None
    refused: InputError | None = None
    """The file there is not taken: a symbolic link on the way, a file that does not load as a
    result, or a result claiming another run."""
    said: str = ""
    """``refused`` as the publisher's ruling words it."""
    failed: Infra | None = None
    """No result: the failure its infra.json states (a Crash only with its evidence beside it);
    None when there is no such record, or it does not load (``record_error``)."""
    record_error: InputError | None = None


def read_back(root: Path, home: Path, board: str, flavor: str | None,
              scenario: str) -> ReadBack:
    """The result the gate wrote at ``home`` (below ``root``, the caller's) for ``board``,
    ``flavor`` (None: the running kernel's, whichever it is) and ``scenario``."""
    try:
        path = result_path(root, home)
    except InputError as exc:
        return ReadBack(home / RESULT, refused=exc, said=f"{home / RESULT}: {LINKED}")
    if not path.exists():
        record = home / INFRA
        try:
            failed = infrarecord.load(record) if record.is_file() else None
        except InputError as exc:
            return ReadBack(path, record_error=exc)
        return ReadBack(path, failed=failed)
    try:
        result = load_result(path)
    except InputError as exc:
        return ReadBack(path, refused=exc, said=exc.oneline())
    if why := misplaced(result, board, flavor, scenario):
        return ReadBack(path, refused=InputError(why, path=path), said=f"{path}: {why}")
    return ReadBack(path, result=result)


def results(directory: Path) -> Iterator[Path]:
    """Every result file below ``directory`` where the gate writes them (a run's, an A/B
    round's), in path order; none reached through a symbolic link."""
    for pattern in RESULT_GLOBS:
        for path in sorted(directory.glob(pattern)):
            if path.is_file() and not linked(directory, path):
                yield path
