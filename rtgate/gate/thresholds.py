"""Budgets (``thresholds.yml``, schema ``rtgate/thresholds/v3``; v2 still read) and how one is
chosen.

Each budget names a board, a kernel flavor and a scenario, any of them ``"*"``. For a result, the
matching budget with the most specific key wins; specificity weighs the board above the flavor
above the scenario (an exact board beats any flavor/scenario, then an exact flavor beats an exact
scenario). Two budgets with the same key are refused when the file is loaded, so the choice is
never ambiguous. The winning budget applies whole: fields are not inherited from wider budgets.

A budget also names the measuring tool (``tool``, default ``cyclictest``; any of rtgate.tools),
matched exactly and never by a wildcard: rtla timerlat's thread latency and cyclictest's are
different quantities, so one tool's numbers are never judged by the other's budget. A file without
``tool`` means every budget in it is cyclictest's. A budget bounds only its tool's metrics
(``MeasuringTool.metrics``): wake-up latency (``max_us``, required, ``avg_us``, ``p99_us``,
``p9999_us``, ``pwcet_us``) or OS noise (rtla osnoise: ``max_single_noise_us``,
``min_cpu_available_pct``, at least one). v3 added the OS noise metrics and any tool's name; a v2
file is read as before.

The tail budget (``pwcet_us``) and the A/B test's parameters (``ab``) are optional blocks. v2
changed the meaning of ``ab``: its minimum effect is a share of the baseline
(``min_effect_pct``), where v1's ``min_effect_pct`` was a fixed number of µs that hid a 20 %
shift of any tail below five times it. A v1 file is refused with one line saying so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    StringConstraints,
    ValidationError,
    model_validator,
)

from rtgate import inputfile, paths, tools
from rtgate.board.spec import board_kind
from rtgate.result import Result, profile_of
from rtgate.schemafile import schema_of
from rtgate.yamlsource import YamlDocument, load_yaml

SCHEMA_ID = "rtgate/thresholds/v3"
SCHEMA_V2 = "rtgate/thresholds/v2"
SCHEMA_FILE = Path(__file__).resolve().parent.parent / "schemas" / "thresholds-v3.schema.json"
# What v2 knew: its files may name these tools and bound these metrics only.
_V2_TOOLS = ("cyclictest", "timerlat")
WILDCARD = "*"

Name = Annotated[str, StringConstraints(pattern=r"^(\*|[a-z0-9][a-z0-9._-]*)$")]
Flavor = Literal["stock", "rt", "none", "voluntary", "preempt", "*"]
ToolName = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9-]*$")]
Micros = Annotated[float, Field(gt=0)]
Percent = Annotated[float, Field(gt=0, le=100)]
Probability = Annotated[float, Field(gt=0, lt=1)]

# The budget fields that bound a tool's metric (each some tool's Metric.name).
METRIC_FIELDS = ("max_us", "avg_us", "p99_us", "p9999_us", "pwcet_us", "max_single_noise_us",
                 "min_cpu_available_pct")

# Specificity weights: powers of two, so a more important exact field outweighs all lesser ones.
_WEIGHTS = (8, 4, 2, 1)


class PwcetBudget(BaseModel):
    """A budget on the tail: the latency exceeded with probability ``per_hour`` per hour of run."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    per_hour: Probability = Field(description=(
        "Exceedance probability per hour of operation the pWCET is estimated at, e.g. 1.0e-9. "
        "YAML 1.1 reads 1e-9 (no dot) as a string: write 1.0e-9."))
    max: Micros = Field(description=(
        "The pWCET's upper confidence bound must be <= this to pass; its lower bound above it "
        "fails; in between the result is incomplete (measure more)."))


class AbBudget(BaseModel):
    """Parameters of the A/B test of a candidate kernel against the base kernel on the board."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    min_effect_pct: Annotated[float, Field(gt=0, le=100)] = Field(description=(
        "Smallest change worth reporting, in % of the baseline's primary tail metric (never "
        "finer than the histogram's 1 µs); also the equivalence margin: 'same' means the "
        "effect's interval lies within ± this."))
    alpha: Annotated[float, Field(gt=0, le=0.5)] = Field(0.01, description=(
        "False-alarm rate per pull-request check, across all its comparisons."))


class Budget(BaseModel):
    """The latency budget for one board × flavor × scenario pattern."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    board: Name = Field(description='Board name (bench/boards/NAME.yml) or "*".')
    flavor: Flavor = Field(description='Kernel flavor of the result or "*".')
    scenario: Name = Field(description='Scenario name (bench/scenarios/NAME.yml) or "*".')
    profile: Name = Field(WILDCARD, description=(
        'Tuning profile of the result (bench/tuning/NAME.yml; untuned results are "none") or '
        '"*", the default: weighs least when budgets are chosen.'))
    tool: ToolName = Field("cyclictest", description=(
        "The measuring tool whose results this budget judges (the result's tool.name; a tool "
        'of rtgate.tools); never a wildcard. "timerlat": rtla timerlat, judged on the context '
        'named by `context`. "osnoise": rtla osnoise, OS noise (its own metrics only).'))
    context: Literal["thread", "user", "irq"] = Field("thread", description=(
        "rtla timerlat only: the context judged (thread, the default; user: the -u workload's "
        "wake-ups; irq: the timer interrupt). A result without that context is incomplete."))
    max_us: Micros | None = Field(None, description=(
        "Worst observed latency must be <= this. Required for a wake-up latency tool "
        "(cyclictest, timerlat); no other tool's."))
    avg_us: Micros | None = Field(None, description=(
        "Mean latency must be <= this. Optional: an emulated board's average measures the "
        "host's speed and load, not the kernel."))
    p99_us: Micros | None = Field(None, description="99th percentile must be <= this.")
    p9999_us: Micros | None = Field(None, description="99.99th percentile must be <= this.")
    min_samples: int | None = Field(
        None, ge=1, description="Fewer samples than this make the result incomplete (exit 3).")
    pwcet_us: PwcetBudget | None = Field(
        None, description="Budget on the estimated tail (pWCET at an exceedance rate per hour).")
    max_single_noise_us: Micros | None = Field(None, description=(
        "OS noise (rtla osnoise) only: the longest single noise on any CPU must be <= this."))
    min_cpu_available_pct: Percent | None = Field(None, description=(
        "OS noise (rtla osnoise) only: the % of CPU time left to the workload must be >= this "
        "on every CPU."))
    ab: AbBudget | None = Field(
        None, description="A/B test of the candidate kernel against the base kernel.")
    reason: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)] = Field(
        description="Where the numbers come from and the margin chosen.")

    _source: str = PrivateAttr("")

    @model_validator(mode="after")
    def _the_tools_own(self) -> Budget:
        """The tool exists, and the budget names only its contexts and bounds only its
        metrics (never another kind of number)."""
        if self.tool not in tools.names():
            raise ValueError(f"unknown tool {self.tool!r} (known: {', '.join(tools.names())})")
        tool = tools.get(self.tool)
        if self.context != "thread" and self.context not in tool.contexts:
            raise ValueError(f"context {self.context!r} is not one of {self.tool}'s (tool: "
                             f"{self.tool!r})")
        own = {m.name for m in tool.metrics}
        bounded = {name for name in METRIC_FIELDS if getattr(self, name) is not None}
        if strays := sorted(bounded - own):
            raise ValueError(f"{', '.join(strays)}: not a metric of {self.tool} ({tool.measures}"
                             f": {', '.join(m.name for m in tool.metrics)})")
        if self.min_samples is not None and tool.measures != "wake-up latency":
            raise ValueError(f"min_samples: {self.tool} counts no samples ({tool.measures}); "
                             "a run cut short is incomplete by its duration")
        required = [m.name for m in tool.metrics][:1] if tool.measures == "wake-up latency" \
            else [m.name for m in tool.metrics]
        if not bounded & set(required):
            raise ValueError(f"a budget for {self.tool} bounds "
                             + (required[0] if len(required) == 1
                                else "at least one of " + ", ".join(required)))
        return self

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.board, self.flavor, self.scenario, self.profile)

    @property
    def label(self) -> str:
        tuned = "" if self.profile == WILDCARD else f"@{self.profile}"
        tool = "" if self.tool == "cyclictest" else f" ({self.tool})"
        return "/".join(self.key[:3]) + tuned + tool

    @property
    def source(self) -> str:
        """``FILE:LINE`` of the budget, for reports that must say which rule judged a result."""
        return self._source

    def matches(self, board: str, flavor: str, scenario: str, profile: str = "none",
                tool: str = "cyclictest") -> bool:
        return self.tool == tool and all(
            mine in (WILDCARD, theirs) for mine, theirs in
            zip(self.key, (board, flavor, scenario, profile), strict=True))

    @property
    def specificity(self) -> int:
        return sum(w for w, part in zip(_WEIGHTS, self.key, strict=True) if part != WILDCARD)


class Thresholds(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)

    schema_: Literal["rtgate/thresholds/v3", "rtgate/thresholds/v2"] = Field(alias="schema")
    budgets: list[Budget] = Field(min_length=1)

    @model_validator(mode="after")
    def _v2_as_it_was(self) -> Thresholds:
        if self.schema_ == SCHEMA_V2:
            for i, b in enumerate(self.budgets):
                if b.tool not in _V2_TOOLS or b.max_us is None:
                    raise ValueError(f"budgets.{i}: {b.tool}'s budgets need schema "
                                     f"{SCHEMA_ID!r} (v2 knew {' and '.join(_V2_TOOLS)}, and "
                                     "required max_us)")
        return self

    def select(self, board: str, flavor: str, scenario: str, profile: str = "none",
               tool: str = "cyclictest") -> Budget | None:
        """The most specific budget matching the names, or None when none does."""
        matching = [b for b in self.budgets
                    if b.matches(board, flavor, scenario, profile, tool)]
        return max(matching, key=lambda b: b.specificity, default=None)

    def for_result(self, result: Result, boards: Path) -> Budget | None:
        """The budget of the result's board's kind, as the board files in ``boards`` say
        (rpi5-b, kind: rpi5, is judged as rpi5; a board with no file there is its own kind)."""
        return self.select(board_kind(result.board.name, boards), flavor_of(result),
                           result.scenario,
                           profile_of(result), result.tool.name)


def flavor_of(result: Result) -> str:
    """The kernel flavor a result is judged as: its own, else derived from the RT flag."""
    if result.kernel.flavor:
        return result.kernel.flavor
    return "rt" if result.kernel.preempt_rt else "stock"


def thresholds_file(given: Path | None) -> Path:
    """The file named, else the data root's, which must then exist (paths.require)."""
    return given or paths.require(paths.THRESHOLDS, "--thresholds FILE")


def load_thresholds(path: str | Path = paths.THRESHOLDS) -> Thresholds:
    """Load and validate a thresholds file; any problem is an InputError naming file and line."""
    doc = load_yaml(path, inputfile.THRESHOLDS)
    _check_schema(doc)
    try:
        thresholds = Thresholds.model_validate(doc.data)
    except ValidationError as exc:
        raise doc.validation_error(exc) from exc
    seen: dict[tuple[str, ...], int] = {}
    for i, budget in enumerate(thresholds.budgets):
        line = doc.line_of(("budgets", i))
        key = (*budget.key, budget.tool)
        if key in seen:
            raise doc.error(f"budgets.{i}: a second budget for {budget.label} "
                            f"(first at line {seen[key]})", ("budgets", i))
        seen[key] = line
        budget._source = f"{doc.path}:{line}"
    return thresholds


def _check_schema(doc: YamlDocument) -> None:
    """Refuse other schema versions before validating fields whose meaning may have changed."""
    if not isinstance(doc.data, dict):
        raise doc.error(f"expected a mapping with 'schema: {SCHEMA_ID}' and 'budgets'")
    if "schema" not in doc.data:
        raise doc.error(f"missing 'schema: {SCHEMA_ID}'")
    if doc.data["schema"] not in (SCHEMA_ID, SCHEMA_V2):
        moved = (": v2 states the A/B minimum effect as a share, ab.min_effect_pct"
                 if doc.data["schema"] == "rtgate/thresholds/v1" else "")
        raise doc.error(f"unsupported schema {doc.data['schema']!r} (this rtgate reads "
                        f"{SCHEMA_ID!r} and {SCHEMA_V2!r}{moved})", ("schema",))


def json_schema() -> dict[str, Any]:
    return schema_of(Thresholds, SCHEMA_ID)
