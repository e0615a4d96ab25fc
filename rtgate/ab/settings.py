"""What an A/B run is asked: frozen, typed, built by a command (`rtgate ab`, `rtgate bisect`) or
by the publisher's replay."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rtgate.calibration import CalibrationRecord


@dataclass(frozen=True)
class RoundSettings:
    """How the rounds run and are decided, whatever board and kernels they compare."""

    out: Path
    """A/round-N/… and B/round-N/… go here (or are read from here by a replay)."""
    round_duration: int
    """Seconds measured a round."""
    max_time: int
    """Seconds for all rounds: undecided after it."""
    planned_rounds: int | None = None
    """Rounds a side the alpha spending plans for; None: what max_time allows at the first
    pair's pace. A replay needs it."""
    scale: float | None = None
    """Multiplies load instances and streams."""
    min_effect_pct: float | None = None
    """Overrides every budget's ab.min_effect_pct (%)."""
    alpha: float | None = None
    """Overrides the budgets' ab.alpha: the false-alarm rate of the whole run."""
    calibration: CalibrationRecord | None = None
    """The board kind's calibration record: the keys' primary metrics and the planned rounds."""
    use_record: bool = True
    """Without ``calibration``, gate with the kind's record in bench/calibration/. False for
    `rtgate calibrate`: its bank makes the record, and is not judged by the one it replaces
    (banked at another resolution, say)."""


@dataclass(frozen=True)
class ABSettings:
    """`rtgate ab`: one board, the two sides' kernels and scenarios, the rounds."""

    board: str
    base: Path | None
    """The base kernels, DIR/<flavor>/ from `rtgate kernel build --out`; None: running kernel."""
    cand: Path | None
    cand_scenario_dir: Path | None
    """B runs DIR/<scenario>.yml instead of bench/scenarios/ (e.g. a planted load)."""
    flavors: tuple[str, ...] | None
    scenarios: tuple[str, ...] | None
    thresholds: Path
    rounds: RoundSettings
    plan_only: bool = False
    """Resolve the plan and measure nothing: the kernels need not exist yet."""
