"""Unpacking archives that came from a board: nothing may land outside the destination.

Python 3.11.4+ has tarfile's "data" filter; Debian 12's own 3.11.2 does not, so there the same
rules (relative paths, no "..", links that stay inside, no devices, no setuid/setgid/sticky or
group/world-writable modes) are applied here before extracting.
"""

from __future__ import annotations

import tarfile
from pathlib import Path, PurePosixPath

from rtgate.errors import InfraError

# The data filter's mask: no setuid/setgid/sticky (extracted by root, a board's file would run as
# root) and no group/world write (anyone could rewrite raw data after it was judged).
_MODE_MASK = 0o755


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
        member.mode &= _MODE_MASK
    tar.extractall(dest)


def members(tar: tarfile.TarFile, cap: int, most: int, what: str) -> list[tarfile.TarInfo]:
    """The archive's members, once their sizes stay within ``cap`` bytes and ``most`` entries:
    read header by header, so a bomb stops at the header past the cap (InfraError)."""
    found: list[tarfile.TarInfo] = []
    total = 0
    for member in tar:
        found.append(member)
        total += max(member.size, 0)
        if total > cap or len(found) > most:
            raise InfraError(f"{what} would unpack to more than {cap >> 20} MiB or {most} "
                             f"files (at {member.name!r}): refused")
    return found
