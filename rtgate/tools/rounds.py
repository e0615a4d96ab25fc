"""A/B rounds of any tool's results (apart from the registry, so that judging budgets never
loads the statistics' numpy and scipy)."""

from __future__ import annotations

from rtgate.result import Result
from rtgate.stats import ab
from rtgate.tools.registry import get, names


def round_of(result: Result) -> ab.Round:
    """An A/B round of ``result``: its histogram and block maxima, and the metrics its tool
    reads from it (a tool measuring no wake-up latency compares on those)."""
    name = result.tool.name
    measured = get(name).measured(result) if name in names() else {}
    return ab.Round.of(result, {k: v for k, v in measured.items() if v is not None})
