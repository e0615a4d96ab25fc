"""Board descriptions are data: one YAML file per board under ``bench/boards/``."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rtgate import paths
from rtgate.errors import InputError


class BoardSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    description: str
    driver: Literal["local", "qemu", "ssh"]
    virtual: bool | Literal["auto"] = Field(
        description="VM or emulator: its numbers are no real-time claim. `auto`: detect at run time "
                    "(the local board may itself be a VM).")
    arch: str | None = None
    kernel_board: str | None = Field(
        None, description="Kernel build target (`rtgate kernel build --board`); none for local.")
    options: dict[str, Any] = Field(default_factory=dict, description="Driver-specific settings.")


def board_path(name: str, root: Path | None = None) -> Path:
    return (root or paths.BOARDS) / f"{name}.yml"


def load_board(name: str, root: Path | None = None) -> BoardSpec:
    path = board_path(name, root)
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in path.parent.glob("*.yml"))) or "none"
        raise InputError(f"no such board {name!r} (known: {known})", path=path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        spec = BoardSpec.model_validate(data)
    except yaml.YAMLError as exc:
        raise InputError(f"not valid YAML: {exc}", path=path) from exc
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        raise InputError(f"{where}: {first['msg']}", path=path) from exc
    if spec.name != name:
        raise InputError(f"name {spec.name!r} does not match the file name", path=path)
    return spec


def list_boards(root: Path | None = None) -> list[BoardSpec]:
    return [load_board(p.stem, root) for p in sorted((root or paths.BOARDS).glob("*.yml"))]
