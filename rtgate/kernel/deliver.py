"""A built kernel handed on as untrusted data: only the expected files, as regular files, into a
fresh directory.

A kernel build's output directory is written where a pull request's Makefiles run (kernels.yml
builds in a container that can write all of its cache): it may hold symbolic links
(`leak -> /proc/self/environ`), hidden files, names nobody asked for, or a metadata.json naming
a file outside it. `deliver` copies what a kernel build is — the target's image, `.config`,
`dtbs/`, `modules.tar.gz` (as the default branch's kernel/targets/ says), `build.log` and
`metadata.json` — each opened without following links and checked against the sha256
metadata.json records, into a directory that did not exist. Anything else is refused by name
(InfraError, exit 3) and nothing is delivered.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from rtgate import inputfile
from rtgate.errors import InfraError, InputError
from rtgate.kernel.cache import METADATA, METADATA_SCHEMA, UNHASHED
from rtgate.kernel.targets import KernelTarget, load_target

LOG = "build.log"
CONFIG = ".config"


@dataclass(frozen=True)
class Delivery:
    dest: Path
    files: list[str]
    complete: bool
    """False: a failed build's log and .config only (no metadata.json)."""


def inside(root: Path, name: str) -> Path:
    """root/name for a name a metadata file gives: relative, without `..`, and resolving (links
    followed) below root. InfraError otherwise, naming the metadata file: a kernel directory is
    a build's output, untrusted data, not something the user typed."""
    parts = PurePosixPath(name).parts
    if (not name or name.startswith("/") or "\\" in name or any(p in ("", ".", "..")
                                                                 for p in parts)):
        raise InfraError(f"names {name!r}, which is not a plain path inside its directory",
                         path=root / METADATA)
    path = root / name
    if not path.resolve().is_relative_to(root.resolve()):
        raise InfraError(f"names {name!r}, which resolves outside its directory",
                         path=root / METADATA)
    return path


def _entries(root: Path) -> tuple[set[str], list[str]]:
    """(regular files, refusals) below root, by relative path; no link is followed."""
    files, refused = set(), []
    for parent, dirs, names in os.walk(root):
        for name in sorted(dirs + names):
            path = Path(parent, name)
            rel = str(path.relative_to(root))
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode):
                refused.append(f"{rel} (a symbolic link)")
            elif stat.S_ISREG(mode):
                files.add(rel)
            elif not stat.S_ISDIR(mode):
                refused.append(f"{rel} (not a regular file)")
        # os.walk does not descend into a link to a directory; dirs left are real ones.
    return files, refused


def _metadata(src: Path) -> dict[str, Any]:
    path = src / METADATA
    try:
        meta = json.loads(inputfile.read_bytes(path, inputfile.DOCUMENT))
    except (InputError, ValueError) as exc:
        # The build's own output: unusable is an infrastructure failure, not the user's input.
        raise InfraError(f"unreadable: {exc}", path=path) from exc
    if (not isinstance(meta, dict) or meta.get("schema") != METADATA_SCHEMA
            or not isinstance(meta.get("outputs"), dict)
            or not all(isinstance(k, str) and isinstance(v, str)
                       for k, v in meta["outputs"].items())
            or not isinstance(meta.get("plan"), dict)
            or not isinstance(meta["plan"].get("board"), dict)):
        raise InfraError(f"not a {METADATA_SCHEMA} record", path=path)
    return meta


def _allowed(name: str, target: KernelTarget) -> bool:
    """An output a build of target has: the image, .config, and dtbs/ or modules when it has
    them; dtbs/ holds plain names (overlays/README too), never hidden ones."""
    if name in (target.image_name, CONFIG):
        return True
    if target.modules and name == "modules.tar.gz":
        return True
    parts = PurePosixPath(name).parts
    return (target.dtbs and len(parts) > 1 and parts[0] == "dtbs"
            and not any(p.startswith(".") for p in parts))


def _expected(src: Path, meta: dict[str, Any]) -> dict[str, str | None]:
    """Every file to deliver and its recorded sha256 (None: the log and metadata.json)."""
    board = meta["plan"]["board"]
    name = board.get("name")
    target = load_target(name) if isinstance(name, str) else None
    if target is None or board.get("image_name") != target.image_name:
        raise InfraError(f"its board {name!r} with image {board.get('image_name')!r} is not a "
                         "kernel target of this rtgate (kernel/targets/)", path=src / METADATA)
    outputs: dict[str, str] = meta["outputs"]
    odd = sorted(n for n in outputs if not _allowed(n, target) or n in UNHASHED)
    if odd:
        raise InfraError(f"records outputs a {target.name} build does not make: "
                         f"{', '.join(odd)}", path=src / METADATA)
    for output in outputs:
        inside(src, output)
    if target.image_name not in outputs and not meta.get("config_only"):
        raise InfraError(f"records no image {target.image_name}", path=src / METADATA)
    return {**outputs, LOG: None, METADATA: None}


def _copy(src: Path, dest: Path, digest: str | None) -> str | None:
    """Copy a regular file reached through no link; why not, or None when done."""
    try:
        fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        return f"unreadable ({exc.strerror})"
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return "not a regular file"
        dest.parent.mkdir(parents=True, exist_ok=True)
        sha = hashlib.sha256()
        with dest.open("xb") as out:
            for block in iter(lambda: f.read(1 << 20), b""):
                sha.update(block)
                out.write(block)
    if digest is not None and sha.hexdigest() != digest:
        return f"sha256 {sha.hexdigest()}, metadata.json records {digest}"
    return None


def deliver(src: Path, dest: Path) -> Delivery:
    """Copy the kernel build in src to the fresh directory dest (see the module docstring).

    InputError when dest exists; InfraError naming every refused file (dest is then removed):
    a link, a file that is not regular, a name the build does not make, a missing output, a
    copy whose sha256 is not the recorded one. A failed build (no metadata.json) delivers its
    build.log and .config only, and says so (complete=False).
    """
    if os.path.lexists(dest):
        raise InputError("the delivery directory exists: it must be a fresh one", path=dest)
    if src.is_symlink() or not src.is_dir():
        raise InfraError("not a directory (or a symbolic link to one)", path=src)
    files, refused = _entries(src)
    if METADATA in files:
        expected: dict[str, str | None] = _expected(src, _metadata(src))
    else:
        expected = {LOG: None, CONFIG: None}
    refused += [f"{name} (not a file a kernel build leaves)"
                for name in sorted(files - set(expected))]
    refused += [f"{name} (missing)" for name in sorted(set(expected) - files)
                if name not in (LOG, CONFIG) or METADATA in files]
    if refused:
        raise InfraError(f"refused, nothing delivered: {'; '.join(refused)}", path=src)
    try:
        dest.mkdir(parents=True)
    except OSError as exc:
        raise InfraError(f"cannot create the delivery directory: {exc.strerror}",
                         path=dest) from exc
    delivered = sorted(set(expected) & files)
    try:
        for name in delivered:
            why = _copy(src / name, dest / name, expected[name])
            if why is not None:
                raise InfraError(f"refused, nothing delivered: {name} ({why})", path=src)
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)
        raise
    return Delivery(dest=dest, files=delivered, complete=METADATA in files)
