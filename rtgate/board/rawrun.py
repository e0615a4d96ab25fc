"""What a board's run hands to the collect step (rtgate.board.collect): where the raw files
are, what the board reported about itself, and what the controller saw, typed (never a dict).
Everything a driver does differently ends here; collecting, verifying the tuning and making the
run's id are the collect step's alone.

Versioned like result.json; ``make schema`` writes its JSON Schema (rtgate.documents).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from rtgate.board.loadreport import LoadRecord
from rtgate.board.tuning import Profile
from rtgate.harness.environment import Environment, Throttled
from rtgate.harness.plan import Plan
from rtgate.harness.runner import RunLog
from rtgate.result import Load, Status, TuningCheck
from rtgate.schemafile import schema_of

SCHEMA_ID = "rtgate/raw-run/v2"
SCHEMA_FILE = Path(__file__).parent.parent / "schemas" / "raw-run-v2.schema.json"


class _RawRunModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PeerLoad(_RawRunModel):
    """One of the controller's loads (the peer's) as it ended."""

    name: str
    command: list[str]
    early_exit: int | None = None
    """Its exit status when it ended by itself while it should have been running."""
    early_after_s: float | None = None
    died_at: datetime | None = None
    """When rtgate found it dead (a load that died after the measurement is no early exit)."""


class Claims(_RawRunModel):
    """A board's own account of a run it measured itself (rpi5 runs ``rtgate bench``): read,
    never trusted. It lends its loads' records, and its status and reasons can make the
    result's worse, never better; it brings no number."""

    status: Status
    reasons: list[str] = []
    loads: list[Load] = []


class TuningReadings(_RawRunModel):
    """A tuning profile's settings as the board read them back: after boot (already checked),
    during the run (the tasks' affinities) and at its end."""

    profile: Profile
    cpus: int
    """The CPUs the profile was laid out for (its isolated and housekeeping sets)."""
    boot: list[TuningCheck]
    during: dict[str, list[str]]
    end: dict[str, list[str]]
    programs: list[str]
    """The run's loads' task names, to find them among the tasks."""
    root: int | None = None
    """Only this process's descendants are the run's tasks (None: every task on the board)."""


class RawRun(_RawRunModel):
    """What a run left behind on the controller, before the collect step turns it into a
    Result."""

    schema_: Literal["rtgate/raw-run/v2"] = Field(SCHEMA_ID, alias="schema")
    out: Path
    """The run's directory: its raw files are in out/raw/, result.json goes here."""
    board: str
    virtual: bool
    plan: Plan
    """What the board ran, with its raw files' paths where they are now, on the controller."""
    flavor: str | None
    """The kernel's flavor label as asked or built; None: rt or stock, as the kernel says."""
    log: RunLog
    """What the run's runner or script noted (exit statuses, start and end, load averages)."""
    environment: Environment
    """The board's state around the run, as far as the board and the controller know it."""
    cyclictest_version: str
    rtla_version: str | None = None
    job: int | None = None
    """The LAVA job that ran it: the run's id is keyed by it, not by the start time."""
    strict: bool = False
    """The raw files come from a machine that may lie (it runs the kernel under test): they
    are read all together or not at all."""
    loads: list[LoadRecord] = []
    """The board's loads, as its run script noted them (this machine's are in ``log``)."""
    peer_loads: list[PeerLoad] = []
    measured_until: Literal["seen", "result"] = "seen"
    """What ends the measurement for the peer's loads (one that died after it is no early
    exit): the end the controller saw (``log.end``), or the result's own end (a board that
    runs the measurement itself stops its servers after its end, which the controller does
    not see)."""
    claims: Claims | None = None
    throttled: Throttled | None = None
    """The firmware's throttling readings around the run (rpi5), the environment's last key."""
    degraded_by: list[str] = []
    """What the board's own readings say degraded the measurement (the Pi's firmware
    throttling), each a reason of the result."""
    tuning: TuningReadings | None = None


def json_schema() -> dict[str, Any]:
    return schema_of(RawRun, SCHEMA_ID)
