"""Where a test's own device nodes work. On a ``nodev`` mount (Debian 13's /tmp is a tmpfs
mounted nosuid,nodev) mknod(2) still makes a node, but open(2) of it fails with EACCES
(mount(8), "nodev: Do not interpret character or block special devices on the filesystem")."""

from __future__ import annotations

import os
from pathlib import Path


def opens_devices(directory: Path) -> bool:
    """Whether device nodes made under ``directory`` can be opened (its mount is not nodev)."""
    return not os.statvfs(directory).f_flag & os.ST_NODEV


NODEV = ("the test's directory is on a nodev mount (a tmpfs /tmp, as on Debian 13): a device "
         "node made there cannot be opened; give pytest --basetemp on a filesystem without nodev")
