"""What a board's run hands to its collect(): the facts of the run that the raw files in OUT/raw/
do not hold themselves, typed (a board reads them back as written, never cast from a dict).

Versioned like result.json; ``make schema`` writes its JSON Schema (rtgate.documents).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from rtgate.harness.plan import Plan
from rtgate.harness.scenario import LoadSpec
from rtgate.schemafile import schema_of

SCHEMA_ID = "rtgate/raw-run/v1"
SCHEMA_FILE = Path(__file__).parent.parent / "schemas" / "raw-run-v1.schema.json"


class _RawRunModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RunningKernel(_RawRunModel):
    """What the controller reads from the booted board before a run, for the result."""

    release: str
    version: str
    machine: str
    realtime: str | None


class PeerLoad(_RawRunModel):
    """One of the controller's loads (the peer's) as it ended."""

    name: str
    command: list[str]
    early_exit: int | None = None
    """Its exit status when it ended by itself while it should have been running."""
    early_after_s: float | None = None
    died_at: datetime | None = None
    """When rtgate found it dead (a load that died after the measurement is no early exit)."""


class RawRun(_RawRunModel):
    """What a run left behind on the controller, before collect() turns it into a Result."""

    schema_: Literal["rtgate/raw-run/v1"] = Field(SCHEMA_ID, alias="schema")
    out: Path
    scenario: str
    flavor: str | None
    run_id: str
    plan: Plan | None = None
    """What the board ran, as the controller planned it; None for the local bench, which
    writes its own result."""
    start: datetime | None = None
    """When the measurement started and ended, as the controller saw it."""
    end: datetime | None = None
    peer_loads: list[PeerLoad] = []
    board_exit: int | None = None
    """The exit status of ``rtgate bench`` on a board that runs it (rpi5)."""
    cyclictest_version: str | None = None
    """The board's cyclictest, read by the controller (rpi5)."""
    kernel: RunningKernel | None = None
    """The booted kernel, read by the controller (rpi5)."""
    tool_sha256: dict[str, str] = {}
    """The board's tools' digests, checked before the run (rpi5)."""
    board_loads: list[LoadSpec] = []
    """The scenario's loads that ran on the board (rpi5: the tuning check's task names)."""
    privileges: dict[str, str] = {}
    """How the board's bench got its real-time privileges: the trial's reading (rpi5)."""
    throttled: list[int | None] = []
    """The firmware's get_throttled before and after the run (rpi5; None: no vcgencmd)."""


def json_schema() -> dict[str, Any]:
    return schema_of(RawRun, SCHEMA_ID)
