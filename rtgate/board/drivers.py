"""From a board description to the driver that operates it."""

from __future__ import annotations

import importlib
from pathlib import Path

from rtgate.board.base import BoardDriver
from rtgate.board.spec import BoardSpec

# Imported on use: each driver pulls in its own dependencies, `board list` needs none of them.
DRIVERS = {
    "local": "rtgate.board.local:LocalBoard",
    "qemu": "rtgate.board.qemu.driver:QemuBoard",
    # The driver word in board files stays `ssh`; what it drives is a Raspberry Pi 5 (tryboot,
    # its firmware's side slot), over an SSH session (rtgate.board.rpi5).
    "ssh": "rtgate.board.rpi5.driver:Rpi5Board",
    "lava": "rtgate.board.lava.driver:LavaBoard",
}


def open_board(spec: BoardSpec, workdir: Path) -> BoardDriver:
    """The board's driver; ``workdir`` keeps its logs (console log, SSH session log)."""
    module, name = DRIVERS[spec.driver].split(":")
    driver: type[BoardDriver] = getattr(importlib.import_module(module), name)
    return driver(spec, workdir)
