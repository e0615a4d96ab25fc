"""Where a run's files live: the names the stages, the A/B loop and the publisher agree on."""

from __future__ import annotations

from pathlib import Path

RUNNING = "running"
"""The flavor directory of a board that measures its own kernel (no flavor of rtgate's)."""
RESULT = "result.json"
INFRA = "infra.json"
"""Beside where result.json would be, when the lab failed to measure."""
RAW = "raw"
"""The raw files a result is derived from, kept beside it."""
AB_JSON = "ab.json"
AB_MARKDOWN = "ab.md"
"""An A/B run's outputs (ab/doc.py), beside each other; the site reads their names from here
without importing the A/B engine and its statistics."""


def flavor_dir(flavor: str | None) -> str:
    return flavor or RUNNING


def run_home(out: Path, flavor: str | None, scenario: str) -> Path:
    """One measurement's directory: OUT/<flavor>/<scenario>/."""
    return out / flavor_dir(flavor) / scenario


def round_dir(out: Path, side: str, n: int) -> Path:
    """One side's A/B round: OUT/<side>/round-<n>/."""
    return out / side / f"round-{n}"


def round_home(out: Path, side: str, n: int, flavor: str | None, scenario: str) -> Path:
    """One A/B round's measurement: OUT/<side>/round-<n>/<flavor>/<scenario>/."""
    return run_home(round_dir(out, side, n), flavor, scenario)


RUN_RESULTS = f"*/*/{RESULT}"
"""A pipeline's result files below its OUT (``run_home``), as a glob pattern."""
ROUND_RESULTS = f"[AB]/round-*/*/*/{RESULT}"
"""The A/B sides' rounds' result files below its OUT (``round_home``), as a glob pattern."""
RESULT_GLOBS = (RUN_RESULTS, ROUND_RESULTS)
