"""The tools by name: every module of ``rtgate.tools`` that defines ``TOOL`` (found on first
use, so a new tool is a new module and nothing else), plus any ``register``ed."""

from __future__ import annotations

import importlib
import pkgutil

from rtgate.tools.protocol import MeasuringTool

_FRAME = {"protocol", "registry", "rounds"}
_tools: dict[str, MeasuringTool] = {}


def _found() -> dict[str, MeasuringTool]:
    if not _tools:
        package = importlib.import_module("rtgate.tools")
        for info in pkgutil.iter_modules(package.__path__):
            if info.name not in _FRAME:
                tool = getattr(importlib.import_module(f"rtgate.tools.{info.name}"), "TOOL", None)
                if isinstance(tool, MeasuringTool):
                    _tools.setdefault(tool.name, tool)
    return _tools


def register(tool: MeasuringTool) -> None:
    """Add ``tool`` (a tool defined outside this package: a test's)."""
    _found()[tool.name] = tool


def get(name: str) -> MeasuringTool:
    try:
        return _found()[name]
    except KeyError:
        raise KeyError(f"no measuring tool {name!r} (known: {', '.join(names())})") from None


def names() -> list[str]:
    """Every tool's name, cyclictest (the default) first."""
    return sorted(_found(), key=lambda n: (n != "cyclictest", n))


def every() -> list[MeasuringTool]:
    return [get(name) for name in names()]
