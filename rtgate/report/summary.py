"""The one-line digest of a run that the history index, the site tables and comparisons share.

Pages that list hundreds of runs read these digests, not the full results, so that a site for a
long history does not load every histogram.
"""

from __future__ import annotations

import hashlib
import re

from pydantic import BaseModel, ConfigDict

from rtgate.gate.thresholds import flavor_of
from rtgate.result import Percentile, Result

_SAFE_DIR = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,80}")


def run_dir_name(run_id: str) -> str:
    """A directory name for a run: the run id when it is a plain name, else a hash of it.

    Run ids come from results anyone can write, so they never reach a path unchecked.
    """
    if _SAFE_DIR.fullmatch(run_id) and ".." not in run_id:
        return run_id
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", run_id).strip(".-")[:40] or "run"
    return f"{slug}-{hashlib.sha256(run_id.encode()).hexdigest()[:12]}"


class RunSummary(BaseModel):
    model_config = ConfigDict(extra="forbid")

    run_id: str
    dir: str
    board: str
    virtual: bool
    flavor: str
    scenario: str
    kernel_release: str | None = None
    start: str | None = None
    status: str
    samples: int
    min_us: float | None = None
    avg_us: float | None = None
    max_us: float | None = None
    p99: Percentile | None = None
    p99_99: Percentile | None = None

    @classmethod
    def of(cls, result: Result) -> RunSummary:
        t = result.totals
        return cls(
            run_id=result.run_id, dir=run_dir_name(result.run_id), board=result.board.name,
            virtual=result.board.virtual, flavor=flavor_of(result), scenario=result.scenario,
            kernel_release=result.kernel.release, start=result.start, status=result.status,
            samples=t.samples, min_us=t.min_us, avg_us=t.avg_us, max_us=t.max_us,
            p99=t.p99, p99_99=t.p99_99)

    @property
    def key(self) -> tuple[str, str, str]:
        """What a trend line and an index row are made of: board × flavor × scenario."""
        return (self.board, self.flavor, self.scenario)

    @property
    def order(self) -> tuple[str, str]:
        """Chronological order; runs without a start time sort first, by id."""
        return (self.start or "", self.run_id)
