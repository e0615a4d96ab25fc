"""``context.json``: what the gate workflow's trusted plan job recorded about a run, with the
A/B plan of each board it measured so."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    model_validator,
)

from rtgate import inputfile
from rtgate.errors import InputError

Name = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9._-]*$", max_length=64)]


class ABPlan(BaseModel):
    """The A/B plan of one board as the gate's plan job gave it to `rtgate ab`: the board
    kind's calibration record's plan (with the record's sha256), else latency-gate.yml's
    conservative default for a kind without one (with a note saying so)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    round_s: int = Field(ge=1)
    max_time_s: int = Field(ge=1)
    rounds: int = Field(ge=3)
    """Rounds a side the alpha spending plans for (``rtgate ab --planned-rounds``)."""
    calibration_sha256: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")] | None = None
    """The calibration record the plan came from; its primary metrics decide the replay."""
    note: Annotated[str, StringConstraints(max_length=500)] | None = None
    flavors: list[Name] = []
    """The flavors the A/B measured: the record's keys', or GATE_AB's; empty (a plan before
    2026-11-28): the board's own."""
    scenarios: list[Name] = []
    """The scenarios: the record's keys' (its rates and cap are for those); empty: the run's."""


class Context(BaseModel):
    """What the gate workflow's own (GitHub-hosted, trusted) plan job recorded about the run."""

    model_config = ConfigDict(extra="forbid", strict=True)

    event: Name
    head_sha: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{40}$")]
    pull_request: int | None = Field(None, ge=1)
    boards: list[Name] = Field(min_length=1)
    scenarios: list[Name] = []
    # Paths the pull request changes among the gate's inputs (never applied, only shown).
    changed_inputs: list[Annotated[str, StringConstraints(max_length=4096)]] = []
    # Boards measured A/B (main's kernel against the pull request's), with the gate's plan.
    ab: dict[Name, ABPlan] = {}
    # False: the pull request's base...head diff touches no kernel/patches or kernel/configs
    # file (the plan job's own git diff), so the gate measured nothing. Absent: measured.
    kernel_inputs_changed: bool = True

    @model_validator(mode="after")
    def _unchanged_is_a_pull_requests(self) -> Context:
        if not self.kernel_inputs_changed and self.event != "workflow_run":
            raise ValueError("kernel_inputs_changed: false names a pull request's gate "
                             f"(event workflow_run), not a {self.event} run")
        return self


def load_context(directory: Path) -> tuple[Context, Path | None]:
    """context.json of the run, and the pull request's thresholds.yml when it changed one."""
    path = directory / "context.json"
    try:
        context = Context.model_validate_json(inputfile.read_bytes(path, inputfile.DOCUMENT))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "document"
        raise InputError(f"{where}: {first['msg']}", path=path) from exc
    theirs = directory / "thresholds.yml"
    return context, theirs if theirs.is_file() and not theirs.is_symlink() else None
