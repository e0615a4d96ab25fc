"""The one board interface every driver implements, and what flows through it.

A pipeline is a thin loop over it (rtgate.board.measure)::

    with open_board(spec) as board:          # restore() runs on the way out, whatever happened
        board.deploy(kernel)                  # copy the built kernel where the board boots it
        board.boot()                          # boot it; the running `uname -r` must match
        raw = board.run(scenario, duration, out)   # measure under the scenario's load: a RawRun
        measurement = collect(raw)            # -> Result (+ the raw files, kept in out/), the
                                              # same step for every board (rtgate.board.collect)
        board.restore()                       # back to the known-good kernel

A driver deploys, boots, runs and restores, nothing else: what it learns about a run (where the
raw files are, what the board says about itself, the tuning read back) goes into the RawRun.

Every failure of the lab or the emulator is an InfraError (exit 3, never a pass); the console or
session log is saved in the output directory first.
"""

from __future__ import annotations

import os
import sys
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from rtgate import inputfile, jsonfile
from rtgate.board.rawrun import RawRun
from rtgate.board.spec import BoardSpec
from rtgate.board.tuning import Profile
from rtgate.errors import InfraError, InputError, RtgateError
from rtgate.kernel.deliver import inside
from rtgate.result import Result, Trace


@dataclass(frozen=True)
class KernelArtifacts:
    """A kernel as `rtgate kernel build --out DIR` leaves it: image, .config, dtbs/, modules."""

    dir: Path
    image: Path
    release: str
    flavor: str | None = None
    uts_version: str | None = None
    dtbs: Path | None = None
    modules: Path | None = None
    """modules.tar.gz holding lib/modules/<release>/."""

    @classmethod
    def from_dir(cls, path: str | Path) -> KernelArtifacts:
        d = Path(path)
        meta_path = d / "metadata.json"
        if not os.path.lexists(meta_path):
            # The path the user gave is no kernel build at all.
            raise InputError("not a kernel build (no metadata.json)", path=d)
        # Past this point the directory is a build's output, untrusted data (rtgate.kernel.
        # deliver): anything wrong with it is a kernel we cannot measure, exit 3.
        try:
            meta: dict[str, Any] = jsonfile.loads(
                inputfile.read_text(meta_path, inputfile.DOCUMENT), meta_path)
            board = meta["plan"]["board"]
            release, image_name = meta["kernel_release"], board["image_name"]
        except InputError as exc:
            raise InfraError(f"not a kernel build: {exc}", path=meta_path) from exc
        except (ValueError, KeyError, TypeError) as exc:
            raise InfraError(f"not a kernel build's metadata: {exc}", path=meta_path) from exc
        if not isinstance(image_name, str):
            raise InfraError("not a kernel build's metadata: image_name is not a string",
                             path=meta_path)
        # The image it names is one of its own files, never /etc/hostname or
        # ../../etc/os-release.
        image = inside(d, image_name)
        if image.is_symlink() or not image.is_file():
            raise InfraError(f"kernel build has no image {image_name} (config-only build?)",
                             path=d)
        dtbs, modules = d / "dtbs", d / "modules.tar.gz"
        return cls(dir=d, image=image, release=release, flavor=meta["plan"].get("flavor"),
                   uts_version=meta.get("uts_version"),
                   dtbs=dtbs if dtbs.is_dir() and not dtbs.is_symlink() else None,
                   modules=modules if modules.is_file() and not modules.is_symlink() else None)


    def mismatch(self, release: str | None, version: str | None) -> str | None:
        """Why the running kernel is not this build, or None when it is.

        Stock and RT builds of one source share the release string; the version banner (its
        ``PREEMPT_RT`` and build time) tells them apart, so it is compared when known.
        """
        if release != self.release:
            return f"booted release {release!r}, expected the built {self.release!r}"
        if self.uts_version and version != self.uts_version:
            return f"booted {version!r}, expected the built {self.uts_version!r}"
        return None


@dataclass(frozen=True)
class MeasuredRun:
    result: Result
    result_path: Path
    raw_dir: Path


class BoardDriver(ABC):
    """deploy → boot → run → restore. Drivers keep state between the steps."""

    def __init__(self, spec: BoardSpec) -> None:
        self.spec = spec
        self.kernel: KernelArtifacts | None = None
        self.profile: Profile | None = None
        """The tuning profile to apply and verify (rtgate.board.tuning); None: as it boots."""

    @property
    def virtual(self) -> bool:
        return self.spec.virtual is True

    @abstractmethod
    def deploy(self, kernel: KernelArtifacts | None) -> None:
        """Put the kernel where the board will boot it (None: keep the board's own kernel)."""

    @abstractmethod
    def boot(self) -> str:
        """Boot the deployed kernel and return the running release (InfraError on mismatch)."""

    @abstractmethod
    def run(self, scenario: str, duration_s: int, out: Path, *, flavor: str | None = None,
            scale: float | None = None) -> RawRun:
        """Measure under the scenario's load; raw outputs land in ``out/raw/``, what the board
        reported about itself in the RawRun (the tuning read back at its end too)."""

    @abstractmethod
    def restore(self) -> None:
        """Return the board to its known-good kernel; safe to call twice or after a failure."""

    def trace(self, scenario: str, threshold_us: float, cap_s: int, out: Path, *,
              scale: float | None = None) -> Trace:
        """A follow-up run with a tracer armed to stop at ``threshold_us`` (rtgate.trace),
        after a measurement on the booted board; raw files into ``out/raw/trace-*``."""
        return Trace(tool="none", threshold_us=threshold_us, cap_s=cap_s, breached=False,
                     note=f"board {self.spec.name!r} has no breach tracer: no trace was taken")

    def close(self) -> None:  # noqa: B027 - most drivers hold nothing to release
        """Release local resources (processes, connections)."""

    def __enter__(self) -> BoardDriver:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        try:
            self.restore()
        except RtgateError as failed:
            if exc is None:
                raise
            # The first failure is the verdict; a failed restore after it is only reported.
            print(f"rtgate: restoring {self.spec.name} failed too: {failed.oneline()}",
                  file=sys.stderr)
        finally:
            self.close()
