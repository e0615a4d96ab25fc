"""The runner's `.env`: written by rtgate, read by actions/runner exactly as written.

actions/runner reads `<runner root>/.env` before anything else (`LoadAndSetEnv`,
src/Runner.Listener/Program.cs:172-199 at 258d6c857db3519913f7deb6004b60172f8043ae): every
line that is not empty and has an `=` after its first character becomes a variable, the key
being everything before the first `=` and the value everything after it, verbatim — no
comments, no quotes, no trimming; an empty value unsets the variable. So a value may hold
nothing the reader would keep that a person writing shell would expect to vanish: no quotes,
no ` # comment`, no leading or trailing blanks, no line breaks.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from rtgate.errors import InputError

_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# What a shell user writes and the runner keeps: quotes and backslashes (shlex.split of
# RTGATE_BUILDER would then take them as quoting), a comment, control characters.
_KEPT = re.compile(r"[\"'\\\x00-\x1f\x7f]| #")


def value_problem(value: str) -> str | None:
    """Why the runner would not read ``value`` as meant, or None."""
    if value == "":
        return "is empty (the runner unsets an empty variable)"
    if value != value.strip():
        return "starts or ends with a blank, which the runner keeps"
    bad = _KEPT.search(value)
    if bad:
        return f"holds {bad.group()!r}, which the runner keeps verbatim"
    return None


def render(variables: Mapping[str, str], *, path: str = ".env") -> str:
    """One ``KEY=value`` line per variable, in order; refuses what the runner would misread."""
    lines = []
    for key, value in variables.items():
        if not _KEY.fullmatch(key):
            raise InputError(f"{key!r} is not an environment variable name", path=path)
        problem = value_problem(value)
        if problem:
            raise InputError(f"{key}={value!r}: the value {problem}", path=path)
        lines.append(f"{key}={value}\n")
    return "".join(lines)


def _lines(text: str) -> list[str]:
    return text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n").split("\n")


def read_as_runner(text: str) -> dict[str, str | None]:
    """The variables actions/runner sets from ``text`` (its LoadAndSetEnv, line for line).

    ``File.ReadAllLines`` ends a line at CR, LF or CRLF and drops a UTF-8 byte order mark;
    a None value is `SetEnvironmentVariable(key, null)`, which removes the variable."""
    env: dict[str, str | None] = {}
    for line in _lines(text):
        separator = line.find("=")
        if line and separator > 0:
            env[line[:separator]] = line[separator + 1:] or None
    return env


def check(text: str, *, path: str) -> dict[str, str]:
    """The variables of a generated env file, refused (InputError naming the line) when a line
    is not one clean ``KEY=value`` the runner reads as meant: a hand edit, a pasted comment."""
    lines = _lines(text)
    for number, line in enumerate(lines[:-1] if lines[-1] == "" else lines, 1):
        key, sep, value = line.partition("=")
        problem = ("the line is not KEY=value" if not (sep and _KEY.fullmatch(key))
                   else (f"the value {p}" if (p := value_problem(value)) else None))
        if problem:
            raise InputError(f"line {number}: {line!r}: {problem}; regenerate the file with "
                             "`rtgate lab setup`", path=path)
    return {k: v for k, v in read_as_runner(text).items() if v is not None}
