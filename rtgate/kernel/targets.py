"""Kernel targets: what to build for a board is data in kernel/targets/<name>.yml.

A lab board (bench/boards/) names the target its kernels are built for (``kernel_target``). The
command line and the build plan still say "board" for a target (``rtgate kernel build --board``,
the plan's ``board`` key, "unknown kernel board"): those words are the interface, unchanged.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from rtgate import paths
from rtgate.errors import InputError
from rtgate.yamlsource import load_named

TARGETS_DIR = paths.KERNEL / "targets"


class KernelTarget(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    arch: str
    cross_compile: str
    base_config: str
    """A make target producing the starting .config (tinyconfig, bcm2712_defconfig, ...)."""
    fragments: list[str] = []
    """Target fragments in kernel/configs/, merged before the flavor's fragment."""
    image: str
    """The image kbuild produces, relative to the build directory."""
    image_name: str
    """The file name the board's boot loader expects."""
    dtbs: bool = False
    modules: bool = False
    default_source: str


def target_names() -> list[str]:
    return sorted(p.stem for p in TARGETS_DIR.glob("*.yml"))


def load_target(name: str) -> KernelTarget:
    path = TARGETS_DIR / f"{name}.yml"
    if not path.is_file():
        raise InputError(f"unknown kernel board {name!r} (known: {', '.join(target_names())})",
                         path=TARGETS_DIR)
    return load_named(path, KernelTarget, "kernel board")
