"""Where kernel sources, ccache and built kernels are kept between runs, who may read them, and
the check a cached kernel passes before it is served.

Two trust domains share $RTGATE_CACHE (default ~/.cache/rtgate). `trusted` (the root itself) is
for builds of inputs the default branch vouches for; `untrusted` (the root's `untrusted/`) for
builds that run a pull request's kernel Makefiles, which can write anything the build can reach.
A build reads and writes only its own domain's sources and kernels, so nothing an untrusted
build left behind is ever read by a trusted one.

Compiler caches: a trusted build keeps its own ccache (`ccache/`) and shares every result into
`ccache-main/` (ccache's file storage); an untrusted build reads `ccache-main/` only (read-only
remote storage, mounted read-only in the builder container) and writes to a ccache of its own in
its work area, discarded with it: no two untrusted builds share a writable file. ccache's
configuration is the harness's (`kernel/ccache.conf`, CCACHE_CONFIGPATH), never a file a
build could write.

A cache entry (`kernels/KEY/`) holds the outputs, build.log and metadata.json, which records the
plan and the sha256 of every output. A hit is served only when the entry is exactly that: right
key, every recorded output present with its sha256, nothing else, no links.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rtgate.errors import InputError
from rtgate.kernel.source import sha256_file

TRUST_ENV = "RTGATE_CACHE_TRUST"
MAIN_ENV = "RTGATE_CACHE_MAIN"
TRUST_DOMAINS = ("trusted", "untrusted")
METADATA = "metadata.json"
METADATA_SCHEMA = "rtgate/kernel-build/v1"
UNHASHED = (METADATA, "build.log")
"""The files of an entry that are not outputs: the record itself and the log."""


class RefusedEntry(Exception):
    """A cache entry that is not what its metadata.json records: never served."""


def trust_domain(trust: str | None = None) -> str:
    """`trust`, else $RTGATE_CACHE_TRUST, else trusted."""
    domain = trust or os.environ.get(TRUST_ENV) or "trusted"
    if domain not in TRUST_DOMAINS:
        raise InputError(f"unknown cache trust domain {domain!r} (--cache-trust or {TRUST_ENV}: "
                         f"{' or '.join(TRUST_DOMAINS)})")
    return domain


def cache_root(trust: str | None = None) -> Path:
    """The cache of one trust domain (trust_domain)."""
    env = os.environ.get("RTGATE_CACHE")
    base = Path(env) if env else Path.home() / ".cache" / "rtgate"
    # The trusted domain keeps the root itself, so caches made before domains existed stay hits.
    return base if trust_domain(trust) == "trusted" else base / "untrusted"


def main_ccache() -> Path:
    """The compiler results of trusted builds, which untrusted builds may only read: under
    $RTGATE_CACHE_MAIN when set (a lab controller keeps main's and pull requests' caches in
    two roots, docs/lab.md), else under the trusted domain's root."""
    main = os.environ.get(MAIN_ENV)
    return (Path(main) if main else cache_root("trusted")) / "ccache-main"


def output_hashes(root: Path) -> dict[str, str]:
    """sha256 of every output under root, by relative path: what metadata.json records."""
    return {str(p.relative_to(root)): sha256_file(p) for p in sorted(root.rglob("*"))
            if p.is_file() and p.name not in UNHASHED}


def _files(root: Path) -> dict[str, Path]:
    """Every non-directory under root, by relative path; symlinks are not followed."""
    found = {}
    for parent, dirs, names in os.walk(root):
        # os.walk lists a symlink to a directory among dirs but does not descend into it.
        for name in [*names, *(d for d in dirs if Path(parent, d).is_symlink())]:
            path = Path(parent, name)
            found[str(path.relative_to(root))] = path
    return found


def check_outputs(root: Path, outputs: Mapping[str, str]) -> None:
    """Each recorded output is a regular file under root with the recorded sha256."""
    for name, digest in outputs.items():
        path = root / name
        if path.is_symlink() or not path.is_file():
            raise RefusedEntry(f"{name} is missing or not a regular file")
        actual = sha256_file(path)
        if actual != digest:
            raise RefusedEntry(f"{name} has sha256 {actual}, metadata.json records {digest}")


def read_entry(entry: Path, key: str) -> dict[str, Any]:
    """The metadata of a whole, unaltered entry for `key`; RefusedEntry says what is wrong."""
    if entry.is_symlink():
        raise RefusedEntry("the entry is a symbolic link")
    files = _files(entry)
    odd = sorted(name for name, path in files.items()
                 if path.is_symlink() or not path.is_file())
    if odd:
        raise RefusedEntry(f"not a regular file: {', '.join(odd)}")
    try:
        meta = json.loads((entry / METADATA).read_text())
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise RefusedEntry(f"{METADATA} unreadable: {exc}") from exc
    outputs = meta.get("outputs") if isinstance(meta, dict) else None
    plan = meta.get("plan") if isinstance(meta, dict) else None
    if (not isinstance(outputs, dict) or not isinstance(plan, dict)
            or meta.get("schema") != METADATA_SCHEMA
            or not all(isinstance(v, str) for v in outputs.values())
            or not isinstance(meta.get("kernel_release"), str)
            or "uts_version" not in meta or not isinstance(meta["uts_version"], str | None)):
        raise RefusedEntry(f"{METADATA} is not a {METADATA_SCHEMA} record")
    if plan.get("cache_key") != key:
        raise RefusedEntry(f"{METADATA} is for plan {plan.get('cache_key')!r}, not this one")
    names = set(files) - set(UNHASHED)
    if names != set(outputs):
        missing, extra = sorted(set(outputs) - names), sorted(names - set(outputs))
        raise RefusedEntry("files differ from metadata.json: "
                           + "; ".join(f"{what} {', '.join(which)}" for what, which in
                                       (("missing", missing), ("unrecorded", extra)) if which))
    check_outputs(entry, outputs)
    return meta
