"""Every argument type the commands share, in one place.

Each turns one command-line word into a typed value or raises argparse.ArgumentTypeError, which
argparse reports as a usage error (exit 2). Nothing here imports an engine: `rtgate check` loads
this module too, and must stay light.
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable
from pathlib import Path

from rtgate import paths

_DURATION = re.compile(r"^(\d+)([smhd]?)$")
_UNIT_S = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def duration(text: str) -> int:
    """Seconds: 10, 10s, 5m, 1h, 1d."""
    m = _DURATION.match(text.strip())
    if not m or int(m.group(1)) == 0:
        raise argparse.ArgumentTypeError(f"invalid duration {text!r} (e.g. 10, 10s, 5m, 1h)")
    return int(m.group(1)) * _UNIT_S[m.group(2)]


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def scale(text: str) -> float:
    """A multiplier of load instances and streams, in (0, 100]."""
    value = _number(text) or 0.0
    if not 0 < value <= 100:
        raise argparse.ArgumentTypeError(f"invalid scale {text!r} (a number in (0, 100])")
    return value


def threshold(text: str) -> float:
    """A latency in µs > 0 (a trace's break threshold)."""
    value = _number(text) or 0.0
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"invalid threshold {text!r} (µs > 0)")
    return value


def breach_threshold(budget_word: str) -> Callable[[str], float | str]:
    """µs > 0, or ``budget_word`` (trace at the budget's own limit)."""

    def parse(text: str) -> float | str:
        if text == budget_word:
            return budget_word
        value = _number(text)
        if value is None or value <= 0:
            raise argparse.ArgumentTypeError(f"expected µs > 0 or '{budget_word}', got {text!r}")
        return value

    return parse


def percent(text: str) -> float:
    """A share in (0, 100] % (a minimum effect)."""
    return percent_up_to(100)(text)


def percent_up_to(limit: float) -> Callable[[str], float]:
    """A share in (0, limit] % (a minimum effect; a bisect's may exceed 100 %)."""

    def parse(text: str) -> float:
        value = _number(text.removesuffix("%"))
        if value is None or not 0 < value <= limit:
            raise argparse.ArgumentTypeError(f"must be a percentage in (0, {limit:g}]: {text}")
        return value

    return parse


def rate(text: str) -> float:
    """A false-alarm rate in (0, 0.5]."""
    value = _number(text)
    if value is None or not 0 < value <= 0.5:
        raise argparse.ArgumentTypeError(f"must be in (0, 0.5]: {text}")
    return value


def whole_us(text: str) -> int:
    """Whole µs ≥ 1 (a histogram's limit or bin width)."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected whole µs >= 1, got {text!r}")
    return int(text)


def whole_ns(text: str) -> int:
    """Whole ns ≥ 1 (an rtla -n histogram's bin width)."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected whole ns >= 1, got {text!r}")
    return int(text)


def cycles(text: str) -> int:
    """A whole number of cyclictest cycles ≥ 1 (a block of the block maxima)."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of cycles >= 1, got {text!r}")
    return int(text)


def count(text: str) -> int:
    """A number of patches, 0 or more."""
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r}: a number of patches (0 or more)")
    return int(text)


def runs_at_least_one(text: str) -> int:
    """A whole number of runs, at least 1."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: a whole number of runs, at least 1")
    return int(text)


def rounds_at_least(minimum: int) -> Callable[[str], int]:
    """A whole number of rounds a side, at least ``minimum`` (the A/B test's least)."""

    def parse(text: str) -> int:
        if not text.isdigit() or int(text) < minimum:
            raise argparse.ArgumentTypeError(f"{text!r}: a whole number of rounds, at least "
                                             f"{minimum}")
        return int(text)

    return parse


def comma_list(text: str) -> list[str]:
    """A comma-separated list with at least one item."""
    items = [x.strip() for x in text.split(",") if x.strip()]
    if not items:
        raise argparse.ArgumentTypeError("expected a comma-separated list")
    return items


def comma_names(text: str) -> list[str]:
    """A comma-separated list, possibly empty."""
    return [n.strip() for n in text.split(",") if n.strip()]


def add_scale_option(p: argparse.ArgumentParser,
                     help: str = "multiply load instances/streams") -> None:
    p.add_argument("--scale", type=scale, default=None, help=help)


def add_ab_options(p: argparse.ArgumentParser, *, min_rounds: int, round_help: str,
                   planned_help: str, min_effect_help: str, alpha_help: str,
                   max_effect_pct: float = 100) -> None:
    """The A/B options `rtgate ab` and `rtgate bisect` share: a round's length, the planned
    rounds, the load scale, the budgets, the minimum effect (at most ``max_effect_pct``: the
    thresholds' 100 % for the gate, more for a bisect's steps) and the false-alarm rate; the
    help words that differ (a run's or a step's) are the caller's."""
    p.add_argument("--round-duration", type=duration, required=True, help=round_help)
    p.add_argument("--planned-rounds", type=rounds_at_least(min_rounds), metavar="N",
                   help=planned_help)
    add_scale_option(p)
    p.add_argument("--thresholds", type=Path, default=paths.THRESHOLDS, metavar="FILE")
    p.add_argument("--min-effect-pct", type=percent_up_to(max_effect_pct), metavar="PCT",
                   help=min_effect_help)
    p.add_argument("--alpha", type=rate, metavar="RATE", help=alpha_help)


def add_thresholds_option(p: argparse.ArgumentParser, *, optional: bool) -> None:
    """--thresholds FILE, None when not given: the engine then reads the data root's
    thresholds.yml, which must exist (check, publish) or is used when present (``optional``:
    report, compare judge nothing without it)."""
    where = "of the repository when present" if optional else "of RTGATE_ROOT or the checkout"
    p.add_argument("--thresholds", type=Path, metavar="FILE",
                   help=f"budgets (default: thresholds.yml {where})")


def add_kernel_source_arguments(p: argparse.ArgumentParser, kernels_help: str) -> None:
    """Where a flavor's kernel comes from: prebuilt (``--kernels``, ``kernels_help`` says which
    flavors), else built from ``--source`` and ``--patches`` on ``--runtime``."""
    p.add_argument("--kernels", type=Path, metavar="DIR", help=kernels_help)
    p.add_argument("--source", help="kernel source: git:URL@REF | tar:PATH | debian:PACKAGE")
    p.add_argument("--patches", type=Path, metavar="SERIES", help="quilt series file")
    p.add_argument("--runtime", choices=["host", "docker"], default="host",
                   help="where the kernel toolchain runs")


def add_tuning_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tuning", metavar="PROFILE",
                   help="tuning profile from bench/tuning/ (none, isolated) or a .yml path: "
                        "applied on the board, read back after boot and at the end (a setting "
                        "not in effect makes the run incomplete, exit 3), recorded in the result")
    p.add_argument("--allow-host-changes", action="store_true",
                   help="the local board may apply a profile's run-time writes to this machine "
                        "(undone at the end of the run, or at the next start after a crash)")
