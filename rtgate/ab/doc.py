"""``ab.json`` (schema rtgate/ab/v2): an A/B run's outcome, effects with their intervals, rounds,
looks and alpha spent, as a model with a committed JSON Schema.

v2 (the rule of one primary metric on logs, with margins relative to the baseline): effects are
ratios B/A of geometric means, each key says its primary metric, statistic and boundary, the
margin is a share with its 1 µs floor; v1's µs deltas and list of rejected tests are gone.

Written beside ab.md by `rtgate ab` and by each bisect step. Nobody decides from it: the
publisher and a bisect's replay re-decide from the rounds' result files.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, model_validator
from pydantic_core import PydanticCustomError

from rtgate.ab.loop import ABRun
from rtgate.ab.render import markdown
from rtgate.jsonfile import write_atomic
from rtgate.layout import AB_JSON, AB_MARKDOWN
from rtgate.outcome import AB_EXIT, ABOutcome, Comparison
from rtgate.schemafile import schema_of
from rtgate.stats import ab

SCHEMA_ID = "rtgate/ab/v2"
SCHEMA_FILE = Path(__file__).resolve().parent.parent / "schemas" / "ab-v2.schema.json"
NAME = AB_JSON
MARKDOWN = AB_MARKDOWN

SideName = Literal["A", "B"]
Number = Annotated[int | float, WithJsonSchema({"type": "number"})]
"""A number as the loop computed it: an int stays one (``"alpha_spent": 0`` before any look)."""


class _ABModel(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SideEntry(_ABModel):
    role: Literal["base", "candidate"]
    kernels: str | None
    """DIR/<flavor>/ the side booted; None: the board's running kernel."""
    scenarios: str | None
    """The directory of the side's scenario files; None: bench/scenarios."""


class LookEntry(_ABModel):
    rounds: int = Field(ge=1)
    """Rounds a side at this look."""
    alpha: Number
    """The share of the false-alarm rate this look spent."""
    decisions: dict[str, Comparison]
    """board/flavor/scenario → the look's decision, for each key still open."""


class EffectEntry(_ABModel):
    metric: str
    ratio: Number
    """Geometric mean of the candidate's per-round values over the baseline's."""
    low: Number
    high: Number
    confidence: Number
    """The interval's level at this look (the repeated interval's boundary)."""
    base_geomean_us: Number
    candidate_geomean_us: Number


class BudgetEntry(_ABModel):
    key: str
    source: str
    """file:line of the budget."""
    min_samples_pooled: int | None


class StallEntry(_ABModel):
    """The stall test beside the tail test (rule 3, since 2026-11-28)."""

    threshold_us: Number
    threshold_from: str
    a: list[int]
    """Blocks over the threshold in each of A's rounds."""
    b: list[int]
    p: Number
    """Exact permutation p-value (one-sided: B holds more), the round as the unit."""
    boundary: Number
    """The look's alpha increment of the stall test's share: worse at p at most it."""
    margin: Number
    """Stall blocks a round B may hold beyond A's for same."""
    worse: bool
    same: bool


class KeyEntry(_ABModel):
    board: str
    flavor: str
    scenario: str
    outcome: Comparison
    final: bool
    """Decided for good (not measured again) rather than the latest look's word."""
    rounds: dict[SideName, int]
    key_alpha: Number | None
    """The key's false-alarm rate over all its looks (the run's alpha / keys)."""
    min_effect_pct: Number | None
    margin_ratio: Number | None
    """The margin at this baseline as a ratio B/A: the share, or the 1 µs floor when wider."""
    effects: list[EffectEntry]
    primary_metric: str | None
    """The one metric tested (its effect decides); the others are reported only."""
    statistic: Number | None
    """Student's t of the primary metric's per-round logs."""
    boundary: Number | None
    """The look's critical |t| (exact group-sequential boundary)."""
    reasons: list[str]
    budget: BudgetEntry
    stalls: StallEntry | None = None
    """None: no block maxima in some round, or an ab.json from before the stall test."""


class RoundEntry(_ABModel):
    side: SideName
    round: int = Field(ge=1)
    key: str
    verdict: Literal["ok", "budget", "input", "incomplete", "undecided"]
    """The round judged against its budget (min_samples aside), as `rtgate check` would."""
    wall_s: Number | None
    """Board time of the round; None when re-decided from the results."""
    result: str


class ABDocument(_ABModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    schema_: Literal["rtgate/ab/v2"] = Field(SCHEMA_ID, alias="schema")
    board: str
    outcome: ABOutcome
    exit: int
    why: str
    notes: list[str]
    sides: dict[SideName, SideEntry]
    round_duration_s: int
    max_time_s: int
    elapsed_s: Number | None
    """None when re-decided from the rounds' results."""
    pairs: int = Field(ge=0)
    alpha: Number | None
    rule: str
    spending: str
    planned_rounds: int | None
    alpha_spent: Number
    looks: list[LookEntry]
    effect_reported: str
    decisions: list[KeyEntry]
    rounds: list[RoundEntry]

    @model_validator(mode="after")
    def _consistent(self) -> ABDocument:
        if self.exit != AB_EXIT[self.outcome]:
            # A custom error type: its message is the one-line error as is.
            raise PydanticCustomError(
                "inconsistent", "exit {exit} does not go with outcome {outcome}",
                {"exit": self.exit, "outcome": self.outcome.value})
        return self


def document(run: ABRun) -> ABDocument:
    seq = run.seq
    return ABDocument(
        board=run.spec.name, outcome=run.outcome, exit=int(run.exit), why=run.why,
        notes=run.notes,
        sides={s.name: SideEntry(role=s.role, kernels=str(s.kernels) if s.kernels else None,
                                 scenarios=str(s.scenarios) if s.scenarios else None)
               for s in run.sides},
        round_duration_s=run.settings.round_duration, max_time_s=run.settings.max_time,
        elapsed_s=None if run.elapsed_s is None else round(run.elapsed_s, 1),
        pairs=run.pairs, alpha=seq.alpha if seq else None, rule=ab.RULE, spending=ab.SPENDING,
        planned_rounds=seq.planned if seq else None,
        alpha_spent=seq.alpha_spent if seq else 0.0,
        looks=[LookEntry(rounds=look.rounds, alpha=look.alpha,
                         decisions={"/".join(d.key): d.outcome for d in look.decisions})
               for look in (seq.looks if seq else [])],
        effect_reported=ab.EFFECT_REPORTED,
        decisions=[_key_entry(run, key) for key in run.budgets],
        rounds=[RoundEntry(side=v.side.name, round=v.round, key="/".join(v.key),
                           verdict=v.evaluation.exit.name.lower(),
                           wall_s=None if v.wall_s is None else round(v.wall_s, 1),
                           result=str(v.evaluation.source)) for v in run.verdicts])


def _key_entry(run: ABRun, key: ab.Key) -> KeyEntry:
    d = run.seq.latest(key) if run.seq else None
    budget = run.budgets[key]
    return KeyEntry(
        board=key[0], flavor=key[1], scenario=key[2],
        outcome=d.outcome if d else Comparison.UNKNOWN,
        final=bool(run.seq and key in run.seq.final),
        rounds={"A": len(run.rounds["A"].get(key, [])), "B": len(run.rounds["B"].get(key, []))},
        key_alpha=d.alpha if d else None,
        min_effect_pct=100 * margin.relative if (margin := run.margins.get(key)) else None,
        margin_ratio=d.margin_ratio if d else None,
        effects=[EffectEntry(metric=e.metric, ratio=e.ratio, low=e.low, high=e.high,
                             confidence=e.confidence, base_geomean_us=e.a_geomean_us,
                             candidate_geomean_us=e.b_geomean_us)
                 for e in (d.effects if d else [])],
        primary_metric=d.headline.metric if d and d.headline else None,
        statistic=d.statistic if d else None, boundary=d.boundary if d else None,
        reasons=d.reasons if d else [],
        stalls=StallEntry(threshold_us=st.threshold_us, threshold_from=st.threshold_from,
                          a=list(st.a), b=list(st.b), p=st.p, boundary=st.boundary,
                          margin=st.margin, worse=st.worse, same=bool(st.same))
        if d and (st := d.stalls) else None,
        budget=BudgetEntry(key=budget.label, source=budget.source,
                           min_samples_pooled=budget.min_samples))


def dumps(doc: ABDocument) -> str:
    # Python mode: numbers as they are (JSON mode would write a non-finite one as null).
    return json.dumps(doc.model_dump(by_alias=True), indent=2) + "\n"


def write(run: ABRun, out: Path) -> str:
    """ab.json and ab.md of a run into OUT; ab.md's text."""
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / NAME, dumps(document(run)))
    text = markdown(run)
    write_atomic(out / MARKDOWN, text)
    return text


def json_schema() -> dict[str, Any]:
    return schema_of(ABDocument, SCHEMA_ID)
