"""Exit codes and the one error type every command turns into a one-line message.

The exit codes are part of the interface: CI steps branch on them.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from enum import IntEnum
from pathlib import Path
from typing import TypeVar

_T = TypeVar("_T")


class Exit(IntEnum):
    OK = 0
    """Every measured metric is within its budget (or the command simply succeeded)."""
    BUDGET = 1
    """At least one budget was exceeded (a latency regression), or the kernel under test
    crashed and the board's evidence says so (KernelCrash): the kernel's failure either way."""
    INPUT = 2
    """Usage or input error: unreadable or malformed file, no matching budget, bad flag."""
    INCOMPLETE = 3
    """The measurement is not trustworthy (partial, degraded, too few samples, infra failure)."""
    UNDECIDED = 4
    """An A/B comparison could not tell same from worse or better with the rounds it had: measure
    more. A statement about the data, never a lab failure (that is INCOMPLETE)."""


class RtgateError(Exception):
    """An error the CLI reports as one line, ``rtgate: FILE: problem``, with an exit code."""

    def __init__(self, message: str, *, path: str | Path | None = None,
                 code: Exit = Exit.INPUT) -> None:
        super().__init__(message)
        self.path = None if path is None else str(path)
        self.code = code

    def oneline(self) -> str:
        text = " ".join(str(self).split())
        return f"{self.path}: {text}" if self.path else text


class InputError(RtgateError):
    """Bad input: a file rtgate was given cannot be used (exit 2)."""


class InfraError(RtgateError):
    """The lab or emulator failed (boot, timeout, lost board): never a latency verdict (exit 3)."""

    def __init__(self, message: str, *, path: str | Path | None = None) -> None:
        super().__init__(message, path=path, code=Exit.INCOMPLETE)


class KernelCrash(RtgateError):
    """The kernel under test panicked, oopsed, hung or rebooted by itself, and the evidence the
    board kept says so (``said``, its first such line, in the file ``evidence``): that kernel's
    failure (exit 1), never the lab's. A board that fell back without such evidence is an
    InfraError."""

    def __init__(self, message: str, *, said: str, evidence: Path,
                 path: str | Path | None = None) -> None:
        super().__init__(message, path=path, code=Exit.BUDGET)
        self.said = said
        self.evidence = evidence


def raise_found(problems: list[InputError], before: str) -> None:
    """What a command found while it resolved its plan, ``before`` anything ran: nothing when it
    found nothing; one problem as it is; several each on a line of stderr, then one InputError
    counting them (exit 2)."""
    if len(problems) == 1:
        raise problems[0]
    if problems:
        for problem in problems:
            print(f"rtgate: {problem.oneline()}", file=sys.stderr)
        raise InputError(f"{len(problems)} problems found before {before} (above): nothing "
                         "was run")


class Problems:
    """What a command finds while it resolves its plan, before anything runs: every InputError
    kept, each once (two inputs may name one bad file), then raised together (``raise_found``)."""

    def __init__(self) -> None:
        self.found: list[InputError] = []

    def add(self, problem: InputError) -> None:
        if problem.oneline() not in {p.oneline() for p in self.found}:
            self.found.append(problem)

    def attempt(self, step: Callable[[], _T]) -> _T | None:
        """``step()``, or None with the InputError it raised kept."""
        try:
            return step()
        except InputError as exc:
            self.add(exc)
            return None

    def __bool__(self) -> bool:
        return bool(self.found)

    def raise_found(self, before: str) -> None:
        raise_found(self.found, before)
