"""What `rtgate bisect` is asked to do, as the engine takes it (the command line stops at
rtgate.cli.bisect)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rtgate.errors import InputError

MAX_MIN_EFFECT_PCT = 10000.0
"""The widest margin a bisect step takes (%; a ratio B/A of x101). Wider than the gate's 100 %
(the thresholds' limit, the smallest change worth refusing a pull request for): a bisect hunts
one regression whose size it has already measured, so its steps only need to tell that
regression from no change; on a noisy board a harmless step can end *same* within its cap only
at a wide margin (docs/ab-bisect.md, "The bisect's margin").
"""


@dataclass(frozen=True)
class BisectSettings:
    board: str
    flavor: str
    series: Path
    """A quilt series file; its patches beside it."""
    good: int
    """The first ``good`` patches are good (0: the unpatched kernel)."""
    bad: int | None
    """The first ``bad`` patches are bad; None: the whole series (not an explicit bad end)."""
    scenarios: list[str] | None
    round_duration: int
    max_time: int
    """The time cap of one step's A/B rounds (s)."""
    planned_rounds: int | None
    repeats: int
    """Culprit-against-parent measurements that must all be worse."""
    out: Path
    replay: Path | None
    """Measure nothing: re-decide the bisect whose rounds are in REPLAY/steps/."""
    scale: float | None
    thresholds: Path
    min_effect_pct: float | None
    """Every step's margin (%, in (0, MAX_MIN_EFFECT_PCT]); None: the budgets' ab.min_effect_pct."""
    alpha: float | None
    runtime: str
    """Where the variants' kernels build."""
    trust: str | None
    """The kernel cache's trust domain."""
    dry_run: bool = False
    """Print the resolved plan as YAML and stop: no build, no board."""

    def __post_init__(self) -> None:
        if self.min_effect_pct is not None and not 0 < self.min_effect_pct <= MAX_MIN_EFFECT_PCT:
            raise InputError(f"min_effect_pct {self.min_effect_pct:g}: a bisect step's margin "
                             f"must be in (0, {MAX_MIN_EFFECT_PCT:g}] %")
