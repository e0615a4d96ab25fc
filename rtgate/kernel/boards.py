"""Kernel build boards: what to build for a board is data in kernel/boards/<name>.yml."""

from __future__ import annotations

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from rtgate import paths
from rtgate.errors import InputError

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
    try:
        data = yaml.safe_load(path.read_text())
        return KernelBoard.model_validate(data)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark else ""
        raise InputError(f"{where}not valid YAML: {exc}", path=path) from exc
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or "board"
        raise InputError(f"{loc}: {err['msg']}", path=path) from exc

