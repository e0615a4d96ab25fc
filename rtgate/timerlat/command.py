"""From a scenario's ``timerlat:`` block to the ``rtla timerlat hist`` command line.

Pure, like the cyclictest builder: the argv is a list of strings valid where rtla runs (a guest).
rtla is the one rtgate builds from the trusted kernel source (rtgate.trace.rtla, 6.12).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field, model_validator

TOOL = "timerlat"
"""The tool's name in scenarios (``tool: timerlat``), results (``tool.name``) and budgets."""
STDOUT = "timerlat.stdout"
"""The raw file holding rtla's histogram, in the run's raw directory."""
DEFAULT_PERIOD_US = 1000
"""rtla timerlat's timer period without -p."""
# rtla's limits on -E (entries per histogram).
MIN_ENTRIES, MAX_ENTRIES = 10, 9_999_999
NANO_HISTOGRAM_US = 100
"""With -n/--nano rtla counts -b in ns (kernel tools/tracing/rtla/src/timerlat_hist.c, 6.12:
'-n' sets output_divisor to 1, and timerlat_hist_update() bins latency / output_divisor by
bucket_size), so 1 ns bins need -E 1000 per µs of limit. rtla prints every row it allocated
(an empty one is formatted, then dropped) after the run: 21-30 µs a row in the qemu-arm64 guest
(TCG, 2 vCPUs), several times that on a loaded host (docs/journal.md, 2026-11-28), where a
10 s run of 200 µs of rows came within 2 s of the hang guard. 100 µs holds the tails ns matter
for (a PREEMPT_RT Pi 5's p99.99 under stress-ng: about 9 µs); above it samples are overflows (a
percentile among them a lower bound at it), the maximum stays exact."""


class TimerlatSpec(BaseModel):
    """The ``timerlat:`` block of a scenario (read only with ``tool: timerlat``)."""

    model_config = ConfigDict(extra="forbid")

    histogram_us: int = Field(
        20000, ge=1, le=10_000_000,
        description="Histogram limit: latencies at or above it count as overflows ('over:').")
    bucket_us: int = Field(
        1, ge=1, lt=1_000_000,
        description="Bin width (rtla -b). Percentiles need 1 µs bins: wider ones leave them "
                    "absent, and a budget on them incomplete.")
    period_us: int | None = Field(
        None, ge=1, le=1_000_000, description="Timer period (rtla -p); default rtla's 1000 µs.")
    cpus: str | None = Field(
        None, pattern=r"^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$",
        description="CPU list to measure on (rtla -c); default every CPU.")
    nsecs: bool = Field(
        True, description="Measure in nanoseconds (rtla -n/--nano), as cyclictest.nsecs: min, "
                          "avg and max to the ns; with 1 µs bins the histogram counts 1 ns "
                          f"rows up to {NANO_HISTOGRAM_US} µs at most (log-linear in the "
                          "result; rtla prints every row it counts), wider bins keep their "
                          "µs. False: whole µs, as rtla prints by default.")

    @model_validator(mode="after")
    def _entries(self) -> TimerlatSpec:
        if self.histogram_us % self.bucket_us:
            raise ValueError(f"histogram_us {self.histogram_us} is not a multiple of bucket_us "
                             f"{self.bucket_us}")
        if not MIN_ENTRIES <= self.entries <= MAX_ENTRIES:
            raise ValueError(f"histogram_us / bucket_us = {self.entries} bins; rtla takes "
                             f"{MIN_ENTRIES} to {MAX_ENTRIES}")
        return self

    @property
    def entries(self) -> int:
        return self.histogram_us // self.bucket_us


@dataclass(frozen=True)
class TimerlatCommand:
    argv: list[str]
    stdout: str
    """Where rtla's output goes (``outdir/timerlat.stdout``)."""
    limit_us: int
    bucket_us: int
    period_us: int | None
    bucket_ns: int | None = None
    """rtla -n: its -b, in ns (1 ns bins, or ``bucket_us`` × 1000)."""
    notes: list[str] = field(default_factory=list)


def build(spec: TimerlatSpec, *, duration_s: int, outdir: str) -> TimerlatCommand:
    """``rtla timerlat hist`` for ``duration_s``, with the scenario's histogram and CPUs.

    ``-k``: kernel timerlat threads, so the series are always the IRQ and the thread context
    (rtla 6.12 otherwise picks user-space threads where the kernel offers them, which adds a
    third). ``--no-aa``: no auto-analysis; a measurement never stops at a threshold (the breach
    tracer is a separate follow-up run, rtgate.breach). ``-n`` (``nsecs``): -E and -b count ns
    (see NANO_HISTOGRAM_US).
    """
    limit_us, entries, bucket, notes = spec.histogram_us, spec.entries, spec.bucket_us, []
    bucket_ns = None
    if spec.nsecs:
        bucket_ns = 1 if spec.bucket_us == 1 else spec.bucket_us * 1000
        if spec.bucket_us == 1 and limit_us > NANO_HISTOGRAM_US:
            notes.append(f"rtla -n counts 1 ns rows up to {NANO_HISTOGRAM_US} µs, not "
                         f"timerlat.histogram_us {limit_us}: latencies above are overflows "
                         "(their maximum exact)")
            limit_us = NANO_HISTOGRAM_US
        entries, bucket = limit_us * 1000 // bucket_ns, bucket_ns
    argv = ["rtla", "timerlat", "hist", "-k", "--no-aa", "-d", f"{duration_s}s",
            *(["-n"] if spec.nsecs else []), "-E", str(entries), "-b", str(bucket)]
    if spec.period_us is not None:
        argv += ["-p", str(spec.period_us)]
    if spec.cpus is not None:
        argv += ["-c", spec.cpus]
    return TimerlatCommand(argv, f"{outdir}/{STDOUT}", limit_us, spec.bucket_us,
                           spec.period_us, bucket_ns, notes)
