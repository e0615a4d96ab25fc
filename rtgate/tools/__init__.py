"""The measuring tools behind one protocol (rteval-style): one module per tool in this package,
each a :class:`~rtgate.tools.protocol.MeasuringTool` named ``TOOL``; ``get`` finds it by the
name a scenario, a result and a budget use. Nothing outside a tool's module asks which tool it
is: it asks the tool."""

from rtgate.tools.protocol import (
    GuestShell,
    Kind,
    MeasuringTool,
    Metric,
    RunFacts,
    ToolCommand,
)
from rtgate.tools.registry import every, get, names, register

__all__ = ["GuestShell", "Kind", "MeasuringTool", "Metric", "RunFacts", "ToolCommand", "every",
           "get", "names", "register"]
