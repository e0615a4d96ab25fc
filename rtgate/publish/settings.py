"""What `rtgate publish` is asked (rtgate.cli.publish builds it)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class PublishSettings:
    artifacts: tuple[Path, ...]  # gate-BOARD directories; other names are listed as ignored
    markdown: Path
    thresholds: Path | None = None  # None: thresholds.yml of the data root
    boards: Path | None = None  # None: bench/boards of the data root
    expect: tuple[str, ...] = ()  # none: the context's boards, else every known one found
    scenarios: tuple[str, ...] = ()  # none: the context's, else each board's
    context: Path | None = None  # the gate's run-context artifact
    baseline: Path | None = None  # main's history store, to compare with
    run_url: str | None = None
    junit: Path | None = None
    outcome: Path | None = None
