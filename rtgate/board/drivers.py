"""From a board description to the driver that operates it."""

from __future__ import annotations

import importlib
from pathlib import Path

from rtgate.board.base import Board
from rtgate.board.spec import BoardSpec

# Imported on use: each driver pulls in its own dependencies, `board list` needs none of them.
DRIVERS = {
    "local": "rtgate.board.local:LocalBoard",
    "qemu": "rtgate.board.qemu:QemuBoard",
    "ssh": "rtgate.board.rpi5:Rpi5Board",
    "lava": "rtgate.board.lava:LavaBoard",
}


def open_board(spec: BoardSpec, workdir: Path) -> Board:
    """The board's driver; ``workdir`` keeps its logs (console log, SSH session log)."""
    module, name = DRIVERS[spec.driver].split(":")
    driver: type[Board] = getattr(importlib.import_module(module), name)
    return driver(spec, workdir)
