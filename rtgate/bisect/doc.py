"""``bisect.json`` (schema rtgate/bisect/v1): the one model of what a bisect found, written by
`rtgate bisect` and read back by whoever publishes it; and the words for a variant.

Whoever publishes a bisect did not necessarily run it: a pull request's bisect ran the PR's
series, so its output is untrusted data. Read back, every field is typed and the file's claims
consistent with one another (the exit code is the outcome's, the culprit is the patch of that
number, every step names patches of the series) — and nothing more. The outcome stays the file's
claim: no measurement is re-judged here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal, NoReturn

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

from rtgate import jsonfile
from rtgate.outcome import BISECT_EXIT, WITH_CULPRIT, BisectOutcome, StepOutcome
from rtgate.schemafile import schema_of

SCHEMA_ID = "rtgate/bisect/v1"
SCHEMA_FILE = Path(__file__).parents[1] / "schemas" / "bisect-v1.schema.json"
NAME = "bisect.json"
MARKDOWN = "bisect.md"

Variant = tuple[int, ...]
"""The patch numbers (from 1) a kernel carries, ascending."""


def prefix(k: int) -> Variant:
    return tuple(range(1, k + 1))


def label(v: Variant, n: int) -> str:
    """1-5, 1-7 without 5, none."""
    if not v:
        return "none"
    missing = [p for p in range(1, max(v) + 1) if p not in v]
    span = f"1-{max(v)}" if max(v) > 1 else "1"
    return span + (f" without {', '.join(map(str, missing))}" if missing else "")


PatchNumber = Annotated[int, Field(ge=1)]
Seconds = Annotated[float, Field(ge=0, allow_inf_nan=False)]


def _unset(value: object) -> bool:
    return value is None


class _BisectModel(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NamedPatch(_BisectModel):
    """A patch of the series, named as its header names it."""

    number: PatchNumber
    file: str
    subject: str
    """From the patch's header: written by whoever wrote the patch."""
    author: str


class Detail(BaseModel):
    """Where a step's raw measurement is: what the step recorded, written in this order."""

    model_config = ConfigDict(extra="allow")
    step: str | None = Field(None, exclude_if=_unset)
    """The step's directory, when re-decided from its rounds (``--replay``)."""
    ab: str | None = Field(None, exclude_if=_unset)
    """The step's ab.json (its ab.md beside it), as recorded: a path on the machine that ran it."""
    elapsed_s: float | None = Field(None, ge=0, allow_inf_nan=False, exclude_if=_unset)
    ab_outcome: str | None = Field(None, exclude_if=_unset)
    pairs: int | None = Field(None, ge=0, exclude_if=_unset)


class StepMeasurement(_BisectModel):
    """What one step says of its candidate against its base."""

    outcome: StepOutcome
    summary: str
    """One line for the evidence table: the effect and its interval, or why it was skipped."""
    base_ok: bool = True
    """The base's own rounds were within their budget."""
    applies: bool = True
    """False when skipped because a patch of the candidate did not apply."""
    detail: Detail = Field(default_factory=Detail)


Purpose = Literal["ends", "search", "parent", "revert"]


class Step(_BisectModel):
    purpose: Purpose
    base: tuple[PatchNumber, ...]
    cand: tuple[PatchNumber, ...]
    measurement: StepMeasurement
    seconds: Seconds


class BisectDoc(_BisectModel):
    schema_: Literal["rtgate/bisect/v1"] = Field(alias="schema")
    series: str
    board: str
    flavor: str
    outcome: BisectOutcome
    why: str
    exit: int
    culprit: PatchNumber | None
    skipped: list[PatchNumber]
    steps: list[Step] = Field(min_length=1)
    elapsed_s: Seconds
    measured_s: Seconds
    patches: list[NamedPatch] = Field(min_length=1)
    culprit_patch: NamedPatch | None

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @model_validator(mode="after")
    def _consistent(self) -> BisectDoc:
        n = len(self.patches)
        if [p.number for p in self.patches] != list(range(1, n + 1)):
            _inconsistent("patches are not numbered 1, 2, … in order")
        if self.exit != BISECT_EXIT[self.outcome]:
            _inconsistent(f"exit {self.exit} does not go with outcome {self.outcome} (exit "
                          f"{int(BISECT_EXIT[self.outcome])})")
        if (self.culprit is not None) != (self.outcome in WITH_CULPRIT):
            _inconsistent(f"outcome {self.outcome} with culprit {self.culprit}")
        if self.culprit is not None and (
                self.culprit > n or self.culprit_patch != self.patches[self.culprit - 1]):
            _inconsistent(f"culprit_patch is not patch {self.culprit} of the patches")
        if self.culprit is None and self.culprit_patch is not None:
            _inconsistent("a culprit_patch without a culprit")
        numbers = [*self.skipped, *(p for s in self.steps for p in (*s.base, *s.cand))]
        if any(k > n for k in numbers):
            _inconsistent(f"a step or skipped prefix names a patch outside 1..{n}")
        return self

    def to_json(self) -> dict[str, Any]:
        """The document as written: the field order and the values of the first bisect.json."""
        return self.model_dump(mode="json", by_alias=True)


def _inconsistent(message: str) -> NoReturn:
    # A custom error type: its message is the one-line error as is ("Value error, " otherwise).
    raise PydanticCustomError("inconsistent", "{message}", {"message": message})


def json_schema() -> dict[str, Any]:
    return schema_of(BisectDoc, SCHEMA_ID)


def load_bisect(path: Path) -> BisectDoc:
    """Read and validate a bisect.json; any problem is a one-line InputError naming the file."""
    return jsonfile.read_model(path, BisectDoc, SCHEMA_ID, "bisect")
