"""Build a kernel from a plan: patch, configure, verify the config, compile, cache, deliver.

    from rtgate.kernel.build import build
    result = build("qemu-arm64", "rt")        # -> BuildResult with result.image, result.config

Outputs in `out` (default out/kernels/BOARD-FLAVOR): the image (the target's image_name),
`dtbs/` and `modules.tar.gz` when the target has them, `.config`, `build.log`, `metadata.json`.
A finished build is kept under the cache by the plan's cache key; the same plan again is a copy
from there, once the entry matches the sha256s it recorded (a refused entry is set aside and the
kernel rebuilt).
The build runs on a copy of the pristine source and, in the docker runtime, sees only its work
area (writable) and main's ccache (read-only): kbuild runs the Makefiles of the tree it builds,
a pull request's included. An untrusted build's own ccache lives in its work area and goes with
it (rtgate.kernel.cache).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tarfile
from collections import deque
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rtgate import paths
from rtgate.errors import InfraError, InputError
from rtgate.filelock import locked
from rtgate.kernel import bounded
from rtgate.kernel.cache import (
    METADATA_SCHEMA,
    RefusedEntry,
    cache_root,
    check_outputs,
    main_ccache,
    output_hashes,
    read_entry,
    trust_domain,
)
from rtgate.kernel.kconfig import describe_unmet, effective_requests, parse_config, unmet
from rtgate.kernel.patches import PatchError, patch_command
from rtgate.kernel.plan import BuildPlan, make_plan
from rtgate.kernel.progress import BuildProgress
from rtgate.kernel.runtime import Runtime, get_runtime
from rtgate.kernel.source import materialize, working_copy

_DIAGNOSTIC = re.compile(r"\b(fatal )?error:")
# Lines of a step's output held in memory (the log on disk keeps more): a Makefile chooses how
# much it prints.
KEPT_LINES = 2000
OUT_ROOT = Path("out") / "kernels"
CCACHE_CONFIG = paths.KERNEL / "ccache.conf"


@dataclass(frozen=True)
class BuildResult:
    out: Path
    plan: BuildPlan
    image: Path | None
    """None for a config-only run."""
    config: Path
    log: Path
    metadata: Path
    kernel_release: str
    uts_version: str | None
    """The `#1 SMP PREEMPT_RT ...` part of the version banner; None for a config-only run."""
    cache_hit: bool


@dataclass(frozen=True)
class _Slot:
    """The work area of one target × flavor: a patched copy of the source and the build dir.

    A pull request's Makefiles write anywhere in it (the docker runtime mounts it), so the host
    keeps nothing of its own there (the log and the lock sit beside it), empties it before each
    build, and reads what a build made only through ``built``: never through a symbolic link.
    """

    root: Path
    cache: Path
    trusted: bool

    @property
    def ccache(self) -> Path:
        """The ccache a build writes: its domain's for a trusted build, else its own."""
        return self.cache / "ccache" if self.trusted else self.root / "ccache"

    @property
    def src(self) -> Path:
        return self.root / "src"

    @property
    def obj(self) -> Path:
        return self.root / "build"

    @property
    def inputs(self) -> Path:
        return self.root / "inputs"

    @property
    def log(self) -> Path:
        return self.root.with_name(self.root.name + ".log")

    def built(self, path: Path, kind: str, *, links_inside: bool = False) -> Path:
        """``path`` below the work area, as a build left it: a regular file or directory
        reached through no symbolic link, whose files are no symbolic links either unless
        ``links_inside`` (a reader that keeps links as links), within the cap of its ``kind``
        and without holes (rtgate.kernel.bounded). A Makefile could point one at any file the
        controller's user may read, or make it a sparse bomb. Else InfraError: the output is
        unusable."""
        # The root is the host's (resolved when the slot is made); below it, the build's.
        inside = path.relative_to(self.root)
        for depth in range(1, len(inside.parts) + 1):
            if (self.root / Path(*inside.parts[:depth])).is_symlink():
                raise InfraError(f"the build left {Path(*inside.parts[:depth])} as a symbolic "
                                 "link in its work area: refused, nothing read through it",
                                 path=path)
        if path.is_dir():
            for top, dirs, files in [] if links_inside else os.walk(path):
                for name in dirs + files:
                    if (Path(top) / name).is_symlink():
                        raise InfraError(f"the build left {Path(top, name).relative_to(self.root)}"
                                         " as a symbolic link among its outputs: refused",
                                         path=path)
            bounded.check_tree(path, kind)
        elif not path.is_file():
            raise InfraError(f"the build left no file {inside}", path=path)
        else:
            bounded.check_file(path, kind)
        return path


def build(target: str, flavor: str, *, source: str | None = None, series: Path | None = None,
          fragments: list[Path] | None = None, runtime: str = "host", out: Path | None = None,
          config_only: bool = False, jobs: int | None = None, progress: bool = True,
          trust: str | None = None) -> BuildResult:
    """Build (or fetch from the cache) the kernel for target × flavor; see the module docstring.

    config_only stops after the verified .config (no compile, never cached). trust names the
    cache's trust domain (rtgate.kernel.cache.cache_root).
    Raises InputError (bad input, patch does not apply, Kconfig dropped an option) or InfraError
    (the build failed, a tool is missing).
    """
    cache = cache_root(trust)
    trusted = trust_domain(trust) == "trusted"
    slot = _Slot((cache / "work").resolve() / f"{target}-{flavor}", cache.resolve(), trusted)
    # A trusted build writes main's ccache; an untrusted one only reads it.
    shared = main_ccache().resolve()
    rt = get_runtime(runtime, [slot.root, *([slot.ccache, shared] if trusted else [])],
                     read_only=[CCACHE_CONFIG, *([] if trusted else [shared])])
    plan = make_plan(target, flavor, rt, source=source, series=series, extra_fragments=fragments)
    out = out if out is not None else OUT_ROOT / f"{target}-{flavor}"
    entry = cache / "kernels" / plan.cache_key
    if not config_only and (hit := _cached(entry, out, plan, cache)) is not None:
        return hit
    with locked(slot.root.with_name(slot.root.name + ".lock")):
        # Another process may have finished the same plan while we waited for the lock.
        if not config_only and (hit := _cached(entry, out, plan, cache)) is not None:
            return hit
        with BuildProgress(slot.log, f"{target} {flavor}", enabled=progress) as prog:
            try:
                release = _configure(plan, rt, slot, prog)
                if config_only:
                    return _deliver_config(plan, slot, out, release, prog.elapsed(), rt.name)
                _compile(plan, rt, slot, prog, jobs)
                meta = _store(plan, slot, entry, release, prog.elapsed(), rt.name)
            except (InputError, InfraError) as exc:
                _save_raw(slot, out, exc)
                raise
            finally:
                if not trusted:
                    shutil.rmtree(slot.ccache, ignore_errors=True)
    try:
        return _deliver(entry, out, plan, meta, cache_hit=False)
    except RefusedEntry as exc:
        raise InfraError(f"the kernel just built changed in the cache: {exc}", path=entry) from exc


def _cached(entry: Path, out: Path, plan: BuildPlan, cache: Path) -> BuildResult | None:
    """The cached kernel of the plan delivered to out, or None: no entry, or one that does not
    match its metadata.json (set aside under refused/, never served)."""
    if not os.path.lexists(entry):
        return None
    try:
        return _deliver(entry, out, plan, read_entry(entry, plan.cache_key), cache_hit=True)
    except RefusedEntry as exc:
        _clear_outputs(out, plan)
        kept = cache / "refused" / f"{entry.name}-{datetime.now(UTC):%Y%m%dT%H%M%S.%fZ}"
        kept.parent.mkdir(parents=True, exist_ok=True)
        try:
            entry.rename(kept)
        except FileNotFoundError:
            kept = entry  # a concurrent build set it aside first
        print(f"rtgate kernel: refused the cached kernel {entry}: {exc}; kept as {kept}, "
              "rebuilding", file=sys.stderr, flush=True)
        return None


def _make(plan: BuildPlan, slot: _Slot, *goals: str, jobs: int | None = None) -> list[str]:
    arch, cross = plan.target.arch, plan.target.cross_compile
    argv = ["make", "-C", str(slot.src), f"O={slot.obj}", f"ARCH={arch}",
            f"CROSS_COMPILE={cross}", f"CC=ccache {cross}gcc",
            # The builds are C only: a rustc that happens to be on PATH must not change the
            # .config (CONFIG_RUSTC_VERSION) between a laptop, CI and the builder image.
            "RUSTC=false"]
    if jobs is not None:
        argv.append(f"-j{jobs}")
    return [*argv, *goals]


def _env(slot: _Slot) -> dict[str, str]:
    # A fixed user@host keeps the banner the same whichever machine or container built it; a
    # fixed LANG (which ccache hashes) lets host and container builds share ccache entries.
    # ccache reads no configuration a build could have written (CCACHE_CONFIGPATH replaces
    # CCACHE_DIR/ccache.conf and /etc/ccache.conf); paths below the work area are hashed
    # relative to it (CCACHE_BASEDIR), so a trusted and an untrusted work area share results.
    shared = f"file:{main_ccache().resolve()}"
    ccache = ({"CCACHE_REMOTE_STORAGE": shared, "CCACHE_RESHARE": "true"} if slot.trusted
              else {"CCACHE_REMOTE_STORAGE": f"{shared}|read-only"})
    return {"CCACHE_DIR": str(slot.ccache), "CCACHE_CONFIGPATH": str(CCACHE_CONFIG),
            "CCACHE_BASEDIR": str(slot.root), **ccache, "KBUILD_BUILD_USER": "rtgate",
            "KBUILD_BUILD_HOST": "rtgate", "LANG": "C.UTF-8"}


def _run(rt: Runtime, argv: list[str], slot: _Slot, prog: BuildProgress,
         what: str) -> list[str]:
    """Run a step; its last lines (the whole output is build.log's, itself a bounded tail)."""
    lines: deque[str] = deque(maxlen=KEPT_LINES)
    first: list[str] = []

    def sink(line: str) -> None:
        lines.append(line)
        if not first and _DIAGNOSTIC.search(line):
            first.append(line)
        prog.line(line)

    prog.line("$ " + " ".join(argv))
    code = rt.run(argv, cwd=slot.root, env=_env(slot), sink=sink)
    if code != 0:
        # The first compiler diagnostic says what broke; make's "*** [...] Error 1" only where.
        errors = first or [ln for ln in lines if "***" in ln] or list(lines)[-1:]
        first = errors[0].strip() if errors else "no output"
        raise InfraError(f"{what} failed (exit {code}): {first} (full log: build.log)",
                         path=slot.log)
    return list(lines)


def _prepare(plan: BuildPlan, slot: _Slot) -> list[Path]:
    """A fresh copy of the pristine tree and copies of the inputs, in the slot."""
    tree = materialize(plan.source, slot.cache)
    # Whatever an earlier build left, symbolic links included, goes (rmtree follows none).
    if slot.root.is_symlink():
        slot.root.unlink()
    shutil.rmtree(slot.root, ignore_errors=True)
    slot.root.mkdir(parents=True)
    slot.ccache.mkdir(exist_ok=True)
    if slot.trusted:
        main_ccache().mkdir(exist_ok=True)
    working_copy(tree, slot.src)
    slot.obj.mkdir()
    slot.inputs.mkdir()
    # Inputs are copied into the slot so a container sees them at the same paths.
    copies = []
    for index, fragment in enumerate(plan.fragments):
        copy = slot.inputs / f"{index:02d}-{fragment.name}"
        shutil.copyfile(fragment.path, copy)
        copies.append(copy)
    if plan.series is not None:
        series_dir = Path(plan.series).parent
        for index, patch in enumerate(plan.patches):
            shutil.copyfile(series_dir / patch.name, slot.inputs / f"patch-{index:03d}.patch")
    return copies


def _configure(plan: BuildPlan, rt: Runtime, slot: _Slot,
               prog: BuildProgress) -> str:
    prog.stage("preparing the source tree")
    fragments = _prepare(plan, slot)
    for index, patch in enumerate(plan.patches):
        prog.stage(f"applying {patch.name}")
        _apply(plan, rt, slot, prog, index)
    prog.stage(f"configuring ({plan.base_config} + {len(fragments)} fragments)")
    _run(rt, _make(plan, slot, plan.base_config), slot, prog, plan.base_config)
    merge = [str(slot.src / "scripts" / "kconfig" / "merge_config.sh"), "-m", "-O",
             str(slot.obj), str(slot.obj / ".config"), *map(str, fragments)]
    _run(rt, merge, slot, prog, "merge_config.sh")
    _run(rt, _make(plan, slot, "olddefconfig"), slot, prog, "olddefconfig")
    _verify(fragments, plan, slot.built(slot.obj / ".config", "config"))
    release = _run(rt, _make(plan, slot, "-s", "kernelrelease"), slot, prog,
                   "make kernelrelease")
    return release[-1].strip() if release else ""


def _apply(plan: BuildPlan, rt: Runtime, slot: _Slot, prog: BuildProgress,
           index: int) -> None:
    patch = plan.patches[index]
    rejects = slot.root / f"patch-{index:03d}.rej"
    rejects.unlink(missing_ok=True)
    lines: deque[str] = deque(maxlen=KEPT_LINES)

    def sink(line: str) -> None:
        lines.append(line)
        prog.line(line)

    argv = patch_command(slot.inputs / f"patch-{index:03d}.patch", slot.src, rejects)
    prog.line("$ " + " ".join(argv))
    if rt.run(argv, cwd=slot.root, env=_env(slot), sink=sink) == 0:
        return
    rejected = slot.built(rejects, "rejects").read_text() if rejects.exists() else ""
    prog.line(rejected)
    failed = [ln.strip() for ln in lines if "FAILED" in ln or "malformed" in ln.lower()
              or "can't find file" in ln]
    summary = failed[0] if failed else (lines[-1].strip() if lines else "patch failed")
    series = Path(plan.series) if plan.series else slot.inputs
    raise PatchError(f"patch {patch.name} does not apply: {summary}",
                     path=series, rejected="\n".join(lines) + "\n" + rejected)


def _verify(fragments: list[Path], plan: BuildPlan, config: Path) -> None:
    requests = effective_requests(fragments)
    final = parse_config(config)
    missing = unmet(requests, final)
    if missing:
        # Name the fragments by their original names, not the numbered slot copies.
        text = describe_unmet(missing, final)
        for copy, fragment in zip(fragments, plan.fragments, strict=True):
            text = text.replace(copy.name, fragment.name)
        raise InputError(f"Kconfig dropped {len(missing)} requested option(s) "
                         f"(unmet dependencies?): {text}", path=config)


def _compile(plan: BuildPlan, rt: Runtime, slot: _Slot, prog: BuildProgress,
             jobs: int | None) -> None:
    target = plan.target
    jobs = jobs or os.cpu_count() or 1
    goals = [Path(target.image).name] + (["dtbs"] if target.dtbs else []) + (
        ["modules"] if target.modules else [])
    prog.stage(f"compiling {' '.join(goals)} (-j{jobs})")
    _run(rt, _make(plan, slot, *goals, jobs=jobs), slot, prog, "make")
    stage = slot.root / "stage"
    shutil.rmtree(stage, ignore_errors=True)
    if target.dtbs:
        prog.stage("installing dtbs")
        _run(rt, _make(plan, slot, "dtbs_install", f"INSTALL_DTBS_PATH={stage / 'dtbs'}"),
             slot, prog, "make dtbs_install")
    if target.modules:
        prog.stage("installing modules")
        _run(rt, _make(plan, slot, "modules_install", f"INSTALL_MOD_PATH={stage / 'modules'}",
                       "INSTALL_MOD_STRIP=1"), slot, prog, "make modules_install")


def _uts_version(slot: _Slot) -> str | None:
    header = slot.obj / "include" / "generated" / "utsversion.h"
    if not os.path.lexists(header):
        return None
    match = re.search(r'UTS_VERSION\s+"([^"]*)"', slot.built(header, "header").read_text())
    return match[1] if match else None


def _metadata(plan: BuildPlan, release: str, uts: str | None, seconds: float, runtime: str,
              outputs: dict[str, str]) -> dict[str, Any]:
    return {
        "schema": METADATA_SCHEMA,
        "plan": json.loads(plan.to_json()),
        "kernel_release": release,
        "uts_version": uts,
        "runtime": runtime,
        "built_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "build_seconds": round(seconds, 1),
        "outputs": outputs,
    }


def _store(plan: BuildPlan, slot: _Slot, entry: Path, release: str, seconds: float,
           runtime: str) -> dict[str, Any]:
    """Copy the outputs into the cache entry, written aside and renamed: all or nothing."""
    target = plan.target
    staging = entry.with_name(f".{entry.name}.{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        staging.mkdir(parents=True)
        shutil.copyfile(slot.built(slot.obj / target.image, "image"),
                        staging / target.image_name)
        shutil.copyfile(slot.built(slot.obj / ".config", "config"), staging / ".config")
        stage = slot.root / "stage"
        if target.dtbs:
            shutil.copytree(slot.built(stage / "dtbs", "dtbs"), staging / "dtbs")
        if target.modules:
            with tarfile.open(staging / "modules.tar.gz", "w:gz") as tar:
                # tar keeps links as links (modules_install's own build -> CURDIR is one).
                tar.add(slot.built(stage / "modules", "modules", links_inside=True),
                        arcname=".")
        meta = _metadata(plan, release, _uts_version(slot), seconds, runtime,
                         output_hashes(staging))
        (staging / "metadata.json").write_text(json.dumps(meta, indent=2) + "\n")
        shutil.copyfile(slot.log, staging / "build.log")
        shutil.rmtree(entry, ignore_errors=True)
        staging.rename(entry)
    except BaseException as exc:
        # Nothing half-stored stays behind: a full disk (ENOSPC) included.
        shutil.rmtree(staging, ignore_errors=True)
        if isinstance(exc, OSError):
            raise InfraError(f"cannot store the kernel in the cache: {exc.strerror or exc}",
                             path=entry) from exc
        raise
    return meta


def _clear_outputs(out: Path, plan: BuildPlan) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name in (plan.target.image_name, ".config", "build.log", "metadata.json",
                 "modules.tar.gz"):
        (out / name).unlink(missing_ok=True)
    shutil.rmtree(out / "dtbs", ignore_errors=True)


def _deliver(entry: Path, out: Path, plan: BuildPlan, meta: dict[str, Any], *,
             cache_hit: bool) -> BuildResult:
    """Copy the entry to out; RefusedEntry when the copy is not what meta records."""
    _clear_outputs(out, plan)
    shutil.copytree(entry, out, symlinks=True, dirs_exist_ok=True)
    # Check the copy, not only the entry: what is served is what was checked.
    check_outputs(out, meta["outputs"])
    meta = {**meta, "cache_hit": cache_hit}
    (out / "metadata.json").write_text(json.dumps(meta, indent=2) + "\n")
    return BuildResult(out=out, plan=plan, image=out / plan.target.image_name,
                       config=out / ".config", log=out / "build.log",
                       metadata=out / "metadata.json", kernel_release=meta["kernel_release"],
                       uts_version=meta["uts_version"], cache_hit=cache_hit)


def _deliver_config(plan: BuildPlan, slot: _Slot, out: Path, release: str, seconds: float,
                    runtime: str) -> BuildResult:
    _clear_outputs(out, plan)
    shutil.copyfile(slot.built(slot.obj / ".config", "config"), out / ".config")
    shutil.copyfile(slot.log, out / "build.log")
    meta = _metadata(plan, release, None, seconds, runtime, output_hashes(out))
    meta["config_only"] = True
    (out / "metadata.json").write_text(json.dumps(meta, indent=2) + "\n")
    return BuildResult(out=out, plan=plan, image=None, config=out / ".config",
                       log=out / "build.log", metadata=out / "metadata.json",
                       kernel_release=release, uts_version=None, cache_hit=False)


def _save_raw(slot: _Slot, out: Path, exc: InputError | InfraError) -> None:
    """A failed build still leaves its log (and .config) in out/, and the error points there:
    the slot is overwritten by the next build."""
    out.mkdir(parents=True, exist_ok=True)
    for kept, name in ((slot.log, "build.log"), (slot.obj / ".config", ".config")):
        try:
            # The log is the host's; a .config is the build's, read through no link.
            source = kept if kept == slot.log else slot.built(kept, "config")
        except InfraError:
            continue
        if source.is_file():
            try:
                shutil.copyfile(source, out / name)
            except OSError:
                continue  # a full disk: the error itself still says what failed
            if exc.path == str(kept):
                exc.path = str(out / name)
