"""Where the build commands run: on the host, or in the kernel-builder container image.

Both runtimes see the same absolute paths (the container bind-mounts what the build needs at
the same place), so a .config, a build log or a ccache entry is the same whichever ran it. The
container gets only the build's own work area (writable) and what it only reads (main's ccache,
ccache's configuration): the Makefiles it runs may be a pull request's, and must not reach the
pristine sources, the built kernels of the cache or another build's state. It is started only
through docker/rtgate-builder, which holds the hardened options (no capabilities, no network,
pid, memory and time limits) and on a lab controller runs under sudo for a runner user outside
the docker group ($RTGATE_BUILDER).
"""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

from rtgate import paths
from rtgate.errors import InfraError, InputError

BUILDER_IMAGE = os.environ.get("RTGATE_KERNEL_BUILDER", "rtgate/kernel-builder:local")
BUILDER_SCRIPT = paths.ROOT / "docker" / "kernel-builder.sh"
BUILDER_ENV = "RTGATE_BUILDER"
BUILDER_WRAPPER = paths.ROOT / "docker" / "rtgate-builder"
TIME_LIMIT_EXIT = 124
"""What docker/rtgate-builder's time limit (coreutils timeout) exits with."""

LineSink = Callable[[str], None]


class Runtime(Protocol):
    name: str

    def run(self, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str],
            sink: LineSink) -> int:
        """Run argv, feed each output line (stdout and stderr merged) to sink, return the code."""
        ...

    def capture(self, argv: Sequence[str]) -> str:
        """Run a short query (a tool's --version) and return its stdout."""
        ...


MAX_LINE = 64 * 1024


def _stream(argv: Sequence[str], cwd: Path | None, env: Mapping[str, str] | None,
            sink: LineSink) -> int:
    try:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, errors="replace")
    except FileNotFoundError as exc:
        raise InfraError(f"{argv[0]} not found (scripts/deps.sh kernel installs it)") from exc
    assert proc.stdout is not None
    # A line is at most MAX_LINE characters: a longer one arrives in pieces, never whole.
    while line := proc.stdout.readline(MAX_LINE):
        sink(line.rstrip("\n"))
    return proc.wait()


class HostRuntime:
    name = "host"

    def run(self, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str],
            sink: LineSink) -> int:
        # ccache hashes the LC_* variables; the container has none, so neither do host builds,
        # or the two runtimes could never share a ccache entry.
        inherited = {k: v for k, v in os.environ.items() if not k.startswith("LC_")}
        return _stream(argv, cwd, {**inherited, **env}, sink)

    def capture(self, argv: Sequence[str]) -> str:
        try:
            return subprocess.run(argv, capture_output=True, text=True, check=True).stdout
        except (OSError, subprocess.CalledProcessError) as exc:
            raise InfraError(f"{argv[0]} not usable: {exc} (scripts/deps.sh kernel installs the "
                             "cross toolchain)") from exc


def builder_command() -> list[str]:
    """How to start docker/rtgate-builder: $RTGATE_BUILDER (e.g. ``sudo -n
    /usr/local/sbin/rtgate-builder`` on a lab controller), else the repository's copy."""
    configured = os.environ.get(BUILDER_ENV)
    return shlex.split(configured) if configured else [str(BUILDER_WRAPPER)]


class DockerRuntime:
    name = "docker"

    def __init__(self, mounts: Sequence[Path], read_only: Sequence[Path] = ()) -> None:
        self.mounts = list(mounts)
        self.read_only = list(read_only)
        self._ready = False

    def _ensure_image(self) -> None:
        if self._ready:
            return
        if subprocess.run([*builder_command(), "--inspect"]).returncode != 0:
            if BUILDER_ENV in os.environ:
                # A runner outside the docker group cannot build images: an administrator does.
                raise InfraError(f"the kernel builder image is missing: build it as root with "
                                 f"{BUILDER_SCRIPT} (docs/security.md)")
            # The script starts dockerd if needed and builds the base image without Docker Hub.
            proc = subprocess.run([str(BUILDER_SCRIPT), BUILDER_IMAGE], capture_output=True,
                                  text=True)
            if proc.returncode != 0:
                tail = " | ".join(proc.stderr.strip().splitlines()[-3:])
                raise InfraError(f"cannot build the kernel builder image {BUILDER_IMAGE}: "
                                 f"{tail}", path=BUILDER_SCRIPT)
        self._ready = True

    def _builder(self, argv: Sequence[str], cwd: Path | None, env: Mapping[str, str],
                 mounts: Sequence[Path], read_only: Sequence[Path]) -> list[str]:
        cmd = builder_command()
        for mount in mounts:
            cmd += ["--rw", str(mount)]
        for mount in read_only:
            cmd += ["--ro", str(mount)]
        for key, value in env.items():
            cmd += ["--env", f"{key}={value}"]
        if cwd is not None:
            cmd += ["--workdir", str(cwd)]
        return [*cmd, "--", *argv]

    def run(self, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str],
            sink: LineSink) -> int:
        self._ensure_image()
        code = _stream(self._builder(argv, cwd, env, self.mounts,
                                     [p for p in self.read_only if p.exists()]), None, None, sink)
        if code == TIME_LIMIT_EXIT:
            sink("rtgate: the build container reached its time limit (docker/rtgate-builder)")
        return code

    def capture(self, argv: Sequence[str]) -> str:
        self._ensure_image()
        # A version query needs no files.
        proc = subprocess.run(self._builder(argv, None, {}, [], []), capture_output=True,
                              text=True)
        if proc.returncode != 0:
            raise InfraError(f"{argv[0]} not usable in {BUILDER_IMAGE}: {proc.stderr.strip()}")
        return proc.stdout


RUNTIMES = ("host", "docker")


def get_runtime(name: str, mounts: Sequence[Path] = (),
                read_only: Sequence[Path] = ()) -> Runtime:
    """mounts: the directories a containerised build may write; read_only: what it may only
    read (mounted when it exists); the host sees all."""
    if name == "host":
        return HostRuntime()
    if name == "docker":
        return DockerRuntime(mounts, read_only)
    raise InputError(f"unknown runtime {name!r} (choose from {', '.join(RUNTIMES)})")
