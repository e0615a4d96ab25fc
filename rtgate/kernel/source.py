"""Kernel sources: `git:URL@REF`, `tar:PATH`, `debian:PACKAGE`, resolved and unpacked once.

A resolved source has a `ref` that identifies its content (git ref, tarball sha256, Debian
package version), so the plan's cache key changes when the source does. Unpacked trees are kept
pristine under the cache; builds work on copies that share no file with them.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from rtgate.errors import InfraError, InputError

USAGE = "expected git:URL@REF, tar:PATH or debian:PACKAGE"
COMMIT = re.compile(r"[0-9a-f]{40}")
DEBIAN_SRC = Path("/usr/src")


class Source(BaseModel):
    model_config = ConfigDict(frozen=True)

    kind: Literal["git", "tar", "debian"]
    location: str
    """Repository URL, tarball path or Debian package name."""
    ref: str
    """Git ref as given, sha256 of the tarball, or the installed Debian package version."""

    def identity(self) -> str:
        """What the cache key hashes: a tarball is its content, wherever it lies."""
        if self.kind == "tar":
            return f"tar:sha256:{self.ref}"
        return f"{self.kind}:{self.location}@{self.ref}"

    def spec(self) -> str:
        return f"{self.kind}:{self.location}" + (f"@{self.ref}" if self.kind == "git" else "")


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def resolve(spec: str) -> Source:
    kind, sep, rest = spec.partition(":")
    if not sep or not rest:
        raise InputError(f"bad kernel source {spec!r}: {USAGE}")
    if kind == "git":
        # rpartition: ssh URLs (git@host:repo) contain '@' too; the ref is after the last one.
        url, at, ref = rest.rpartition("@")
        if not at or not url or not ref or ":" in ref:
            raise InputError(f"bad kernel source {spec!r}: git sources need @REF ({USAGE})")
        return Source(kind="git", location=url, ref=ref)
    if kind == "tar":
        path = Path(rest).expanduser().resolve()
        if not path.is_file():
            raise InputError("kernel source tarball not found", path=path)
        return Source(kind="tar", location=str(path), ref=sha256_file(path))
    if kind == "debian":
        return Source(kind="debian", location=rest, ref=_debian_version(rest))
    raise InputError(f"bad kernel source {spec!r}: unknown kind {kind!r}; {USAGE}")


def pinned(source: Source) -> Source:
    """A git source at the commit its branch or tag names now (``git ls-remote``), so that
    two builds (a gate's A and B) take the same tree however the branch moves; any other
    source, or a git source already at a commit, as it is."""
    if source.kind != "git" or COMMIT.fullmatch(source.ref):
        return source
    proc = subprocess.run(["git", "ls-remote", source.location, f"refs/heads/{source.ref}",
                           f"refs/tags/{source.ref}", f"refs/tags/{source.ref}^{{}}"],
                          capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise InfraError(f"cannot read {source.location}'s refs: {proc.stderr.strip()}")
    refs = dict(reversed(line.split("\t", 1)) for line in proc.stdout.splitlines()
                if "\t" in line)
    # An annotated tag names its tag object; the commit is the peeled ^{} line.
    for name in (f"refs/heads/{source.ref}", f"refs/tags/{source.ref}^{{}}",
                 f"refs/tags/{source.ref}"):
        if COMMIT.fullmatch(refs.get(name, "")):
            return Source(kind="git", location=source.location, ref=refs[name])
    raise InputError(f"kernel source {source.spec()}: {source.location} has no branch or tag "
                     f"{source.ref!r}")


def _debian_version(package: str) -> str:
    out = subprocess.run(["dpkg-query", "-W", "-f=${Status}|${Version}", package],
                         capture_output=True, text=True)
    status, _, version = out.stdout.partition("|")
    if out.returncode != 0 or "install ok installed" not in status:
        raise InputError(f"Debian package {package} is not installed "
                         f"(apt-get install {package}, or scripts/deps.sh kernel)")
    if not _debian_tarball(package).is_file():
        raise InputError(f"Debian package {package} ships no source tarball",
                         path=_debian_tarball(package))
    return version


def _debian_tarball(package: str) -> Path:
    return DEBIAN_SRC / f"{package}.tar.xz"


def materialize(source: Source, cache: Path) -> Path:
    """The pristine source tree, unpacked (or cloned) into the cache the first time."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{source.kind}-{Path(source.location).name}")
    digest = hashlib.sha256(source.identity().encode()).hexdigest()[:16]
    tree = cache / "sources" / f"{slug}-{digest}"
    if (tree / "Makefile").is_file():
        return tree
    tree.parent.mkdir(parents=True, exist_ok=True)
    # Unpack beside the final place and rename: a concurrent or interrupted unpack never leaves
    # a half tree where a build would take it for a whole one.
    with tempfile.TemporaryDirectory(dir=tree.parent, prefix=".unpack-") as tmp:
        staging = Path(tmp) / "tree"
        if source.kind == "git":
            _clone(source, staging)
        else:
            archive = (Path(source.location) if source.kind == "tar"
                       else _debian_tarball(source.location))
            _unpack(archive, staging)
        if not (staging / "Makefile").is_file():
            raise InputError("not a kernel source tree (no top-level Makefile)",
                             path=source.location)
        try:
            staging.rename(tree)
        except OSError:
            if not (tree / "Makefile").is_file():
                raise
    return tree


def _unpack(archive: Path, dest: Path) -> None:
    dest.mkdir()
    proc = subprocess.run(["tar", "-xf", str(archive), "-C", str(dest)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise InputError(f"cannot unpack: {proc.stderr.strip()}", path=archive)
    entries = list(dest.iterdir())
    # Kernel tarballs wrap the tree in one top directory (linux-source-6.12/); unwrap it.
    if len(entries) == 1 and entries[0].is_dir():
        inner = entries[0].rename(dest.parent / ".inner")
        dest.rmdir()
        inner.rename(dest)


def _clone(source: Source, dest: Path) -> None:
    if COMMIT.fullmatch(source.ref):
        steps = [["git", "init", "-q", str(dest)],
                 ["git", "-C", str(dest), "fetch", "-q", "--depth", "1", source.location,
                  source.ref],
                 ["git", "-C", str(dest), "checkout", "-q", "FETCH_HEAD"]]
    else:
        steps = [["git", "clone", "-q", "--depth", "1", "--branch", source.ref,
                  source.location, str(dest)]]
    for argv in steps:
        proc = subprocess.run(argv, capture_output=True, text=True)
        if proc.returncode != 0:
            shutil.rmtree(dest, ignore_errors=True)
            raise InfraError(f"cannot fetch {source.spec()}: {proc.stderr.strip()}")


def working_copy(tree: Path, dest: Path) -> None:
    """A copy of the pristine tree to build in, sharing no inode with it.

    kbuild runs the Makefiles of the tree it builds (a pull request's too), and any write they
    make through a hard link would change the pristine tree and every later build. A reflink
    where the filesystem has them; elsewhere a full copy, measured at 7-12 s for the 6.12 tree
    (1.7 GB, 87k files, ext4, warm/cold page cache) against 1 s for hard links.
    """
    proc = subprocess.run(["cp", "-a", "--reflink=auto", str(tree), str(dest)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise InfraError(f"cannot copy the source tree: {proc.stderr.strip()}", path=dest)
