"""The normalized result: the one data type that flows between the stages.

Every stage reads and writes ``result.json`` documents of this shape. The JSON Schema committed in
``rtgate/schemas/result-v3.schema.json`` is generated from these models (``make schema``, i.e.
``python -m rtgate.documents``) and a test keeps the two identical. All latencies are
microseconds.

Schema versions only ever add: v2 is v1 plus optional sections and fields with defaults, v3 is
v2 plus what says which numbers are exact and which are bounds (``Histogram.limit_known``,
``samples_relation``), rtla's ``top`` screens and rtla osnoise; ``load_result`` upgrades every
older document it knows (``_UPGRADES``) before validating it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
    model_validator,
)

from rtgate import inputfile, jsonfile
from rtgate.errors import InputError
from rtgate.schemafile import schema_of

SCHEMA_ID = "rtgate/result/v3"
SCHEMA_FILE = Path(__file__).parent / "schemas" / "result-v3.schema.json"

Status = Literal["complete", "partial", "degraded"]
Format = Literal["json", "histogram", "verbose", "summary", "blocks", "timerlat-hist",
                 "timerlat-top", "osnoise-hist", "osnoise-top"]
Context = Literal["irq", "thread", "user", "noise"]
"""rtla timerlat's series: the timer IRQ, the timerlat thread it wakes (kernel thread, or
the kernel side of a user-space one), and the user-space thread's return (``-u``); rtla
osnoise's ``noise``: single noise durations, not wake-up latencies."""
Relation = Literal["=", "<="]
Micros = Annotated[float, Field(ge=0)]
AvgTruncated = Annotated[bool, Field(description=(
    "avg_us is cyclictest's integer average (histogram footer, 'T:' line), cut toward zero: "
    "the true mean lies in [avg_us, avg_us + the result's resolution_us)."))]
RESOLUTION_US = 1.0
"""cyclictest's and rtla's default unit: whole microseconds."""
NSEC_US = 0.001
"""cyclictest -N/--nsecs: nanoseconds."""

SamplesRelation = Annotated[Relation, Field(description=(
    "'<=': samples is an upper bound: rtla timerlat top prints only each CPU's IRQ count, and "
    "its thread (and -u user) activations are at most that many."))]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Percentile(_Model):
    """A percentile of the latency distribution.

    ``relation`` is ``">="`` when the percentile falls among samples that overflowed the histogram:
    the true value is then only known to be at least ``value_us`` (the histogram limit).
    """

    value_us: Micros
    relation: Literal["=", ">="] = "="

    def __str__(self) -> str:
        prefix = "≥" if self.relation == ">=" else ""
        return f"{prefix}{self.value_us:g}"


# A histogram's bounds, so that no reader of a result spends by its range: a latency of ten
# minutes is a machine hung for good (the kernel's hung-task and soft-lockup detectors fire
# within two), and more non-empty bins than cyclictest's own -h limit (a million 1 µs bins)
# are no run. rtla's -b is 1000000 µs at most.
MAX_HISTOGRAM_US = 600_000_000
MAX_BUCKETS = 1_000_000
MAX_BUCKET_US = 1_000_000


EXACT_NS_BITS = 11
"""Log-linear ns bins (``rtgate.stats.histogram.log_linear``): 1 ns wide below 2^11 ns, then
each power of two cut into 2^10 bins."""
Edge = Annotated[int | float, Field(ge=0)]
"""A bin's lower edge or a block's maximum, µs: whole, or to the ns (3 decimals) with -N."""


class Histogram(_Model):
    """A histogram of ``bucket_us``-wide bins (1 µs unless rtla timerlat's ``-b`` said otherwise)
    or of log-linear ns bins (``log_linear``): sparse ``[latency_us, count]`` pairs, each bin's
    lower edge, ascending, zero bins omitted."""

    limit_us: int = Field(ge=1, le=MAX_HISTOGRAM_US, description=(
        "Latencies >= limit_us are counted as overflows; every bin lies below it."))
    limit_known: bool = Field(True, description=(
        "False: the run's limit was not given (an rtla histogram without -E/-b on the command "
        "line or in its prompt; rtla omits empty rows, so they cannot tell it): limit_us is then "
        "the lowest limit the file allows, above every bin and every maximum that did not "
        "overflow, and percentiles among the overflows are lower bounds at it."))
    bucket_us: int = Field(1, ge=1, le=MAX_BUCKET_US, description=(
        "Bin width: a bin [v, v + bucket_us). Percentiles and the standard deviation are only "
        "computed from 1 µs bins."))
    log_linear: bool = Field(False, description=(
        "True: latencies measured in ns (cyclictest -N, rtla -n's 1 ns rows) in HdrHistogram's "
        "bins at 3 significant digits: 1 ns wide below 2.048 µs, above that 1024 bins per power "
        "of two, each lower edge (µs to the ns) within 2^-10 (< 0.1 %) below every latency in "
        "its bin; bucket_us is then 1 and unused. Percentiles are bins' lower edges, as with 1 "
        "µs bins."))
    buckets: list[tuple[Edge, Annotated[int, Field(ge=0)]]] = Field(
        default_factory=list, max_length=MAX_BUCKETS,
        description="Each bin's lower edge is below limit_us, the edges ascending.")
    overflows: int = Field(0, ge=0)
    overflow_cycles: list[int] = Field(
        default_factory=list, max_length=MAX_BUCKETS,
        description="Cycle numbers of (the first reported) overflowing samples.")

    @model_serializer(mode="wrap")
    def _log_linear_when_so(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # µs histograms are written as before the field existed: a result's bytes change only
        # where its bins did.
        data: dict[str, Any] = handler(self)
        if not self.log_linear:
            data.pop("log_linear", None)
        return data

    @model_validator(mode="after")
    def _bins_inside(self) -> Histogram:
        last = -1
        for latency, _ in self.buckets:
            if not (_log_linear_edge(latency) if self.log_linear else
                    float(latency).is_integer()):
                raise ValueError(f"a bin at {latency} µs is no lower edge of this histogram's "
                                 + ("log-linear ns bins" if self.log_linear else "µs bins"))
            if latency >= self.limit_us:
                raise ValueError(f"a bin at {latency} µs, at or above the histogram's limit of "
                                 f"{self.limit_us} µs (such samples are overflows)")
            if latency <= last:
                raise ValueError(f"bins not ascending: {latency} µs after {last} µs")
            last = latency
        return self


def _log_linear_edge(latency_us: float) -> bool:
    ns = round(latency_us * 1000)
    shift = max(0, ns.bit_length() - EXACT_NS_BITS)
    return ns / 1000 == latency_us and ns >> shift << shift == ns


class BlockMaxima(_Model):
    """The maximum latency of each block of ``block_cycles`` consecutive cycles of one thread, in
    order: the time-resolved tail that extreme-value fits and A/B tests need, where one run's
    maximum is a single draw. The last block holds the rest, ``cycles - (len(maxima_us) - 1) *
    block_cycles``: fewer than block_cycles or, rarely, more (by less than one block, when the
    samples cyclictest never printed at exit cross a block boundary). ``cycles`` is how many
    cycles the blocks account for: a complete run's equals the thread's samples, and its largest
    maximum equals the thread's max_us (else samples were lost on the way and the run is
    partial), except when the run ended in a stall longer than the histogram holds: then the
    blocks stop before the block that stall ends, a note says so, and a tail estimate needing
    every block is incomplete."""

    block_cycles: int = Field(ge=1)
    cycles: int = Field(ge=0)
    maxima_us: list[Edge] = Field(default_factory=list)


class Thread(_Model):
    """One measured series: a cyclictest thread, or one rtla timerlat context on one CPU."""

    thread: int = Field(ge=0, description=(
        "cyclictest thread number; for rtla timerlat, the series' column in its histogram"))
    context: Context | None = Field(None, description=(
        "rtla timerlat's context of this series (the CPU is ``cpu``); absent for cyclictest."))
    cpu: int | None = Field(None, description="CPU the thread ran on, when known")
    tid: int | None = None
    priority: int | None = None
    interval_us: int | None = None
    samples: int = Field(ge=0)
    samples_relation: SamplesRelation = "="
    min_us: Micros | None = None
    avg_us: Micros | None = None
    avg_truncated: AvgTruncated = False
    max_us: Micros | None = None
    histogram: Histogram | None = None
    blocks: BlockMaxima | None = None


class Totals(_Model):
    """Statistics over the run's ``threads``: for rtla timerlat, its thread context only."""

    samples: int = Field(ge=0)
    samples_relation: SamplesRelation = "="
    min_us: Micros | None = None
    avg_us: Micros | None = None
    avg_truncated: AvgTruncated = False
    max_us: Micros | None = None
    stddev_us: Micros | None = Field(
        None, description="Absent when no per-sample data or histogram exists.")
    p50: Percentile | None = None
    p99: Percentile | None = None
    p99_9: Percentile | None = None
    p99_99: Percentile | None = None


class Series(_Model):
    """One rtla timerlat context: its series (one per CPU) and their totals."""

    threads: list[Thread]
    totals: Totals


class Noise(_Model):
    """One CPU's line of ``rtla osnoise top``: the noise its measuring thread saw, never a
    wake-up latency. Counts are of noise events by source; ``max_single_us`` is the longest
    single noise, ``max_noise_us`` the most noise in one period."""

    cpu: int = Field(ge=0)
    periods: int = Field(ge=0)
    runtime_us: int = Field(ge=0)
    noise_us: int = Field(ge=0)
    cpu_available_pct: float = Field(ge=0, le=100)
    max_noise_us: int = Field(ge=0)
    max_single_us: int = Field(ge=0)
    hw: int = Field(ge=0)
    nmi: int = Field(ge=0)
    irq: int = Field(ge=0)
    softirq: int = Field(ge=0)
    thread: int = Field(ge=0)


class Kernel(_Model):
    release: str | None = None
    version: str | None = Field(None, description="The kernel version string, as `uname -v`.")
    preempt_rt: bool | None = Field(None, description="Detected from the version string.")
    flavor: str | None = Field(None, description="Build flavor: stock, rt, none, voluntary, ...")
    machine: str | None = None


def is_preempt_rt(version: str | None, realtime: bool | None) -> bool:
    """PREEMPT_RT from the version string (``uname -v``: "#1 SMP PREEMPT_RT ..."). The flag
    /sys/kernel/realtime exists only with the out-of-tree patch: mainline 6.12+ has RT built in
    and no such file, so cyclictest reports ``realtime: 0`` on a real RT kernel."""
    return bool(realtime) or "PREEMPT_RT" in (version or "")


class Board(_Model):
    name: str
    virtual: bool = Field(
        False, description="True for VMs/emulators: their numbers are no real-time claim.")


class Tool(_Model):
    name: str = "cyclictest"
    version: str | None = None
    cmdline: str | None = None


class SourceFile(_Model):
    path: str
    sha256: str
    format: Format


def default_run_id(board: str, scenario: str, start: str | None,
                   sources: Sequence[SourceFile]) -> str:
    """A parsed run's id when none is given. Same inputs, same id: re-parsing a run must not make
    it look like a new one."""
    key = "\n".join([board, scenario, start or "", *sorted(s.sha256 for s in sources)])
    return f"{board}-{scenario}-{hashlib.sha256(key.encode()).hexdigest()[:12]}"


class Load(_Model):
    """A load generator that ran during the measurement (stress-ng, iperf3 …)."""

    name: str
    command: list[str]
    exit_status: int | None = Field(
        None, description="None while running when measurement ended (the normal case).")
    early_exit: bool = False


class TuningCheck(_Model):
    """One setting of a tuning profile, read back on the board."""

    setting: str
    phase: Literal["boot", "run", "end"] = Field(
        description="After boot (before measuring), during the run (affinities), at the end.")
    expected: str
    actual: str
    status: Literal["ok", "failed", "optional"] = Field(
        description="optional: not in effect, but the profile allows that on this board.")


class Tuning(_Model):
    """The tuning profile the board was set up with (bench/tuning/NAME.yml) and its
    verification: a failed check makes the result incomplete."""

    profile: str
    isolated_cpus: str | None = None
    housekeeping_cpus: str | None = None
    boot_args: list[str] = Field(default_factory=list)
    firmware: list[str] = Field(default_factory=list)
    runtime: list[str] = Field(default_factory=list)
    checks: list[TuningCheck] = Field(default_factory=list)


class TraceComponent(_Model):
    """One part of a breach's latency, as the tracer's analysis splits it."""

    name: str = Field(description="e.g. 'IRQ handler delay', 'Blocking thread', 'IRQ latency'")
    us: Micros
    share: float | None = Field(None, description="Percent of the breach's total latency.")


class TraceBreach(_Model):
    """What the tracer saw at one breach: where the time went and who held the CPU."""

    cpu: int | None = None
    kind: Literal["irq", "thread"] = Field(
        description="Whether the timer interrupt or the woken thread crossed the threshold.")
    total_us: Micros
    components: list[TraceComponent] = Field(default_factory=list)
    blocking_task: str | None = Field(None, description="comm:pid of the task that ran instead.")
    stack: list[str] = Field(default_factory=list,
                             description="Kernel stack at the breach, innermost first.")
    tail: list[str] = Field(
        default_factory=list,
        description="The last ftrace entries on the breach's CPU before the stop, oldest first "
                    "(cyclictest breaktrace: the functions and events the tracer recorded): what "
                    "ran there, not a call stack.")


class Trace(_Model):
    """A follow-up run after a breaching measurement, with a tracer armed to stop at the
    threshold (the measurement itself runs untraced): its analysis and raw trace."""

    tool: str = Field(description="'rtla timerlat' or 'cyclictest breaktrace'")
    version: str | None = None
    threshold_us: Micros
    cap_s: int = Field(ge=1, description="The follow-up run's time cap.")
    breached: bool = Field(description="False: it ran the cap out without breaching again.")
    breaches: list[TraceBreach] = Field(default_factory=list)
    raw: list[str] = Field(default_factory=list,
                           description="The tracer's raw outputs, relative to the result.")
    note: str | None = Field(None, description="Why there is no analysis, when there is none.")


class Result(_Model):
    schema_: Literal["rtgate/result/v3"] = Field(SCHEMA_ID, alias="schema")
    run_id: str
    board: Board
    kernel: Kernel
    scenario: str
    tool: Tool
    start: str | None = Field(None, description="ISO 8601 start of measurement")
    end: str | None = Field(None, description="ISO 8601 end of measurement")
    sources: list[SourceFile] = Field(default_factory=list)
    threads: list[Thread]
    totals: Totals
    resolution_us: Literal[0.001, 1.0] = Field(RESOLUTION_US, description=(
        "The unit the tool printed min, avg and max in (threads and totals): 0.001 when "
        "cyclictest (-N/--nsecs) or rtla (-n/--nano) measured in nanoseconds, else 1 µs. "
        "Block maxima are in the same unit; histograms of ns are log-linear "
        "(Histogram.log_linear)."))
    status: Status
    reasons: list[str] = Field(default_factory=list)
    notes: list[str] = Field(
        default_factory=list,
        description="Lines of the input that were kept aside, not read as measurements "
                    "(cyclictest's WARN lines, lines before its output, a trailing shell "
                    "prompt), each with its file and line.")
    loads: list[Load] = Field(default_factory=list)
    environment: dict[str, Any] = Field(default_factory=dict)
    tuning: Tuning | None = Field(
        None, description="Absent: no tuning profile (the board as it boots, profile none).")
    trace: Trace | None = Field(
        None, description="Absent: no trace was taken (no breach, or not asked for).")
    contexts: dict[Context, Series] = Field(
        default_factory=dict,
        description="rtla timerlat: each context's series and totals, never mixed; ``threads`` "
                    "and ``totals`` are the thread context's. Empty for cyclictest.")
    noise: list[Noise] = Field(
        default_factory=list,
        description="rtla osnoise top: each CPU's noise. rtla osnoise is its own tool "
                    "(tool.name 'osnoise'): noise, not wake-up latency, judged by no "
                    "cyclictest or timerlat budget.")

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=True, indent=2, exclude_none=False) + "\n"

    def write(self, path: str | Path) -> Path:
        return jsonfile.write_atomic(Path(path), self.to_json())


def profile_of(result: Result) -> str:
    """The tuning profile a result was measured with; untuned results are ``none``."""
    return result.tuning.profile if result.tuning else "none"


def load_result(path: str | Path) -> Result:
    """Read and validate a result.json; any problem is a one-line InputError naming the file."""
    p = Path(path)
    data, got = jsonfile.read(p, inputfile.RESULT)
    upgrade = _UPGRADES.get(got) if isinstance(data, dict) and isinstance(got, str) else None
    if upgrade is None:
        raise InputError(f"not an rtgate result (schema {got!r}, expected {SCHEMA_ID!r} or an "
                         "older rtgate/result version)", path=p)
    try:
        return Result.model_validate(upgrade(data))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        raise InputError(f"invalid result at {where}: {first['msg']}", path=p) from exc


def _from_v1(data: dict[str, Any]) -> dict[str, Any]:
    """v1 kept cyclictest's integer averages (histogram footer, 'T:' lines) without saying so.
    Such an average is a whole number and comes from a run without a --json source (the JSON's
    two-decimal average wins when both exist): mark those as known to 1 µs only. An exact
    whole-number mean gets marked too, which can only turn a verdict incomplete, never pass it."""
    upgraded = {**data, "schema": SCHEMA_ID}
    sources, threads, totals = data.get("sources", []), data.get("threads"), data.get("totals")
    if not isinstance(sources, list) or any(
            isinstance(s, dict) and s.get("format") == "json" for s in sources):
        return upgraded
    threads = threads if isinstance(threads, list) else []
    cut = [_whole_avg(t) for t in threads]
    if any(cut):
        upgraded["threads"] = [{**t, "avg_truncated": True} if c else t
                               for t, c in zip(threads, cut, strict=True)]
    # The weighted mean of averages each in [avg, avg + 1) lies in [mean, mean + 1) as well.
    if isinstance(totals, dict) and totals.get("avg_us") is not None and (
            any(cut) or _whole_avg(totals)):
        upgraded["totals"] = {**totals, "avg_truncated": True}
    return upgraded


def _whole_avg(stats: Any) -> bool:
    avg = stats.get("avg_us") if isinstance(stats, dict) else None
    return isinstance(avg, int | float) and float(avg).is_integer()


_UPGRADES: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    SCHEMA_ID: lambda data: data,
    # v3 only adds fields whose defaults say what v2 meant (exact samples, known limits).
    "rtgate/result/v2": lambda data: {**data, "schema": SCHEMA_ID},
    "rtgate/result/v1": _from_v1,
}


def json_schema() -> dict[str, Any]:
    return schema_of(Result, SCHEMA_ID)
