"""``bisect.json`` (schema rtgate/bisect/v1), the document `rtgate bisect` writes, read back.

Whoever publishes a bisect did not necessarily run it: a pull request's bisect ran the PR's
series, so its output is untrusted data. This is the model that reads it: every field typed, the
file's claims consistent with one another (the exit code is the outcome's, the culprit is the
patch of that number, every step names patches of the series) — and nothing more. The outcome
stays the file's claim: no measurement is re-judged here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal, NoReturn

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic_core import PydanticCustomError

from rtgate import jsonfile
from rtgate.errors import Exit, InputError
from rtgate.schemafile import schema_of

SCHEMA_ID = "rtgate/bisect/v1"
SCHEMA_FILE = Path(__file__).parent / "schemas" / "bisect-v1.schema.json"
NAME = "bisect.json"

Outcome = Literal["confirmed", "nothing", "spread", "unconfirmed", "ambiguous", "ends",
                  "unmeasured"]
EXIT_OF: dict[str, Exit] = {
    "confirmed": Exit.BUDGET, "nothing": Exit.OK, "ends": Exit.INPUT,
    "spread": Exit.INCOMPLETE, "unconfirmed": Exit.INCOMPLETE, "ambiguous": Exit.INCOMPLETE,
    "unmeasured": Exit.INCOMPLETE}
# The outcomes that name a patch: confirmed, or the first worse prefix when not confirmed.
WITH_CULPRIT = frozenset({"confirmed", "spread", "unconfirmed"})

PatchNumber = Annotated[int, Field(ge=1)]
Seconds = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Patch(_Model):
    number: PatchNumber
    file: str
    subject: str
    """From the patch's header: written by whoever wrote the patch."""
    author: str


class Detail(BaseModel):
    """Where a step's raw measurement is; the bisect adds what it likes, so others are kept."""

    model_config = ConfigDict(extra="allow")
    ab: str | None = None
    """The step's ab.json (its ab.md beside it), as recorded: a path on the machine that ran it."""
    ab_outcome: str | None = None
    pairs: int | None = Field(None, ge=0)
    elapsed_s: float | None = Field(None, ge=0, allow_inf_nan=False)


class Measurement(_Model):
    outcome: Literal["worse", "same", "better", "unknown", "skip"]
    summary: str
    base_ok: bool = True
    applies: bool = True
    detail: Detail = Field(default_factory=Detail)


class Step(_Model):
    purpose: Literal["ends", "search", "parent", "revert"]
    base: list[PatchNumber]
    cand: list[PatchNumber]
    measurement: Measurement
    seconds: Seconds


class Bisect(_Model):
    schema_: Literal["rtgate/bisect/v1"] = Field(alias="schema")
    series: str
    board: str
    flavor: str
    outcome: Outcome
    why: str
    exit: int
    culprit: PatchNumber | None
    skipped: list[PatchNumber]
    steps: list[Step] = Field(min_length=1)
    elapsed_s: Seconds
    measured_s: Seconds
    patches: list[Patch] = Field(min_length=1)
    culprit_patch: Patch | None

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @model_validator(mode="after")
    def _consistent(self) -> Bisect:
        n = len(self.patches)
        if [p.number for p in self.patches] != list(range(1, n + 1)):
            _inconsistent("patches are not numbered 1, 2, … in order")
        if self.exit != EXIT_OF[self.outcome]:
            _inconsistent(f"exit {self.exit} does not go with outcome {self.outcome} (exit "
                          f"{int(EXIT_OF[self.outcome])})")
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


def _inconsistent(message: str) -> NoReturn:
    # A custom error type: its message is the one-line error as is ("Value error, " otherwise).
    raise PydanticCustomError("inconsistent", "{message}", {"message": message})


def json_schema() -> dict[str, Any]:
    return schema_of(Bisect, SCHEMA_ID)


def load_bisect(path: Path) -> Bisect:
    """Read and validate a bisect.json; any problem is a one-line InputError naming the file."""
    data, got = jsonfile.read(path)
    if got != SCHEMA_ID:
        raise InputError(f"not an rtgate bisect (schema {got!r}, expected {SCHEMA_ID!r})",
                         path=path)
    try:
        return Bisect.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        at = f" at {where}" if where else ""
        raise InputError(f"invalid bisect{at}: {first['msg']}", path=path) from exc
