"""The tools by name: every module of ``rtgate.tools`` that defines ``TOOL`` (found on first
use, so a new tool is a new module and nothing else), plus any ``register``ed."""

from __future__ import annotations

import importlib
import pkgutil

from rtgate.result import Result
from rtgate.stats import ab
from rtgate.tools.protocol import MeasuringTool

_FRAME = {"protocol", "registry"}
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


def round_of(result: Result) -> ab.Round:
    """An A/B round of ``result``: its histogram and block maxima, and the metrics its tool
    reads from it (a tool measuring no wake-up latency compares on those)."""
    name = result.tool.name
    measured = get(name).measured(result) if name in _found() else {}
    return ab.Round.of(result, {k: v for k, v in measured.items() if v is not None})


def every() -> list[MeasuringTool]:
    return [get(name) for name in names()]
