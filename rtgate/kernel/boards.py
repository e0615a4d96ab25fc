"""Kernel build boards: what to build for a board is data in kernel/boards/<name>.yml."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from rtgate import paths
from rtgate.errors import InputError
from rtgate.yamlsource import load_named

BOARDS_DIR = paths.KERNEL / "boards"


class KernelBoard(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    arch: str
    cross_compile: str
    base_config: str
    """A make target producing the starting .config (tinyconfig, bcm2712_defconfig, ...)."""
    fragments: list[str] = []
    """Board fragments in kernel/configs/, merged before the flavor's fragment."""
    image: str
    """The image kbuild produces, relative to the build directory."""
    image_name: str
    """The file name the board's boot loader expects."""
    dtbs: bool = False
    modules: bool = False
    default_source: str


def board_names() -> list[str]:
    return sorted(p.stem for p in BOARDS_DIR.glob("*.yml"))


def load_board(name: str) -> KernelBoard:
    path = BOARDS_DIR / f"{name}.yml"
    if not path.is_file():
        raise InputError(f"unknown kernel board {name!r} (known: {', '.join(board_names())})",
                         path=BOARDS_DIR)
    return load_named(path, KernelBoard, "kernel board")
