"""The guest userland of the QEMU virtual board: an initramfs made from Debian arm64 packages.

The guest has no Python and no disk: busybox, cyclictest, stress-ng, iperf3 and the shared
libraries they load are unpacked from the distribution's own arm64 packages (the binaries a
Raspberry Pi OS user would run), plus rtgate's ``/init``. Building it takes a download and a few
seconds of packing, so the archive is cached under ``~/.cache/rtgate/initramfs/`` keyed by the
exact package versions and the init script: every test and every run shares one.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from rtgate.errors import InfraError
from rtgate.filelock import locked
from rtgate.kernel.source import sha256_file

DEB_ARCH = "arm64"
# Debian's ld.so searches its multiarch directories by default: no ld.so.cache is needed.
_TRIPLET = "aarch64-linux-gnu"
INIT_SCRIPT = Path(__file__).with_name("init.sh")
# Bump when the way the archive is assembled changes, so old cache entries are not reused.
_FORMAT = 1
# Programs the guest runs; each must find every shared library it needs inside the archive.
PROGRAMS = ("bin/busybox", "usr/bin/cyclictest", "usr/bin/stress-ng", "usr/bin/iperf3")
# Bulk nobody reads inside a throwaway guest.
_PRUNE = ("usr/share/doc", "usr/share/man", "usr/share/locale", "usr/share/lintian",
          "usr/share/bash-completion", "usr/share/info")
_DEP = re.compile(r"^ (?P<alt>[ |])(?:Pre)?Depends: (?P<name><?[^>\s]+>?)$")
_PROVIDER = re.compile(r"^    (?P<name>\S+)$")


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "rtgate" / "initramfs"


@dataclass(frozen=True)
class Initramfs:
    path: Path
    packages: dict[str, str]
    """Package name → exact version the archive was made from."""


def _run(argv: list[str], *, cwd: Path | None = None) -> str:
    try:
        proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)
    except FileNotFoundError as exc:
        raise InfraError(f"{argv[0]} is not installed (scripts/deps.sh qemu)") from exc
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise InfraError(f"`{' '.join(argv[:3])} …` failed ({proc.returncode}): {' | '.join(tail)}"
                         " — is the arm64 architecture enabled (scripts/deps.sh qemu)?")
    return proc.stdout


def _base(name: str) -> str:
    return name.strip("<>").split(":", 1)[0]


def _qualified(name: str) -> str:
    return name if ":" in name else f"{name}:{DEB_ARCH}"


def _dependency_groups(apt_depends: str) -> dict[str, list[list[str]]]:
    """Parse ``apt-cache depends`` output: package → its OR-groups of candidate packages.

    A virtual dependency (``<name>``) is replaced by the packages that provide it.
    """
    groups: dict[str, list[list[str]]] = {}
    current: list[list[str]] | None = None
    open_group = False  # the previous alternative ended with "|": the next one joins it
    virtual = False
    for line in apt_depends.splitlines():
        if line and not line.startswith(" "):
            current = groups.setdefault(_base(line), [])
            open_group = False
            continue
        if current is None:
            continue
        dep = _DEP.match(line)
        if dep:
            name = dep["name"]
            virtual = name.startswith("<")
            if not open_group:
                current.append([])
            if not virtual:
                current[-1].append(name)
            open_group = dep["alt"] == "|"
        elif virtual and (provider := _PROVIDER.match(line)):
            current[-1].append(provider["name"])
    return groups


def resolve(roots: Iterable[str], skip: Iterable[str]) -> dict[str, str]:
    """The packages to unpack: the roots and their dependency closure, minus ``skip``.

    Returns package (``name:arm64``, or plain ``name`` for architecture-independent ones) →
    candidate version. Of each OR-group the first alternative is taken (Debian's own
    preference order), unless the group is already satisfied.
    """
    skipped = set(skip)
    chosen: dict[str, str] = {}  # base name → name as apt spells it
    todo = [_qualified(r) for r in roots]
    while todo:
        batch = {_base(n): n for n in todo if _base(n) not in chosen and _base(n) not in skipped}
        todo = []
        if not batch:
            break
        chosen.update(batch)
        out = _run(["apt-cache", "depends", "--no-recommends", "--no-suggests", "--no-enhances",
                    "--no-breaks", "--no-conflicts", "--no-replaces", *sorted(batch.values())])
        for groups in _dependency_groups(out).values():
            for group in groups:
                if group and not any(_base(n) in chosen or _base(n) in skipped for n in group):
                    todo.append(group[0])
    return _versions(sorted(chosen.values()))


def _versions(names: list[str]) -> dict[str, str]:
    out = _run(["apt-cache", "show", "--no-all-versions", *names])
    versions: dict[str, str] = {}
    for stanza in out.split("\n\n"):
        fields = dict(re.findall(r"^(Package|Version|Architecture): (.+)$", stanza, re.M))
        if "Package" in fields:
            arch = fields.get("Architecture")
            name = fields["Package"] if arch == "all" else f"{fields['Package']}:{arch}"
            versions[name] = fields["Version"]
    missing = [n for n in names if n not in versions]
    if missing:
        raise InfraError(f"no {DEB_ARCH} version known for {', '.join(missing)}")
    return versions


def resolve_cached(roots: Iterable[str], skip: Iterable[str], cache: Path) -> dict[str, str]:
    """``resolve``, remembered until the package lists change: apt-cache takes seconds a call."""
    lists = sorted(Path("/var/lib/apt/lists").glob("*_Packages*"))
    stamp = [(p.name, p.stat().st_mtime_ns) for p in lists]
    key = hashlib.sha256(json.dumps([sorted(roots), sorted(skip), stamp]).encode()).hexdigest()
    memo = cache / f"resolve-{key[:16]}.json"
    if memo.is_file():
        return dict(json.loads(memo.read_text()))
    packages = resolve(roots, skip)
    cache.mkdir(parents=True, exist_ok=True)
    memo.write_text(json.dumps(packages, indent=2) + "\n")
    return packages


def cache_key(packages: dict[str, str], init_text: str,
              extra: dict[str, Path] | None = None) -> str:
    blob = json.dumps({"format": _FORMAT, "arch": DEB_ARCH, "packages": packages,
                       "init": init_text,
                       **({"extra": {name: sha256_file(path) for name, path in extra.items()}}
                          if extra else {})}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _needed(elf: Path) -> list[str]:
    out = subprocess.run(["readelf", "-d", str(elf)], capture_output=True, text=True).stdout
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)


def check_libraries(root: Path, programs: Iterable[str] = PROGRAMS) -> None:
    """Every program and, transitively, every library it loads must find its libraries.

    The dependency closure is taken from package metadata with some packages skipped; this check
    is what proves the skip list did not drop something the guest needs.
    """
    libdirs = [root / d for d in ("lib", "usr/lib", f"lib/{_TRIPLET}", f"usr/lib/{_TRIPLET}")]
    seen: set[str] = set()
    for program in programs:
        path = root / program
        if not path.is_file():
            raise InfraError(f"initramfs has no {program}: which package ships it?")
        todo = [path]
        while todo:
            for soname in _needed(todo.pop()):
                if soname in seen:
                    continue
                seen.add(soname)
                found = next((d / soname for d in libdirs if (d / soname).exists()), None)
                if found is None:
                    raise InfraError(f"initramfs: {program} needs {soname}, which no unpacked "
                                     "package provides (is it in skip_packages?)")
                todo.append(found.resolve() if found.is_symlink() else found)


def _assemble(packages: dict[str, str], init_text: str, dest: Path,
              extra: dict[str, Path]) -> None:
    with tempfile.TemporaryDirectory(prefix="rtgate-initramfs-") as tmp:
        debs, root = Path(tmp) / "debs", Path(tmp) / "root"
        debs.mkdir()
        root.mkdir()
        _run(["apt-get", "download", "-q", *(f"{n}={v}" for n, v in sorted(packages.items()))],
             cwd=debs)
        for deb in sorted(debs.glob("*.deb")):
            _run(["dpkg-deb", "-x", str(deb), str(root)])
        for junk in _PRUNE:
            shutil.rmtree(root / junk, ignore_errors=True)
        for name, path in extra.items():
            target = root / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
            target.chmod(0o755)
        check_libraries(root, [*PROGRAMS, *extra])
        init = root / "init"
        init.write_text(init_text)
        init.chmod(0o755)
        files = subprocess.run(["find", ".", "-mindepth", "1"], cwd=root, capture_output=True,
                               check=True).stdout
        archive = subprocess.run(["cpio", "--quiet", "-o", "-H", "newc", "-R", "0:0"], cwd=root,
                                 input=files, capture_output=True, check=True).stdout
        part = dest.with_suffix(".part")
        part.write_bytes(subprocess.run(["gzip", "-6", "-n"], input=archive, capture_output=True,
                                        check=True).stdout)
        os.replace(part, dest)


def build(roots: Iterable[str], skip: Iterable[str] = (), *,
          cache: Path | None = None, extra: dict[str, Path] | None = None) -> Initramfs:
    """The cached initramfs for these packages and the current init script (built if missing).

    ``extra`` adds programs built here (guest path → host file), such as rtla built from the
    trusted kernel source; their libraries must come from ``roots``' packages.
    """
    roots, skip = list(roots), list(skip)
    directory = cache or cache_dir()
    packages = resolve_cached(roots, skip, directory)
    init_text = INIT_SCRIPT.read_text(encoding="utf-8")
    dest = directory / f"{cache_key(packages, init_text, extra)}.cpio.gz"
    with locked(directory / ".lock"):
        if not dest.is_file():
            _assemble(packages, init_text, dest, extra or {})
            dest.with_suffix(".json").write_text(json.dumps(packages, indent=2) + "\n")
    return Initramfs(dest, packages)
