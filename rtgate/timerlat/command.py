"""From a scenario's ``timerlat:`` block to the ``rtla timerlat hist`` command line.

Pure, like the cyclictest builder: the argv is a list of strings valid where rtla runs (a guest).
rtla is the one rtgate builds from the trusted kernel source (rtgate.trace.rtla, 6.12).
"""

from __future__ import annotations

from dataclasses import dataclass

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
"""The widest histogram rtla -n counts in 1 ns rows. With -n rtla counts -b in ns (kernel
tools/tracing/rtla/src/timerlat_hist.c, 6.12: '-n' sets output_divisor to 1, and
timerlat_hist_update() bins latency / output_divisor by bucket_size), so 1 ns bins need -E 1000
per µs of limit. rtla formats every row it allocated after the run (an empty one is formatted,
then dropped): 21-30 µs a row in the qemu-arm64 guest (TCG, 2 vCPUs), several times that on a
loaded host (docs/journal.md, 2026-11-28), where a 10 s run of 200 µs of rows came within 2 s of
the hang guard. A scenario whose histogram_us fits keeps 1 ns rows; a wider one runs -n -b 1000:
the exact ns min/avg/max with its full range of 1 µs bins, as many rows as in µs (never a
histogram cut to 100 µs, where a TCG guest's samples mostly overflow)."""


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
                          "avg and max to the ns; with 1 µs bins and histogram_us up to "
                          f"{NANO_HISTOGRAM_US} the histogram counts 1 ns rows (log-linear in "
                          "the result; rtla formats every row it allocates), a wider "
                          "histogram or wider bins keep their µs bins. False: whole µs, as "
                          "rtla prints by default.")

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


def build(spec: TimerlatSpec, *, duration_s: int, outdir: str) -> TimerlatCommand:
    """``rtla timerlat hist`` for ``duration_s``, with the scenario's histogram and CPUs.

    ``-k``: kernel timerlat threads, so the series are always the IRQ and the thread context
    (rtla 6.12 otherwise picks user-space threads where the kernel offers them, which adds a
    third). ``--no-aa``: no auto-analysis; a measurement never stops at a threshold (the breach
    tracer is a separate follow-up run, rtgate.breach). ``-n`` (``nsecs``): -E and -b count ns
    (see NANO_HISTOGRAM_US).
    """
    entries, bucket, bucket_ns = spec.entries, spec.bucket_us, None
    if spec.nsecs:
        fine = spec.bucket_us == 1 and spec.histogram_us <= NANO_HISTOGRAM_US
        bucket_ns = 1 if fine else spec.bucket_us * 1000
        entries, bucket = spec.histogram_us * 1000 // bucket_ns, bucket_ns
    argv = ["rtla", "timerlat", "hist", "-k", "--no-aa", "-d", f"{duration_s}s",
            *(["-n"] if spec.nsecs else []), "-E", str(entries), "-b", str(bucket)]
    if spec.period_us is not None:
        argv += ["-p", str(spec.period_us)]
    if spec.cpus is not None:
        argv += ["-c", spec.cpus]
    return TimerlatCommand(argv, f"{outdir}/{STDOUT}", spec.histogram_us, spec.bucket_us,
                           spec.period_us, bucket_ns)
