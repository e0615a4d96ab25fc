"""Where the build commands run: on the host, or in the kernel-builder container image.

Both runtimes see the same absolute paths (the container bind-mounts what the build needs at
the same place), so a .config, a build log or a ccache entry is the same whichever ran it. The
container gets only the build's own work area and ccache: the Makefiles it runs may be a pull
request's, and must not reach the pristine sources or the built kernels of the cache.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

from rtgate import paths
from rtgate.errors import InfraError, InputError

BUILDER_IMAGE = os.environ.get("RTGATE_KERNEL_BUILDER", "rtgate/kernel-builder:local")
BUILDER_SCRIPT = paths.ROOT / "docker" / "kernel-builder.sh"

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


def _stream(argv: Sequence[str], cwd: Path | None, env: Mapping[str, str] | None,
            sink: LineSink) -> int:
    try:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, errors="replace")
    except FileNotFoundError as exc:
        raise InfraError(f"{argv[0]} not found (scripts/deps.sh kernel installs it)") from exc
    assert proc.stdout is not None
    for line in proc.stdout:
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


class DockerRuntime:
    name = "docker"

    def __init__(self, mounts: Sequence[Path], image: str = BUILDER_IMAGE) -> None:
        self.mounts = list(mounts)
        self.image = image
        self._ready = False

    def _ensure_image(self) -> None:
        if self._ready:
            return
        probe = subprocess.run(["docker", "image", "inspect", self.image],
                               capture_output=True, text=True)
        if probe.returncode != 0:
            # The script starts dockerd if needed and builds the base image without Docker Hub.
            proc = subprocess.run([str(BUILDER_SCRIPT), self.image], capture_output=True,
                                  text=True)
            if proc.returncode != 0:
                tail = " | ".join(proc.stderr.strip().splitlines()[-3:])
                raise InfraError(f"cannot build the kernel builder image {self.image}: {tail}",
                                 path=BUILDER_SCRIPT)
        self._ready = True

    def _docker_run(self, argv: Sequence[str], cwd: Path | None, env: Mapping[str, str],
                    mounts: Sequence[Path]) -> list[str]:
        # --init: make is not written to be PID 1; with an init, stopping `docker run` (Ctrl-C,
        # a killed CI step) stops the build instead of leaving it running in the container.
        cmd = ["docker", "run", "--rm", "--init", "--network", "none",
               "--user", f"{os.getuid()}:{os.getgid()}"]
        for mount in mounts:
            cmd += ["-v", f"{mount}:{mount}"]
        for key, value in env.items():
            cmd += ["-e", f"{key}={value}"]
        if cwd is not None:
            cmd += ["-w", str(cwd)]
        return [*cmd, self.image, *argv]

    def run(self, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str],
            sink: LineSink) -> int:
        self._ensure_image()
        return _stream(self._docker_run(argv, cwd, env, self.mounts), None, None, sink)

    def capture(self, argv: Sequence[str]) -> str:
        self._ensure_image()
        # A version query needs no files; docker would create a missing mount source as root.
        proc = subprocess.run(self._docker_run(argv, None, {}, []), capture_output=True,
                              text=True)
        if proc.returncode != 0:
            raise InfraError(f"{argv[0]} not usable in {self.image}: {proc.stderr.strip()}")
        return proc.stdout


RUNTIMES = ("host", "docker")


def get_runtime(name: str, mounts: Sequence[Path] = ()) -> Runtime:
    """mounts: the directories a containerised build may see (and write); the host sees all."""
    if name == "host":
        return HostRuntime()
    if name == "docker":
        return DockerRuntime(mounts)
    raise InputError(f"unknown runtime {name!r} (choose from {', '.join(RUNTIMES)})")
