"""Kconfig fragments and .config files: what was asked for, and whether the kernel got it.

`olddefconfig` silently drops an option whose dependencies are not met. That is how people end up
measuring an "RT" kernel that is not RT, so every option a fragment asks for is checked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from rtgate.errors import InputError

_SET = re.compile(r"^(CONFIG_[A-Za-z0-9_]+)=(.*)$")
_UNSET = re.compile(r"^# (CONFIG_[A-Za-z0-9_]+) is not set$")


@dataclass(frozen=True)
class Request:
    option: str
    value: str | None
    """The requested value as written (y, m, "text", 42); None for "is not set"."""
    fragment: Path
    line: int

    def text(self) -> str:
        if self.value is None:
            return f"# {self.option} is not set"
        return f"{self.option}={self.value}"


def parse_config(path: Path) -> dict[str, str | None]:
    """Options of a .config or fragment; None means `# CONFIG_X is not set`."""
    return {r.option: r.value for r in read_fragment(path)}


def read_fragment(path: Path) -> list[Request]:
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise InputError(f"cannot read config fragment: {exc.strerror}", path=path) from exc
    requests = []
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if m := _SET.match(line):
            requests.append(Request(m[1], m[2], path, number))
        elif m := _UNSET.match(line):
            requests.append(Request(m[1], None, path, number))
        elif line and not line.startswith("#"):
            raise InputError(f"line {number}: not a Kconfig line: {line!r}", path=path)
    return requests


def effective_requests(fragments: list[Path]) -> dict[str, Request]:
    """What the merged fragments ask for: as merge_config.sh does, a later fragment wins."""
    merged: dict[str, Request] = {}
    for fragment in fragments:
        for request in read_fragment(fragment):
            merged[request.option] = request
    return merged


def unmet(requests: dict[str, Request], config: dict[str, str | None]) -> list[Request]:
    """Requests the final .config does not honour (an absent option counts as not set)."""
    return [r for r in requests.values() if config.get(r.option) != r.value]


def describe_unmet(missing: list[Request], config: dict[str, str | None]) -> str:
    parts = []
    for r in missing:
        got = config.get(r.option)
        actual = "absent/not set" if got is None else f"={got}"
        parts.append(f"{r.text()} ({r.fragment.name}:{r.line}) -> {actual}")
    return "; ".join(parts)
