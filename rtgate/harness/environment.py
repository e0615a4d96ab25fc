"""The machine's state around a measurement, kept with the numbers so a reader can explain them.

Every probe tolerates absence (no cpufreq in a VM, no /sys/kernel/realtime on mainline): a missing
file is recorded as None or empty, never an error — the measurement is still valid.

``Environment`` is what every producer fills (this machine's probes, a guest's description, a
board's own result) and what a result's ``environment`` section holds: typed here, written as
the JSON object it always was, with the keys a producer set and no others, in one order.
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    ValidatorFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from rtgate.result import Result, is_preempt_rt


class IrqAffinity(BaseModel):
    """How many IRQs may run on which CPUs: a shield for RT CPUs shows up here."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    default: str | None
    """/proc/irq/default_smp_affinity (a mask)."""
    irqs: int
    by_affinity: dict[str, int]
    """smp_affinity_list → how many IRQs have it."""


class Throttled(BaseModel):
    """The firmware's get_throttled around a run (rpi5), as hex; None: no reading."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    before: str | None
    after: str | None


class Environment(BaseModel):
    """The machine's state around one measurement (a result's ``environment``).

    Every field is optional: a producer sets what it knows (a guest has no IRQ table, an old
    result file has none of the later keys), and ``written()`` gives back exactly the keys set,
    in the order they were first set (as the dict merges that filled it before kept them), so
    history's bytes do not move. Keys rtgate does not know (an old file's, a board's own
    result's) are kept.
    """

    model_config = ConfigDict(extra="allow", frozen=True)

    # What does not change during a run (capture(), GuestFacts.environment).
    uname: str | None = None
    kernel_release: str | None = None
    kernel_version: str | None = None
    machine: str | None = None
    cmdline: str | None = None
    sys_kernel_realtime: str | None = None
    """/sys/kernel/realtime's text; None where the file does not exist (mainline RT)."""
    preempt_rt: bool | None = None
    cpus_online: int | None = None
    cpufreq_governors: dict[str, str] = Field(default_factory=dict)
    isolated_cpus: str | None = None
    irq_affinity: IrqAffinity | None = None
    virtual: bool | None = None
    virtual_detected_by: str | None = None
    dt_compatible: list[str] = Field(default_factory=list)
    """The device tree root's compatible strings (KCIDB's test.environment.compatible)."""
    tools: dict[str, str | None] = Field(default_factory=dict)
    """Tool → version, None when it is not installed or says none."""
    # The run (rtgate.harness.assemble).
    scale: float | None = None
    warmup_s: float | None = None
    duration_s: int | None = None
    cyclictest_notes: list[str] = Field(default_factory=list)
    loadavg_before: list[float] | None = None
    loadavg_after: list[float] | None = None
    max_temp_c: float | None = None
    max_temp_zone: str | None = None
    # What a controller checked on a board that runs the kernel under test (rpi5).
    tool_sha256: dict[str, str] = Field(default_factory=dict)
    privileges: dict[str, str] = Field(default_factory=dict)
    throttled: Throttled | None = None

    _order: tuple[str, ...] = PrivateAttr(default=())

    @model_validator(mode="wrap")
    @classmethod
    def _keep_order(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> Environment:
        made: Environment = handler(data)
        if isinstance(data, dict):
            made._order = tuple(data)
        return made

    @model_serializer(mode="wrap")
    def _in_order(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        dumped: dict[str, Any] = handler(self)
        known = self.model_fields_set | set(self.__pydantic_extra__ or {})
        return {k: dumped[k] for k in (*self._order, *dumped) if k in known and k in dumped}

    @classmethod
    def of(cls, result: Result) -> Environment:
        """A result's environment, typed (pydantic.ValidationError when a key has the wrong
        type)."""
        return cls.model_validate(result.environment)

    def written(self) -> dict[str, Any]:
        """The keys set, as result.json holds them."""
        return self.model_dump(mode="json")

    def updated(self, **changes: Any) -> Environment:
        """A copy with ``changes`` set (and validated): a key already set keeps its place, a
        new one comes last."""
        return type(self).model_validate({**self.written(), **changes})


SYS_CPU = Path("/sys/devices/system/cpu")
PROC_IRQ = Path("/proc/irq")


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None


def _run(argv: list[str]) -> subprocess.CompletedProcess[str] | None:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None


def preempt_rt(version: str, realtime_flag: str | None) -> bool:
    """``realtime_flag`` is the text of /sys/kernel/realtime, None where it does not exist."""
    return is_preempt_rt(version, realtime_flag == "1")


def governors() -> dict[str, str]:
    found = {}
    for path in sorted(SYS_CPU.glob("cpu[0-9]*/cpufreq/scaling_governor"),
                       key=lambda p: int(p.parent.parent.name[3:])):
        value = _read(path)
        if value is not None:
            found[path.parent.parent.name] = value
    return found


def irq_affinity() -> IrqAffinity:
    lists = Counter(v for p in PROC_IRQ.glob("[0-9]*/smp_affinity_list")
                    if (v := _read(p)) is not None)
    return IrqAffinity(default=_read(PROC_IRQ / "default_smp_affinity"),
                       irqs=sum(lists.values()), by_affinity=dict(sorted(lists.items())))


def loadavg() -> list[float] | None:
    text = _read(Path("/proc/loadavg"))
    return None if text is None else [float(x) for x in text.split()[:3]]


def tool_version(argv: list[str]) -> str | None:
    proc = _run(argv)
    if proc is None:
        return None
    m = re.search(r"\d+\.\d+(?:\.\d+)?", proc.stdout + proc.stderr)
    return m.group(0) if m else None


def virtualization() -> tuple[bool, str]:
    """Whether this machine is a VM, and how we know (containers share the host's kernel, so
    only a hypervisor counts)."""
    proc = _run(["systemd-detect-virt", "--vm"])
    if proc is not None and proc.returncode == 0 and proc.stdout.strip() not in ("", "none"):
        return True, f"systemd-detect-virt --vm: {proc.stdout.strip()}"
    cpuinfo = _read(Path("/proc/cpuinfo")) or ""
    if re.search(r"^flags\s*:.*\bhypervisor\b", cpuinfo, re.M):
        return True, "/proc/cpuinfo: hypervisor flag"
    return False, "no hypervisor detected"


DEVICE_TREE_COMPATIBLE = Path("/proc/device-tree/compatible")


def dt_compatible(path: Path = DEVICE_TREE_COMPATIBLE) -> list[str]:
    """The device tree root's compatible strings, in order (a Pi 5: raspberrypi,5-model-b,
    brcm,bcm2712): the property is NUL-separated strings, as KCIDB's
    test.environment.compatible takes them. Empty without a device tree (x86, ACPI)."""
    try:
        raw = path.read_bytes()[:4096]
    except OSError:
        return []
    return [s for s in raw.decode("ascii", "replace").split("\0") if s]


def capture() -> Environment:
    """Everything that does not change during a run (loadavg and temperature are sampled apart)."""
    uname = platform.uname()
    proc = _run(["uname", "-a"])
    realtime = _read(Path("/sys/kernel/realtime"))
    isolated = _read(SYS_CPU / "isolated")
    is_virtual, how = virtualization()
    return Environment(
        uname=proc.stdout.strip() if proc else " ".join(uname),
        kernel_release=uname.release,
        kernel_version=uname.version,
        machine=uname.machine,
        cmdline=_read(Path("/proc/cmdline")),
        sys_kernel_realtime=realtime,
        preempt_rt=preempt_rt(uname.version, realtime),
        cpus_online=os.cpu_count(),
        cpufreq_governors=governors(),
        isolated_cpus=isolated or "",
        irq_affinity=irq_affinity(),
        virtual=is_virtual,
        virtual_detected_by=how,
        dt_compatible=dt_compatible(),
        tools={"stress-ng": tool_version(["stress-ng", "--version"]),
               "iperf3": tool_version(["iperf3", "--version"])},
    )
