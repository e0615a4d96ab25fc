"""A kernel build's record, kept in a run's directory: what a publisher needs of the build.

The kernel images stay out of a gate's artifact (keep-results leaves ``kernels/`` out: they are
kernels.yml's artifacts or the controller's cache). What a report of the run needs of the build
(source, patch series, configuration, compiler, durations, its .config and log) is kept beside
the results as ``builds/FLAVOR/`` (``metadata.json``, ``.config``, ``build.log``). A publisher
reads it as untrusted data: a job that ran a pull request's kernel build wrote it, so every field
is checked against a pattern and a length before it is used, and the files are read bounded.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from rtgate import inputfile, jsonfile
from rtgate.errors import InputError

BUILDS = "builds"
METADATA = "metadata.json"
CONFIG = ".config"
LOG = "build.log"
KEPT = (METADATA, CONFIG, LOG)
# A kernel build log (kbuild at V=0, ccache) is a few MB at most; a larger one is cut to its
# last LOG_TAIL bytes, where the error is.
LOG_TAIL = 4 * 1024 * 1024

Sha256 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
Word = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._+-]*$", max_length=64)]
Text = Annotated[str, StringConstraints(max_length=300)]


class _Loose(BaseModel):
    # metadata.json holds more than a report needs; the rest is ignored, never trusted.
    model_config = ConfigDict(extra="ignore", frozen=True)


class RecordedSource(_Loose):
    kind: Literal["git", "tar", "debian"]
    location: Annotated[str, StringConstraints(max_length=500)]
    ref: Annotated[str, StringConstraints(max_length=200)]


class RecordedPatch(_Loose):
    name: Annotated[str, StringConstraints(max_length=200)]
    sha256: Sha256


class RecordedFragment(_Loose):
    name: Word


class RecordedTarget(_Loose):
    name: Word
    arch: Annotated[str, StringConstraints(pattern=r"^[a-z0-9_]+$", max_length=32)]


class RecordedToolchain(_Loose):
    gcc: Text
    binutils: Text = ""


class RecordedPlan(_Loose):
    target: RecordedTarget = Field(alias="board")
    flavor: Word
    source: RecordedSource
    base_config: Word
    fragments: list[RecordedFragment] = Field(max_length=64)
    patches: list[RecordedPatch] = Field(max_length=1000)
    toolchain: RecordedToolchain
    cache_key: Sha256


class BuildRecord(_Loose):
    """The fields of a build's metadata.json (rtgate.kernel.build) a report uses."""

    plan: RecordedPlan
    kernel_release: Annotated[str, StringConstraints(max_length=200)]
    runtime: Word | None = None
    built_at: Annotated[str, StringConstraints(max_length=40)] | None = None
    build_seconds: float | None = Field(None, ge=0, le=7 * 24 * 3600)
    cache_hit: bool | None = None

    @property
    def patchset_hash(self) -> str:
        """KCIDB's ``patchset_hash`` (kcidb-io schema v4.0 on, checkout.patchset_hash): sha256
        over the newline-terminated sha256s of the patches in order, ``sha256sum *.patch | cut
        -c-64 | sha256sum``; the empty string for no patches."""
        return patchset_hash([p.sha256 for p in self.plan.patches])


def patchset_hash(sha256s: list[str]) -> str:
    if not sha256s:
        return ""
    return hashlib.sha256("".join(f"{h}\n" for h in sha256s).encode()).hexdigest()


def keep(kernel_dir: Path, dest: Path) -> None:
    """Copy a build's metadata.json, .config and build.log (those it has) to dest: what stays
    in the run's directory once the kernels are left out of its artifact."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in KEPT:
        src = kernel_dir / name
        if src.is_file() and not src.is_symlink():
            shutil.copyfile(src, dest / name)


def load(directory: Path) -> BuildRecord:
    """A kept build's record; InputError naming the file when it is missing or malformed."""
    path = directory / METADATA
    if path.is_symlink():
        raise InputError("a symbolic link where a build record belongs: refused", path=path)
    data, _ = jsonfile.read(path, inputfile.DOCUMENT)
    try:
        return BuildRecord.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "document"
        raise InputError(f"not a build record: {where}: {first['msg']}", path=path) from exc
