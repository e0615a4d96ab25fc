"""The unit tier runs no external program: a test that starts one fails here, loudly, and
belongs in tests/integration (real tools) or tests/e2e (kernels, containers, guests)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Generator
from contextlib import ExitStack
from pathlib import Path
from typing import NoReturn
from unittest import mock

import pytest

# Every way Python starts a program ends in one of these: subprocess.Popen (run, call,
# check_output), os.system and os.popen, the spawn and exec families, fork (multiprocessing's).
_STARTERS = [(subprocess, "Popen"), (os, "system"), (os, "popen"), (os, "fork"),
             (os, "forkpty"), (os, "posix_spawn"), (os, "posix_spawnp")]
_STARTERS += [(os, name) for name in dir(os) if name.startswith(("exec", "spawn"))]
UNIT = Path(__file__).resolve().parent


def _refuser(name: str) -> Callable[..., NoReturn]:
    def refuse(*args: object, **kwargs: object) -> NoReturn:
        pytest.fail(f"a unit test called {name}{args[:1]!r}: a test that starts an external "
                    "program belongs in tests/integration or tests/e2e", pytrace=True)
    return refuse


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None,
                            ) -> Generator[None, object, object]:
    # Around setup, call and teardown alike: a module- or session-scoped fixture a unit test
    # sets up is held to the same rule as the test. pytest calls this hook for every item of
    # the session, whichever conftest holds it: only this folder's tests are unit tests.
    if not item.path.resolve().is_relative_to(UNIT):
        return (yield)
    with ExitStack() as stack:
        for module, name in _STARTERS:
            if hasattr(module, name):
                stack.enter_context(mock.patch.object(module, name, _refuser(name)))
        return (yield)
