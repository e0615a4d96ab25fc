"""The digest of a run: one line of the history index, one row of a site table or comparison."""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict, Field

from rtgate.gate.thresholds import flavor_of
from rtgate.report.provenance import Publication
from rtgate.result import Percentile, Result, profile_of

_SAFE_DIR = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,80}")


def safe_name(text: str) -> str:
    """A file or directory name: the text itself when it is a plain name, else a slug + hash.

    Run ids, board and scenario names come from results anyone can write: never a path unchecked.
    """
    if _SAFE_DIR.fullmatch(text) and ".." not in text:
        return text
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip(".-")[:40] or "run"
    return f"{slug}-{hashlib.sha256(text.encode()).hexdigest()[:12]}"


class ThreadNumbers(BaseModel):
    model_config = ConfigDict(extra="forbid")

    thread: int
    cpu: int | None = None
    samples: int
    min_us: float | None = None
    avg_us: float | None = None
    max_us: float | None = None
    overflows: int = 0


class RunDigest(BaseModel):
    """What a run keeps for the long-term views once its raw files are gone: set when it enters
    the history, with the budget and verdict as judged then (the budget in force at that run)."""

    model_config = ConfigDict(extra="forbid")

    kernel_version: str | None = None
    """``uname -v``: the build number and date tell two builds of one release apart."""
    verdict: str
    """pass, fail, incomplete or "no budget", against the budget below."""
    budget: dict[str, float] = Field(default_factory=dict)
    """The budget's values by metric (max, avg, p99, p99.99), µs."""
    budget_label: str | None = None
    hist: list[tuple[int, int]] = Field(default_factory=list)
    """Every thread's histogram merged on log-spaced bins (report.bins): [lower edge µs, count],
    non-empty bins only; overflows are counted in the bin of the histogram's limit."""
    overflows: int = 0
    limit_us: int | None = None
    threads: list[ThreadNumbers] = Field(default_factory=list)
    """Each thread's numbers, as its run page shows them."""


class RunSummary(BaseModel):
    model_config = ConfigDict(extra="forbid")

    run_id: str
    # One path component, never a way out of the history (an index line is data too).
    dir: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    board: str
    virtual: bool
    flavor: str
    scenario: str
    profile: str = "none"
    """The tuning profile (bench/tuning/); index lines from before profiles are untuned."""
    kernel_release: str | None = None
    start: str | None = None
    status: str
    samples: int
    min_us: float | None = None
    avg_us: float | None = None
    max_us: float | None = None
    p99: Percentile | None = None
    p99_99: Percentile | None = None
    # Set when the run entered a history (index lines written before it existed have none).
    publication: Publication | None = None
    digest: RunDigest | None = None

    @classmethod
    def of(cls, result: Result, publication: Publication | None = None,
           digest: RunDigest | None = None) -> RunSummary:
        t = result.totals
        return cls(
            run_id=result.run_id, dir=safe_name(result.run_id), board=result.board.name,
            virtual=result.board.virtual, flavor=flavor_of(result), scenario=result.scenario,
            profile=profile_of(result),
            kernel_release=result.kernel.release, start=result.start, status=result.status,
            samples=t.samples, min_us=t.min_us, avg_us=t.avg_us, max_us=t.max_us,
            p99=t.p99, p99_99=t.p99_99, publication=publication, digest=digest)

    @property
    def setup(self) -> str:
        """The scenario as measured: ``net``, or ``net@isolated`` on a tuned board, so that
        tuned and untuned runs never share a trend, a row, a comparison or an A/B decision."""
        return self.scenario if self.profile == "none" else f"{self.scenario}@{self.profile}"

    @property
    def key(self) -> tuple[str, str, str]:
        """What a trend line and an index row are made of: board × flavor × scenario (setup)."""
        return (self.board, self.flavor, self.setup)

    @property
    def started(self) -> datetime | None:
        """The start as the board's clock told it (UTC when no zone is given), if readable."""
        try:
            when = datetime.fromisoformat(self.start) if self.start else None
        except ValueError:
            return None
        return when.replace(tzinfo=UTC) if when and when.utcoffset() is None else when

    @property
    def order(self) -> tuple[float, str]:
        """Order by start; runs without a (readable) start time sort first, by id."""
        return (self.started.timestamp() if self.started else 0.0, self.run_id)
