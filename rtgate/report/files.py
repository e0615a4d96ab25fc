"""Writing a site incrementally: a file whose content did not change is left alone.

Re-publishing a long history rewrites nothing that is already there, so unchanged plots are
not redrawn (their data files keep their time stamps) and copies are not repeated.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path


def write_if_changed(path: Path, text: str) -> bool:
    data = text.encode("utf-8")
    if path.exists() and path.stat().st_size == len(data) and path.read_bytes() == data:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return True


def publish(src: Path, dest: Path) -> None:
    """Copy a file unless one of the same size and time stamp is already there.

    The copy is world-readable whatever the source's mode: results are written private (0600)
    by write-then-rename, and a site is for everyone.
    """
    a = src.stat()
    if dest.exists():
        b = dest.stat()
        if a.st_size == b.st_size and int(a.st_mtime) == int(b.st_mtime):
            return
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dest)
    dest.chmod(0o644)
    os.utime(dest, ns=(a.st_atime_ns, a.st_mtime_ns))
