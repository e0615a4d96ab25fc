"""The build plan: every input of a kernel build, resolved, and a cache key over all of them."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from rtgate import paths
from rtgate.errors import InputError
from rtgate.kernel.patches import SeriesPatch, read_series
from rtgate.kernel.runtime import Runtime
from rtgate.kernel.source import Source, resolve, sha256_file
from rtgate.kernel.targets import KernelTarget, load_target

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


class BuildPlan(BaseModel):
    model_config = ConfigDict(frozen=True, populate_by_name=True)

    schema_: str = Field(PLAN_SCHEMA, alias="schema")
    target: KernelTarget = Field(alias="board")
    """Written as ``board``, the key of kernel-plan/v1 and of every metadata.json."""
    flavor: str
    source: Source
    base_config: str
    fragments: list[Fragment]
    """In merge order: target fragments, the flavor, then extra fragments; a later one wins."""
    series: str | None
    patches: list[SeriesPatch]
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


def toolchain(target: KernelTarget, runtime: Runtime) -> Toolchain:
    def first_line(tool: str) -> str:
        return runtime.capture([f"{target.cross_compile}{tool}", "--version"]).splitlines()[0]
    return Toolchain(cross_compile=target.cross_compile, gcc=first_line("gcc"),
                     binutils=first_line("ld"))


def cache_key(target: KernelTarget, flavor: str, source: Source, fragments: list[Fragment],
              patches: list[SeriesPatch], chain: Toolchain) -> str:
    # Paths are left out: the same inputs in another checkout or tarball location are the same
    # build. Contents (sha256) and versions are in. The target's key is "board", as it was when
    # the cache was filled: another word would miss every entry.
    inputs = {
        "recipe": RECIPE,
        "board": target.model_dump(),
        "flavor": flavor,
        "source": source.identity(),
        "fragments": [(f.name, f.sha256) for f in fragments],
        "patches": [(p.name, p.sha256) for p in patches],
        "toolchain": chain.model_dump(),
    }
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()


def make_plan(target_name: str, flavor: str, runtime: Runtime, *, source: str | None = None,
              series: Path | None = None, extra_fragments: list[Path] | None = None) -> BuildPlan:
    """Resolve every input. series=None takes kernel/patches/series when it exists."""
    target = load_target(target_name)
    src = resolve(source or target.default_source)
    fragment_paths = [CONFIGS_DIR / name for name in target.fragments]
    fragment_paths += [flavor_fragment(flavor), *(extra_fragments or [])]
    fragments = [_fragment(p) for p in fragment_paths]
    if series is None and DEFAULT_SERIES.is_file():
        series = DEFAULT_SERIES
    patches = read_series(series) if series is not None else []
    chain = toolchain(target, runtime)
    return BuildPlan(target=target, flavor=flavor, source=src, base_config=target.base_config,
                fragments=fragments, series=None if series is None else str(series.resolve()),
                patches=patches, toolchain=chain,
                cache_key=cache_key(target, flavor, src, fragments, patches, chain))
