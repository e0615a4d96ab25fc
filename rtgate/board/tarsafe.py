"""Unpacking archives that came from a board: nothing may land outside the destination.

Python 3.11.4+ has tarfile's "data" filter; Debian 12's own 3.11.2 does not, so there the same
rule (relative paths, no "..", links that stay inside) is checked here before extracting.
"""

from __future__ import annotations

import tarfile
from pathlib import Path, PurePosixPath


def _inside(name: str) -> bool:
    path = PurePosixPath(name)
    return not path.is_absolute() and ".." not in path.parts


def extract(tar: tarfile.TarFile, dest: Path) -> None:
    if hasattr(tarfile, "data_filter"):
        tar.extractall(dest, filter="data")
        return
    for member in tar.getmembers():
        if not _inside(member.name) or member.isdev() or (
                (member.issym() or member.islnk()) and not _inside(
                    str(PurePosixPath(member.name).parent / member.linkname))):
            raise tarfile.TarError(f"refusing archive member {member.name!r}")
    tar.extractall(dest)
