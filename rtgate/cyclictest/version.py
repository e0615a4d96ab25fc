"""What the installed cyclictest is: its version and the options its ``--help`` lists.

rt-tests changed its options between releases (2.0 dropped ``-n``, 1.x has no ``--json``), so a
command line is built from what the installed binary says it accepts, not from a fixed list.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from typing import Literal

from rtgate.errors import InfraError

ArgKind = Literal["none", "required", "optional"]

_VERSION = re.compile(r"^cyclictest V (\d+)\.(\d+)")
_SHORT = re.compile(r"^-([A-Za-z])$")
_LONG = re.compile(r"^--([A-Za-z][\w-]*)(=.*)?$")
# Argument placeholders in the option column: [CPUSET], <path>, USEC, TIME ...
_ARG = re.compile(r"^(\[.*|<.*>|[A-Z][A-Z_]*)$")
_RANK: dict[ArgKind, int] = {"none": 0, "required": 1, "optional": 2}


@dataclass
class Option:
    """One cyclictest option with all its spellings (``-h`` and ``--histogram``)."""

    names: set[str] = field(default_factory=set)
    arg: ArgKind = "none"

    @property
    def short(self) -> str | None:
        return next((n for n in sorted(self.names) if _SHORT.match(n)), None)

    @property
    def long(self) -> str | None:
        return next((n for n in sorted(self.names) if n.startswith("--")), None)


@dataclass
class Capabilities:
    version: str
    major: int
    minor: int
    options: dict[str, Option]
    """Every spelling (``-h``, ``--histogram``) maps to its Option."""

    def supports(self, name: str) -> bool:
        return name in self.options

    def option(self, name: str) -> Option | None:
        return self.options.get(name)


def _line_option(line: str) -> Option | None:
    """The option a help line introduces, if it starts with one; descriptions stop the scan."""
    names: set[str] = set()
    arg: ArgKind = "none"
    for token in line.split():
        if _SHORT.match(token):
            names.add(token)
        elif m := _LONG.match(token):
            names.add(f"--{m.group(1)}")
            if m.group(2):
                value = m.group(2)[1:]
                arg = "optional" if value.startswith("[") else max(arg, "required", key=_RANK.get)
        elif names and _ARG.match(token):
            arg = "optional" if token.startswith("[") else max(arg, "required", key=_RANK.get)
        else:
            break
    return Option(names, arg) if names else None


def parse_help(text: str) -> Capabilities:
    """Read the version from the first line and the options from the option column."""
    first = text.lstrip().splitlines()[0] if text.strip() else ""
    m = _VERSION.match(first)
    if not m:
        raise InfraError(f"cannot read the cyclictest version from --help (first line {first!r})")
    options: dict[str, Option] = {}
    for line in text.splitlines()[1:]:
        found = _line_option(line)
        if found is None:
            continue
        # `-t` is listed twice (with and without NUM): merge the spellings into one option.
        known = next((options[n] for n in found.names if n in options), None)
        if known is None:
            known = found
        else:
            known.names |= found.names
            known.arg = max(known.arg, found.arg, key=_RANK.get)
        for name in known.names:
            options[name] = known
    return Capabilities(f"{m.group(1)}.{m.group(2)}", int(m.group(1)), int(m.group(2)), options)


def detect(executable: str = "cyclictest") -> Capabilities:
    """Ask the installed cyclictest; a missing or unreadable binary is an infrastructure failure."""
    try:
        proc = subprocess.run([executable, "--help"], capture_output=True, text=True, timeout=10,
                              check=False)
    except FileNotFoundError as exc:
        raise InfraError(f"{executable} not found: install rt-tests (scripts/deps.sh core)") \
            from exc
    except subprocess.TimeoutExpired as exc:
        raise InfraError(f"`{executable} --help` did not answer within 10 s") from exc
    # 1.x prints its usage on stderr and exits non-zero; 2.x uses stdout and 0.
    return parse_help(proc.stdout + proc.stderr)
