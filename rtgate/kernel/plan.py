"""The build plan: every input of a kernel build, resolved, and a cache key over all of them."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from rtgate import paths
from rtgate.errors import InputError
from rtgate.kernel.boards import KernelBoard, load_board
from rtgate.kernel.patches import Patch, read_series
from rtgate.kernel.runtime import Runtime
from rtgate.kernel.source import Source, resolve, sha256_file

PLAN_SCHEMA = "rtgate/kernel-plan/v1"
CONFIGS_DIR = paths.KERNEL / "configs"
DEFAULT_SERIES = paths.KERNEL / "patches" / "series"
# Bump when the build steps change in a way that changes outputs: old cache entries then miss.
RECIPE = 1


class Fragment(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    path: str
    sha256: str


class Toolchain(BaseModel):
    model_config = ConfigDict(frozen=True)

    cross_compile: str
    gcc: str
    binutils: str


class Plan(BaseModel):
    model_config = ConfigDict(frozen=True, populate_by_name=True)

    schema_: str = Field(PLAN_SCHEMA, alias="schema")
    board: KernelBoard
    flavor: str
    source: Source
    base_config: str
    fragments: list[Fragment]
    """In merge order: board fragments, the flavor, then extra fragments; a later one wins."""
    series: str | None
    patches: list[Patch]
    toolchain: Toolchain
    cache_key: str

    def to_json(self) -> str:
        return self.model_dump_json(indent=2, by_alias=True)


def flavor_fragment(flavor: str) -> Path:
    path = CONFIGS_DIR / f"{flavor}.config"
    if not path.is_file():
        known = sorted(p.stem for p in CONFIGS_DIR.glob("*.config"))
        raise InputError(f"unknown flavor {flavor!r}: no {path.name} (fragments: "
                         f"{', '.join(known)})", path=CONFIGS_DIR)
    return path


def _fragment(path: Path) -> Fragment:
    if not path.is_file():
        raise InputError("config fragment not found", path=path)
    return Fragment(name=path.name, path=str(path.resolve()), sha256=sha256_file(path))


def toolchain(board: KernelBoard, runtime: Runtime) -> Toolchain:
    def first_line(tool: str) -> str:
        return runtime.capture([f"{board.cross_compile}{tool}", "--version"]).splitlines()[0]
    return Toolchain(cross_compile=board.cross_compile, gcc=first_line("gcc"),
                     binutils=first_line("ld"))


def cache_key(board: KernelBoard, flavor: str, source: Source, fragments: list[Fragment],
              patches: list[Patch], chain: Toolchain) -> str:
    # Paths are left out: the same inputs in another checkout or tarball location are the same
    # build. Contents (sha256) and versions are in.
    inputs = {
        "recipe": RECIPE,
        "board": board.model_dump(),
        "flavor": flavor,
        "source": source.identity(),
        "fragments": [(f.name, f.sha256) for f in fragments],
        "patches": [(p.name, p.sha256) for p in patches],
        "toolchain": chain.model_dump(),
    }
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()


def make_plan(board_name: str, flavor: str, runtime: Runtime, *, source: str | None = None,
              series: Path | None = None, extra_fragments: list[Path] | None = None) -> Plan:
    """Resolve every input. series=None takes kernel/patches/series when it exists."""
    board = load_board(board_name)
    src = resolve(source or board.default_source)
    fragment_paths = [CONFIGS_DIR / name for name in board.fragments]
    fragment_paths += [flavor_fragment(flavor), *(extra_fragments or [])]
    fragments = [_fragment(p) for p in fragment_paths]
    if series is None and DEFAULT_SERIES.is_file():
        series = DEFAULT_SERIES
    patches = read_series(series) if series is not None else []
    chain = toolchain(board, runtime)
    return Plan(board=board, flavor=flavor, source=src, base_config=board.base_config,
                fragments=fragments, series=None if series is None else str(series.resolve()),
                patches=patches, toolchain=chain,
                cache_key=cache_key(board, flavor, src, fragments, patches, chain))
