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


def build(spec: TimerlatSpec, *, duration_s: int, outdir: str) -> TimerlatCommand:
    """``rtla timerlat hist`` for ``duration_s``, with the scenario's histogram and CPUs.

    ``-k``: kernel timerlat threads, so the series are always the IRQ and the thread context
    (rtla 6.12 otherwise picks user-space threads where the kernel offers them, which adds a
    third). ``--no-aa``: no auto-analysis; a measurement never stops at a threshold (the breach
    tracer is a separate follow-up run, rtgate.breach).
    """
    argv = ["rtla", "timerlat", "hist", "-k", "--no-aa", "-d", f"{duration_s}s",
            "-E", str(spec.entries), "-b", str(spec.bucket_us)]
    if spec.period_us is not None:
        argv += ["-p", str(spec.period_us)]
    if spec.cpus is not None:
        argv += ["-c", spec.cpus]
    return TimerlatCommand(argv, f"{outdir}/{STDOUT}", spec.histogram_us, spec.bucket_us,
                           spec.period_us)
