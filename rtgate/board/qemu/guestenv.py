"""What a guest says about itself, its run and its loads, read from the files its scripts sent
back (the QEMU board's guest, and a LAVA device running the same initramfs).

The local runner learns these facts by calling Python on the machine itself; a guest writes them
as small files (``meta/`` from the probe, ``state/`` from a run), and this module turns them into
the same environment keys and load records a local result has.
"""

from __future__ import annotations

import io
import re
import shutil
import tarfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rtgate.bench.environment import preempt_rt
from rtgate.bench.plan import Plan
from rtgate.bench.runner import RunLog
from rtgate.board import tarsafe
from rtgate.board.loadreport import LoadRecord
from rtgate.board.spec import BoardSpec
from rtgate.cyclictest.version import parse_help
from rtgate.errors import InfraError


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


def unpack(data: bytes, out: Path) -> None:
    """raw/ (the run's files), meta/ (the guest's description), state/ (the script's notes)."""
    for name in ("meta", "state"):
        shutil.rmtree(out / name, ignore_errors=True)
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            tarsafe.extract(tar, out)
    except (tarfile.TarError, OSError) as exc:
        raise InfraError(f"results from the guest are not a readable archive: {exc}",
                         path=out) from exc


def noted(path: Path) -> int | None:
    """The number a script noted in ``path``; None when it noted none."""
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _loadavg(path: Path) -> list[float] | None:
    try:
        return [float(x) for x in path.read_text().split()[:3]]
    except (OSError, ValueError):
        return None


def read_log(log: RunLog, plan: Plan, state: Path) -> None:
    """What the run script noted in ``state/`` about the run, into ``log``."""
    log.cyclictest_rc = noted(state / f"{plan.tool}-rc")
    log.reducer_rc = noted(state / "reducer-rc")
    log.measured_s = float(noted(state / "measured-s") or 0)
    log.hung = (state / "hung").is_file()
    log.loadavg_before = _loadavg(state / "loadavg-before")
    log.loadavg_after = _loadavg(state / "loadavg-after")


def _moved(guest_path: str | None, rawdir: Path) -> str | None:
    return None if guest_path is None else str(rawdir / Path(guest_path).name)


def on_controller(plan: Plan, rawdir: Path) -> Plan:
    """``plan`` with its raw files where they are now, in ``rawdir`` on the controller, for the
    parser to read."""
    command = replace(plan.cyclictest, json_path=_moved(plan.cyclictest.json_path, rawdir),
                      histfile=_moved(plan.cyclictest.histfile, rawdir),
                      blocks=_moved(plan.cyclictest.blocks, rawdir))
    measure = plan.timerlat and replace(plan.timerlat,
                                        stdout=str(rawdir / Path(plan.timerlat.stdout).name))
    return replace(plan, cyclictest=command, timerlat=measure)
