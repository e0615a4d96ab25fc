"""The rtgate command line as tests run it: in this process (rtgate.cli.main), or as a process
where one is needed. tests/conftest.py hands them out as the rtgate_cli and rtgate_process
fixtures; the Protocols type a test's parameter."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Protocol
from unittest import mock

from rtgate import paths
from rtgate.cli import main

Env = Mapping[str, str | None]


class RunCli(Protocol):
    def __call__(self, *args: str | Path, cwd: Path | None = None, env: Env | None = None,
                 ) -> subprocess.CompletedProcess[str]: ...


class RunProcess(Protocol):
    def __call__(self, *args: str | Path, cwd: Path | None = None, env: Env | None = None,
                 timeout: float = 120) -> subprocess.CompletedProcess[str]: ...


def environment(env: Env | None) -> dict[str, str]:
    """This process's environment with ``env`` over it (a None value unsets that variable)."""
    merged = dict(os.environ)
    for name, value in (env or {}).items():
        if value is None:
            merged.pop(name, None)
        else:
            merged[name] = value
    return merged


@contextlib.contextmanager
def _within(cwd: Path | None, env: Env | None) -> Iterator[None]:
    with mock.patch.dict(os.environ, environment(env), clear=True), \
            contextlib.chdir(cwd or Path.cwd()):
        yield


def in_process(*args: str | Path, cwd: Path | None = None, env: Env | None = None,
               ) -> subprocess.CompletedProcess[str]:
    """`rtgate ARGS` through rtgate.cli.main: its exit code, stdout and stderr.

    The data root (rtgate.paths.ROOT) was fixed when rtgate was imported and modules derive
    paths from it at import, so another root (RTGATE_ROOT, or a working directory holding its
    own data) needs a process: this refuses it rather than run against the wrong data.
    """
    if "RTGATE_ROOT" in (env or {}) or (
            cwd is not None and Path(cwd).resolve() != paths.ROOT.resolve()
            and any((Path(cwd) / marker).exists() for marker in ("thresholds.yml", "bench"))):
        raise AssertionError("another data root: use the rtgate_process fixture")
    argv = [str(a) for a in args]
    out, err = io.StringIO(), io.StringIO()
    with _within(cwd, env), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse: --help, --version, usage errors
            code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    return subprocess.CompletedProcess(["rtgate", *argv], code, out.getvalue(), err.getvalue())


def as_process(*args: str | Path, cwd: Path | None = None, env: Env | None = None,
               timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`python -m rtgate ARGS` as a process: for signals, start-up, another data root."""
    return subprocess.run([sys.executable, "-m", "rtgate", *map(str, args)], cwd=cwd,
                          env=environment(env), capture_output=True, text=True, timeout=timeout)
