"""``infra.json``: what a run that gave no measurement leaves where its ``result.json`` would be.

A run whose kernel under test crashed says so too (``crash``: the line, ``evidence``: the file
beside the record that holds it). A reader believes that claim only when the file there holds
that line (rtgate.board.evidence.confirmed): otherwise it is an infrastructure failure.

The pipeline writes it for every infrastructure failure (no boot, wrong release, timeout), so the
site can say which run failed and why even when no run measured anything — a newcomer's first
demo must end with a page, not with "no result.json". It only ever states a failure: read from
an untrusted artifact it can make a report worse, never better, and it never enters a history.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rtgate import inputfile, jsonfile
from rtgate.board.evidence import confirmed
from rtgate.errors import InputError
from rtgate.gate.verdict import Crash, Infra
from rtgate.jsonfile import write_atomic
from rtgate.layout import INFRA

SCHEMA_ID = "rtgate/infra/v2"
"""v2 adds ``crash`` and ``evidence``; a v1 record reads as before."""


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    schema_: str = Field(SCHEMA_ID, alias="schema", pattern=r"^rtgate/infra/v[12]$")
    board: str = Field(max_length=200)
    flavor: str = Field(max_length=200)
    scenario: str = Field(max_length=200)
    log: str = Field(max_length=4096, description="the console or session log, as recorded")
    message: str = Field(max_length=20000)
    crash: str | None = Field(None, max_length=1000)
    """The kernel under test crashed: the first line that says so."""
    evidence: str | None = Field(None, max_length=4096)
    """The file holding ``crash``, relative to the record's directory."""


def save(infra: Infra, directory: Path) -> Path:
    crash = evidence = None
    if isinstance(infra, Crash) and infra.evidence is not None:
        crash = infra.said
        where = infra.evidence.resolve()
        evidence = str(where.relative_to(directory.resolve())) \
            if where.is_relative_to(directory.resolve()) else str(infra.evidence)
    record = _Record(board=infra.board, flavor=infra.flavor, scenario=infra.scenario,
                     log=str(infra.source), message=infra.message, crash=crash,
                     evidence=evidence)
    return write_atomic(directory / INFRA, record.model_dump_json(by_alias=True, indent=2) + "\n")


def load(path: Path) -> Infra:
    """The failure a record states; anything else is a one-line InputError naming the file."""
    if path.is_symlink():
        raise InputError("a symbolic link, not followed", path=path)
    try:
        record = _Record.model_validate(
            jsonfile.loads(inputfile.read_text(path, inputfile.DOCUMENT), path))
    except ValueError as exc:  # JSON syntax, encoding, or the model (ValidationError)
        first = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else exc
        raise InputError(f"not an rtgate infrastructure record: {first}", path=path) from exc
    if record.crash is None or record.evidence is None:
        return Infra(record.board, record.flavor, record.scenario, Path(record.log),
                     record.message)
    if not confirmed(path.parent, record.crash, record.evidence):
        return Infra(record.board, record.flavor, record.scenario, Path(record.log),
                     f"{record.message} (the record names a crash its evidence "
                     f"{record.evidence} beside it does not show: not believed)")
    return Crash(record.board, record.flavor, record.scenario, Path(record.log), record.message,
                 said=record.crash, evidence=path.parent / record.evidence)


def find(paths: list[Path]) -> list[tuple[Path, Infra]]:
    """Every record below the given directories, in path order."""
    found = sorted({p for given in paths if given.is_dir() for p in given.rglob(INFRA)})
    return [(p, load(p)) for p in found]
