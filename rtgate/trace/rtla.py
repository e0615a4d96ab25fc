"""rtla (``tools/tracing/rtla``) built from the trusted kernel source, for the host and arm64.

Debian 12 ships rtla 6.1, which has no timerlat auto-analysis; the kernel source we build from
has the 6.12 one. It is always built from the board's *default* source (the Debian
linux-source package), never from a tree a pull request patched: the tool that explains a
breach must not be the PR's. The pristine tree is read only (``O=`` takes every output), and the
binary is cached under the trusted cache, keyed by the source, the target, the compiler and the
libtracefs/libtraceevent versions it links against.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from rtgate.errors import InfraError
from rtgate.filelock import locked
from rtgate.kernel.cache import cache_root
from rtgate.kernel.source import Source, materialize, resolve, sha256_file

DEFAULT_SOURCE = "debian:linux-source-6.12"
# Bump when the build steps change the binary: old cache entries then miss.
RECIPE = 1


@dataclass(frozen=True)
class Target:
    name: str
    """host or arm64"""
    cc: str
    ld: str
    ar: str
    multiarch: str
    """Debian's multiarch triplet: where the target's pkg-config files and libraries are."""
    deb_arch: str

    def env(self) -> dict[str, str]:
        return {"PKG_CONFIG_LIBDIR": f"/usr/lib/{self.multiarch}/pkgconfig:/usr/share/pkgconfig"}

    def make_vars(self) -> list[str]:
        return [f"CC={self.cc}", f"LD={self.ld}", f"AR={self.ar}"]


TARGETS = {
    "host": Target("host", "gcc", "ld", "ar", "x86_64-linux-gnu", "amd64"),
    "arm64": Target("arm64", "aarch64-linux-gnu-gcc", "aarch64-linux-gnu-ld",
                    "aarch64-linux-gnu-ar", "aarch64-linux-gnu", "arm64"),
}
# The -dev packages rtla builds against; their runtime libraries go wherever rtla runs.
LIBRARIES = ("libtracefs", "libtraceevent")
RUNTIME_PACKAGES = ("libtracefs1", "libtraceevent1")


@dataclass(frozen=True)
class Rtla:
    path: Path
    version: str
    """`rtla --version`'s release (the kernel source's), e.g. 6.12.117."""
    key: str


def _capture(argv: list[str]) -> str:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    except FileNotFoundError as exc:
        raise InfraError(f"{argv[0]} is not installed (scripts/deps.sh qemu)") from exc
    if proc.returncode != 0:
        raise InfraError(f"`{' '.join(argv)}` failed: {proc.stderr.strip()[-300:]}")
    return proc.stdout


def _dev_versions(target: Target) -> dict[str, str]:
    versions = {}
    for lib in LIBRARIES:
        package = f"{lib}-dev:{target.deb_arch}"
        out = subprocess.run(["dpkg-query", "-W", "-f=${Status}|${Version}", package],
                             capture_output=True, text=True)
        status, _, version = out.stdout.partition("|")
        if out.returncode != 0 or "install ok installed" not in status:
            raise InfraError(f"{package} is not installed: rtla links against it "
                             "(scripts/deps.sh qemu)")
        versions[package] = version
    return versions


def cache_key(source: Source, target: Target) -> str:
    inputs = {"recipe": RECIPE, "source": source.identity(), "target": target.name,
              "compiler": _capture([target.cc, "--version"]).splitlines()[0],
              "libraries": _dev_versions(target)}
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()


def build(target_name: str) -> Rtla:
    """rtla for ``host`` or ``arm64`` from the default kernel source: cached, else built."""
    target = TARGETS[target_name]
    source = resolve(DEFAULT_SOURCE)
    key = cache_key(source, target)
    root = cache_root("trusted")
    entry = root / "rtla" / f"{target.name}-{key[:16]}"
    with locked(root / "rtla" / ".lock"):
        meta = entry / "metadata.json"
        if not _intact(entry):
            tree = materialize(source, root)
            _compile(tree, target, entry)
        record = json.loads(meta.read_text())
    return Rtla(path=entry / "rtla", version=record["version"], key=key)


def _intact(entry: Path) -> bool:
    try:
        record = json.loads((entry / "metadata.json").read_text())
        return sha256_file(entry / "rtla") == record["sha256"]
    except (OSError, ValueError, KeyError, TypeError):
        return False


def _compile(tree: Path, target: Target, entry: Path) -> None:
    rtla_dir = tree / "tools" / "tracing" / "rtla"
    with tempfile.TemporaryDirectory(prefix="rtgate-rtla-") as tmp:
        out = Path(tmp) / "out"
        out.mkdir()
        proc = subprocess.run(["make", "-C", str(rtla_dir), f"O={out}", *target.make_vars()],
                              env={**os.environ, **target.env()}, capture_output=True,
                              text=True, check=False)
        log = proc.stdout + proc.stderr
        if proc.returncode != 0 or not (out / "rtla").is_file():
            tail = " | ".join(log.strip().splitlines()[-4:])
            raise InfraError(f"building rtla for {target.name} failed: {tail}", path=rtla_dir)
        version = _capture(["make", "-sC", str(tree), "kernelversion"]).strip()
        staging = Path(tmp) / "entry"
        staging.mkdir()
        shutil.copy2(out / "rtla", staging / "rtla")
        (staging / "build.log").write_text(log)
        (staging / "metadata.json").write_text(json.dumps(
            {"target": target.name, "version": version,
             "sha256": sha256_file(staging / "rtla")}, indent=2) + "\n")
        shutil.rmtree(entry, ignore_errors=True)
        entry.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(staging, entry)
