"""Caps on what the controller reads from a build's work area (a pull request's build writes it).

A sparse file costs a build nothing (`truncate -s 8G .config` inside the container), yet a
reader that takes it whole is a MemoryError on the host and a copy of it fills the cache. Every
output is therefore checked before it is read or copied: a size cap per kind and no holes. The
caps are four times the largest real arm64 build we know of (docs/security.md states them):
a Raspberry Pi 5 or Debian arm64 `Image` is 25-40 MiB, all arm64 dtbs about 15 MiB, a stripped
modules tree a few hundred MiB in up to ~5000 files, a `.config` about 250 KiB.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from rtgate.errors import InfraError

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
CAPS = {
    "config": 4 * MiB,      # .config
    "header": 4 * KiB,      # include/generated/utsversion.h
    "rejects": 4 * MiB,     # a patch's .rej
    "image": 256 * MiB,     # the target's kernel image
    "dtbs": 64 * MiB,       # dtbs_install's tree
    "modules": 2 * GiB,     # modules_install's tree (stripped)
}
MEMBERS = {"dtbs": 4096, "modules": 20_000}
LOG_TAIL = 8 * MiB
"""build.log keeps its last LOG_TAIL bytes (it grows to twice that, then is cut)."""
# A file whose blocks on disk fall short of its size by more than this has holes: refused. Real
# outputs are written whole; a little slack covers filesystems that allocate lazily.
SPARSE_SLACK = 1 * MiB


def _sparse(st: os.stat_result) -> bool:
    return st.st_blocks * 512 + SPARSE_SLACK < st.st_size


def check_file(path: Path, kind: str) -> None:
    """A regular output within its kind's cap, without holes; else InfraError naming it."""
    st = os.lstat(path)
    cap = CAPS[kind]
    if st.st_size > cap:
        raise InfraError(f"the build's {kind} is {st.st_size} bytes, over its cap of {cap}: "
                         "refused, nothing read", path=path)
    if _sparse(st):
        raise InfraError(f"the build's {kind} is sparse ({st.st_blocks * 512} of "
                         f"{st.st_size} bytes on disk): refused, nothing read", path=path)


def check_tree(path: Path, kind: str) -> None:
    """A directory of outputs within its kind's total size and member count, no sparse file."""
    cap, most = CAPS[kind], MEMBERS[kind]
    total = members = 0
    for top, dirs, files in os.walk(path):
        members += len(dirs) + len(files)
        if members > most:
            raise InfraError(f"the build's {kind} holds over {most} entries: refused",
                             path=path)
        for name in files:
            st = os.lstat(Path(top, name))
            if not stat.S_ISREG(st.st_mode):
                continue
            if _sparse(st):
                raise InfraError(f"the build's {kind} holds a sparse file "
                                 f"{Path(top, name).relative_to(path)}: refused", path=path)
            total += st.st_size
            if total > cap:
                raise InfraError(f"the build's {kind} is over its cap of {cap} bytes: refused",
                                 path=path)


def cut_log(path: Path) -> None:
    """Keep the last LOG_TAIL bytes of a log (from a line start), marked as cut."""
    size = path.stat().st_size
    if size <= LOG_TAIL:
        return
    with path.open("rb") as fh:
        fh.seek(size - LOG_TAIL)
        tail = fh.read()
    tail = tail[tail.find(b"\n") + 1:]
    marker = f"### rtgate: build.log cut to its last {len(tail)} of {size} bytes\n".encode()
    tmp = path.with_name(path.name + ".cut")
    tmp.write_bytes(marker + tail)
    os.replace(tmp, path)
