"""What a guest says about itself and about its loads, read from the files its scripts sent back.

The local runner learns these facts by calling Python on the machine itself; a guest writes them
as small files (``meta/`` from the probe, ``state/`` from a run), and this module turns them into
the same environment keys and load records a local result has.
"""

from __future__ import annotations

import io
import re
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rtgate.bench.assemble import exit_text
from rtgate.bench.environment import preempt_rt
from rtgate.bench.plan import Plan
from rtgate.board.spec import BoardSpec
from rtgate.cyclictest.version import parse_help
from rtgate.errors import InfraError
from rtgate.result import Load, Result


def _version(text: str) -> str | None:
    m = re.search(r"\d+\.\d+(?:\.\d+)?", text)
    return m.group(0) if m else None


@dataclass(frozen=True)
class GuestFacts:
    files: dict[str, str]
    """meta/<name> → its text, as the probe wrote it."""

    @classmethod
    def from_tar(cls, data: bytes) -> GuestFacts:
        files: dict[str, str] = {}
        try:
            with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
                for member in tar.getmembers():
                    fh = tar.extractfile(member) if member.isfile() else None
                    if fh is not None:
                        files[Path(member.name).name] = fh.read().decode("utf-8", "replace")
        except tarfile.TarError as exc:
            raise InfraError(f"the guest's description is not a readable archive: {exc}") \
                from exc
        return cls(files)

    def get(self, name: str) -> str:
        return self.files.get(name, "").strip()

    @property
    def cpus(self) -> int:
        return int(self.get("nproc") or 1)

    @property
    def cyclictest_help(self) -> str:
        return self.files.get("cyclictest-help", "")

    @property
    def cyclictest_version(self) -> str:
        return parse_help(self.cyclictest_help).version

    @property
    def preempt_rt(self) -> bool:
        return preempt_rt(self.get("uname-v"), self.get("realtime") or None)

    def environment(self, spec: BoardSpec, vcpus: int) -> dict[str, Any]:
        """The keys ``rtgate.bench.environment.capture`` records, as far as a guest knows them."""
        return {
            "uname": self.get("uname-a"),
            "kernel_release": self.get("uname-r"),
            "kernel_version": self.get("uname-v"),
            "machine": self.get("uname-m"),
            "cmdline": self.get("cmdline"),
            "sys_kernel_realtime": self.get("realtime") or None,
            "preempt_rt": self.preempt_rt,
            "cpus_online": self.cpus,
            "cpufreq_governors": {},
            "isolated_cpus": self.get("isolated"),
            "virtual": True,
            "virtual_detected_by": f"board {spec.name}: {spec.driver} emulator, {vcpus} vCPUs",
            "tools": {"stress-ng": _version(self.get("stress-ng-version")),
                      "iperf3": _version(self.get("iperf3-version"))},
        }


@dataclass(frozen=True)
class LoadRecord:
    name: str
    command: list[str]
    early_exit: int | None
    early_after_s: float | None
    where: str


@dataclass(frozen=True)
class LoadReport:
    records: list[LoadRecord]

    def apply(self, result: Result) -> Result:
        """The result with these loads added to its record, degraded if one died."""
        degraded = [f"load {r.name!r} ({r.where}) exited early {exit_text(r.early_exit)}"
                    + (f" after {r.early_after_s:.1f} s" if r.early_after_s is not None else "")
                    + f" (see raw/{r.name}.stderr)"
                    for r in self.records if r.early_exit is not None]
        status = result.status
        if degraded and status == "complete":
            status = "degraded"
        updated = result.model_copy(update={
            "loads": [*result.loads, *(Load(name=r.name, command=r.command,
                                            exit_status=r.early_exit,
                                            early_exit=r.early_exit is not None)
                                       for r in self.records)],
            "status": status,
            "reasons": list(dict.fromkeys([*result.reasons, *degraded])),
        })
        return Result.model_validate(updated.model_dump(by_alias=True))


def board_records(plan: Plan, state: Path) -> list[LoadRecord]:
    """The board's loads from the run script's notes (``state/NAME.early`` holds "status uptime"
    of a load that ended by itself)."""
    records = []
    for load in plan.loads:
        early = state / f"{load.name}.early"
        status = after = None
        if early.is_file():
            fields = early.read_text().split()
            status = int(fields[0]) if fields else -1
            start = state / f"{load.name}.start"
            if len(fields) > 1 and start.is_file():
                after = float(fields[1]) - float(start.read_text().split()[0])
        records.append(LoadRecord(load.name, load.argv, status, after, "board"))
    return records
