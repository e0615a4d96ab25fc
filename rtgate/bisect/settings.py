"""What `rtgate bisect` is asked to do, as the engine takes it (the command line stops at
rtgate.cli.bisect)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


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
    alpha: float | None
    runtime: str
    """Where the variants' kernels build."""
    trust: str | None
    """The kernel cache's trust domain."""
