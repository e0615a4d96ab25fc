"""A board kind's calibration record (schema rtgate/calibration/v2): the gate's error rates as
measured on that kind of board, and the A/B plan they call for.

`rtgate calibrate` writes one from an A/A bank of real rounds; it is kept with the default
branch's lab data (``bench/calibration/<kind>.json``), so a pull request cannot change the plan
or the rates its own verdict is quoted with. The gate's plan reads ``plan``; the results site
shows the rest. A kind without a record is gated with a stated conservative default.

v2 adds each key's bank resolution (``KeyCalibration.resolution_us``); a v1 record reads as
before, its banks in whole µs (every round before cyclictest -N was the default). A record
calibrates rounds at its bank's resolution: finer rounds are floored to it before they are
judged, coarser ones refused by the A/B plan (``rtgate.ab.plan``, docs/statistics.md "A
record's resolution").
"""

from __future__ import annotations

import hashlib
import math
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from rtgate import jsonfile, paths
from rtgate.errors import InputError
from rtgate.result import NSEC_US, RESOLUTION_US
from rtgate.schemafile import schema_of

SCHEMA_ID = "rtgate/calibration/v2"
SCHEMA_V1 = "rtgate/calibration/v1"
SCHEMA_FILE = Path(__file__).resolve().parent / "schemas" / "calibration-v2.schema.json"
DIRECTORY = paths.CALIBRATION


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Rate(_Model):
    """A measured proportion with its interval."""

    events: int | float = Field(ge=0)
    """The events the interval is computed from: for a resampled rate, its share times the
    bank's independent trials (fractional; before 2026-11-28 rounded to a whole number)."""
    trials: int = Field(ge=1)
    """Trials the interval is computed over: the bank's independent units, never the number of
    resamples when resampling makes them look more precise than the bank is (1 for a bank
    smaller than one trial, whose interval is then [0, 1] and whose method says so)."""
    value: float = Field(ge=0, le=1)
    low: float = Field(ge=0, le=1)
    high: float = Field(ge=0, le=1)
    method: str
    """How the interval was computed, e.g. "Clopper-Pearson 95 %"."""


class Power(_Model):
    effect: str
    """The planted change, e.g. "+20%" (every tail metric scaled) or "stalls 3ms x3"."""
    detected: Rate
    """The share of trials that said *worse*."""


class Bounds(_Model):
    """What the rule promises at the record's plan, honest about the bank's size (since
    2026-11-28): its operating characteristics simulated on normal logs whose spread is the
    one-sided upper confidence bound of the bank's log-sd (chi-square on its rounds), the
    standard error floored at the bank's log-sd as the gate floors it, each rate's
    Clopper-Pearson end over the simulated runs; then checked against the bank's own resampled
    replay (modes, tails): the false-alarm rate is the larger of the two, the power and
    P(same) the smaller. They are bounds of that model, not of the board: with two boot modes
    (30 % of boots ×1.23) the false-alarm bound was exceeded in 23 % of claims (`make
    bench-plan-bounds`, docs/statistics.md), and a bank smaller than one independent trial
    cannot check them (``model_check`` then begins "unchecked")."""

    planned: int = Field(ge=1)
    log_sd_high: float = Field(ge=0)
    """The upper confidence bound of the bank's log-sd the rates were simulated at."""
    confidence: float = Field(gt=0, lt=1)
    false_alarm_high: float = Field(ge=0, le=1)
    """The model's upper bound of the key's false-alarm rate (tail test and stall test)."""
    same_low: float = Field(ge=0, le=1)
    """The model's lower bound of P(same within the cap | unchanged)."""
    power_low: float = Field(ge=0, le=1)
    """The model's lower bound of the power at +20 % (the tail test's alone: the stall test
    only adds)."""
    model_check: str
    """What the bank's resampled replay said of the model."""


class KeyCalibration(_Model):
    flavor: str
    scenario: str
    primary_metric: str
    """The pre-registered metric the rule tests for this key."""
    rounds_banked: int = Field(ge=1)
    """Real A/A rounds recorded for this key."""
    cv: float = Field(ge=0)
    """Round-to-round coefficient of variation of the primary metric."""
    log_sd: float | None = Field(None, ge=0)
    """The bank's pooled sd of the primary metric's per-round logs: rule 3's floor under the
    standard error. None (a record before 2026-11-28): taken from ``cv`` as a log-normal's."""
    modes: str | None = None
    """What the bank's test for more than one boot mode found (None: not tested)."""
    stall_threshold_us: float | None = None
    """The stall test's threshold: the q99 of the bank's pooled block maxima (None: no block
    maxima, or a record before 2026-11-28; the gate then takes A's first-look rounds')."""
    resolution_us: Literal[0.001, 1.0] = RESOLUTION_US
    """The bank's rounds' resolution (their results' ``resolution_us``): 0.001 for rounds in
    ns (cyclictest -N), 1.0 in whole µs (every v1 record's). The record's rates, floor and
    stall threshold hold for rounds at this resolution only."""

    @property
    def floor_sd(self) -> float:
        return self.log_sd if self.log_sd is not None else math.sqrt(math.log1p(self.cv ** 2))
    false_alarm: Rate
    """A/A trials that said *worse* or *better*."""
    same_within_cap: Rate
    """A/A trials that decided *same* within the plan's cap."""
    power: list[Power]
    rounds_needed: int | None = Field(ge=1)
    """Rounds a side for alpha <= 1 % and 90 % power at +20 % (since 2026-11-28: the smallest
    plan whose BOUNDS meet them, ``bounds``; before, the replay's point estimates); None: not
    shown (``needed_note`` says why, e.g. "record N more rounds")."""
    minutes_needed: float | None = Field(ge=0)
    """Board minutes those rounds take, reboots included."""
    bounds: Bounds | None = None
    """The rates at the record's plan as bounds (None: a record before 2026-11-28)."""
    rounds_start: float | None = None
    """n ≈ 2((c + z)·s / ln(1 + m))² at the bank's log-sd bound: where the search began."""
    needed_note: str | None = None
    """How ``rounds_needed`` was found, or why the bank cannot show one."""
    more_rounds: int | None = Field(None, ge=1)
    """Rounds to add to the bank so that it could show a plan (None: not needed, or no bank
    size would do)."""


class GatePlan(_Model):
    """What the gate's A/B runs with on this kind of board."""

    round_s: float = Field(gt=0)
    rounds: int = Field(ge=1)
    """Rounds a side the alpha spending is planned for."""
    max_time_s: float = Field(gt=0)


class CalibrationRecord(_Model):
    schema_: Literal["rtgate/calibration/v2", "rtgate/calibration/v1"] = Field(alias="schema")
    kind: str
    """The board kind it holds for (every instance of the kind is gated with it)."""
    measured_on: str
    """The board instance the bank was recorded on."""
    virtual: bool
    """A VM or emulator: its figures say nothing about real hardware."""
    measured_at: datetime
    rtgate_commit: str
    kernel: str
    """Main's kernel the A/A rounds ran (its version and source commit)."""
    rule: str
    """The decision rule replayed, so a record made for another rule is not quoted for this one."""
    replays: int = Field(ge=1)
    """Resampled trials replayed per effect."""
    plan: GatePlan
    keys: list[KeyCalibration]

    @model_validator(mode="after")
    def _v2_states_resolutions(self) -> CalibrationRecord:
        # Only a v1 record may leave it out (its banks were in µs): a v2 one without it would
        # be read as a µs bank whatever it was measured in.
        if self.schema_ == SCHEMA_ID and any("resolution_us" not in k.model_fields_set
                                             for k in self.keys):
            raise ValueError(f"a {SCHEMA_ID} record states every key's resolution_us")
        return self


def json_schema() -> dict[str, Any]:
    return schema_of(CalibrationRecord, SCHEMA_ID)


def load(path: Path) -> CalibrationRecord:
    """Read and validate a calibration record (v2, or v1: banks in whole µs); any problem is a
    one-line InputError naming it."""
    return jsonfile.read_model(path, CalibrationRecord, (SCHEMA_ID, SCHEMA_V1),
                               "calibration record")


def resolution_words(resolution_us: float) -> str:
    """A resolution as the plan and the gate's reasons say it."""
    return "ns (cyclictest -N, rtla -n)" if resolution_us == NSEC_US else "whole µs"


def check_resolution(key: KeyCalibration, measured_us: float, label: str, kind: str) -> None:
    """InputError when rounds at ``measured_us`` are coarser than the record's bank for the key:
    its rates, floor and stall threshold say nothing of them. Finer rounds are floored to the
    bank's resolution, which makes them the data it was banked on (``rtgate.stats.ab.floored``);
    coarser ones cannot be made finer."""
    if measured_us <= key.resolution_us:
        return
    raise InputError(
        f"{label}: measures in {resolution_words(measured_us)}, but the calibration record's "
        f"bank for {key.flavor}/{key.scenario} was measured in "
        f"{resolution_words(key.resolution_us)}: its false-alarm rate, power, standard-error "
        "floor and stall threshold do not hold for these rounds, and no round can be made "
        "finer than it was measured. Re-bank the record at this resolution (`rtgate calibrate "
        f"--board {kind} …`, docs/statistics.md), or measure at the bank's (the scenario's "
        "cyclictest.nsecs or timerlat.nsecs)",
        path=paths.shown(DIRECTORY / f"{kind}.json"))


def for_kind(kind: str, directory: Path = DIRECTORY) -> CalibrationRecord | None:
    """The kind's record from the lab data, None when it has none."""
    path = directory / f"{kind}.json"
    return load(path) if path.exists() else None


def sha256_of(path: Path) -> str:
    """The record's sha256 as the gate's plan job states it (``sha256sum``)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()
