"""The patch series under test: kernel/patches/series, in quilt order, applied with patch(1)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from rtgate import inputfile
from rtgate.errors import InputError


class SeriesPatch(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    """As written in the series file, relative to the series' directory."""
    sha256: str


class PatchError(InputError):
    """A patch did not apply; `rejected` holds patch(1)'s report and the rejected hunks."""

    def __init__(self, message: str, *, path: Path, rejected: str) -> None:
        super().__init__(message, path=path)
        self.rejected = rejected


def read_series(series: Path) -> list[SeriesPatch]:
    """Patches in application order. Lines are `NAME` with `#` comments, as quilt writes them."""
    lines = inputfile.read_text(series, inputfile.SERIES).splitlines()
    patches = []
    for number, raw in enumerate(lines, start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if len(line.split()) != 1:
            raise InputError(f"line {number}: expected one patch name per line (quilt options "
                             f"such as -p are not supported; patches apply with -p1): {line!r}",
                             path=series)
        path = _inside(series, number, line)
        if not path.is_file():
            raise InputError(f"line {number}: patch {line} not found", path=series)
        with inputfile.open_regular(path, inputfile.RAW) as fh:  # hashed as it streams
            digest = hashlib.file_digest(fh, "sha256").hexdigest()
        patches.append(SeriesPatch(name=line, sha256=digest))
    return patches


def _inside(series: Path, number: int, name: str) -> Path:
    """The patch file `name` names, which must lie below the series' directory: a pull request
    writes the series, and the plan hashes, the build applies and bisect copies what it names."""
    if Path(name).is_absolute() or ".." in Path(name).parts:
        raise InputError(f"line {number}: patch {name!r} is outside the series' directory "
                         f"(names are relative, without '..')", path=series)
    path = series.parent / name
    # A symlink below the directory may still point out of it.
    if path.exists() and not path.resolve().is_relative_to(series.parent.resolve()):
        raise InputError(f"line {number}: patch {name!r} resolves outside the series' "
                         f"directory (a symbolic link)", path=series)
    return path


def write_series(into: Path, patches: list[tuple[str, Path]]) -> Path:
    """A series file in `into` of (name, source file) pairs, each copied beside it: a build reads
    patches beside its series. Returns the series file."""
    into.mkdir(parents=True, exist_ok=True)
    for name, source in patches:
        (into / name).parent.mkdir(parents=True, exist_ok=True)
        (into / name).write_bytes(source.read_bytes())
    (into / "series").write_text("".join(f"{name}\n" for name, _ in patches))
    return into / "series"


def patch_command(patch_file: Path, tree: Path, rejects: Path) -> list[str]:
    # --forward: an already-applied patch is a failure, not a silent revert.
    return ["patch", "-p1", "--forward", "--batch", "--no-backup-if-mismatch",
            "-d", str(tree), "-i", str(patch_file), "--reject-file", str(rejects)]
