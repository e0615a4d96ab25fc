"""What `rtgate pipeline` and `rtgate sweep` are asked (rtgate.cli builds them)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

MODELS = ("none", "voluntary", "full", "rt")
"""The preemption models a sweep measures."""
STATIC_FLAVOR = {"none": "none", "voluntary": "voluntary", "full": "preempt", "rt": "rt"}
"""Each model's compiled-in build (``--static``, and RT always)."""


@dataclass(frozen=True)
class KernelSource:
    """Where a flavor's kernel comes from: prebuilt in KERNELS/<flavor>/, else built for the
    board from ``source`` with the ``patches`` series, the toolchain on ``runtime``."""

    kernels: Path | None
    source: str | None
    patches: Path | None
    runtime: str


@dataclass(frozen=True)
class PipelineSettings:
    board: str
    flavors: list[str] | None
    scenarios: list[str] | None
    duration: int
    """Seconds per run."""
    out: Path
    kernel: KernelSource
    scale: float | None
    thresholds: Path
    tuning: str | None
    """A tuning profile's name or path."""
    allow_host_changes: bool
    kernel_args: list[str]
    """Words added to the booted kernel's command line (qemu boards)."""
    trace_on_breach: float | str | None
    """µs, or the budget's word; None: no follow-up trace run."""
    trace_cap: int
    allow_unbudgeted: bool
    dry_run: bool = False
    """Print the resolved plan as YAML and stop: no build, no board."""


@dataclass(frozen=True)
class SweepSettings:
    board: str
    models: list[str]
    """Of MODELS."""
    scenarios: list[str] | None
    duration: int
    """Seconds per run."""
    out: Path
    static: bool
    """One compiled-in build per model instead of preempt= on one PREEMPT_DYNAMIC build."""
    kernel: KernelSource
    scale: float | None
    tuning: str | None
    """A tuning profile's name or path, the base of every model's."""
    dry_run: bool = False
    """Print the resolved plan as YAML and stop: no build, no board."""
