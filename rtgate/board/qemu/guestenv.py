"""What a guest says about itself, its run and its loads, read from the files its scripts sent
back (the QEMU board's guest, and a LAVA device running the same initramfs).

The local runner learns these facts by calling Python on the machine itself; a guest writes them
as small files (``meta/`` from the probe, ``state/`` from a run), and this module turns them into
the same environment keys and load records a local result has.
"""

from __future__ import annotations

import io
import math
import re
import shutil
import tarfile
import zlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypeVar

from rtgate import tools
from rtgate.board import tarsafe
from rtgate.board.loadreport import LoadRecord
from rtgate.board.spec import BoardSpec
from rtgate.cyclictest.command import CyclictestCommand
from rtgate.cyclictest.version import parse_help
from rtgate.errors import InfraError
from rtgate.harness.environment import Environment, preempt_rt
from rtgate.harness.plan import Plan
from rtgate.harness.runner import RunLog

MiB = 1 << 20
# What a guest may send back, compressed, over the console or in a LAVA log: a run's files are
# histograms, block maxima and load logs, a few MiB; the guest's description, a few KiB.
WIRE_CAP = 64 * MiB
# Unpacked, the same replies: an archive that inflates past this is refused before it is
# written (a few MiB of zeros gzip into a few KiB).
FACTS_CAP = 4 * MiB
RESULTS_CAP = 256 * MiB
MEMBERS_CAP = 4096
# A note the guest's scripts leave in state/: one line.
NOTE_CAP = 4096

# What a damaged or hostile archive raises while it is read: a truncated gzip stream is an
# EOFError, a corrupt one a zlib.error, tarfile's own complaints a TarError.
_BROKEN = (tarfile.TarError, EOFError, zlib.error, OSError)


def members(tar: tarfile.TarFile, cap: int, what: str) -> list[tarfile.TarInfo]:
    """The archive's members within ``cap`` bytes and MEMBERS_CAP entries (tarsafe.members)."""
    return tarsafe.members(tar, cap, MEMBERS_CAP, what)


def note(path: Path, cap: int = NOTE_CAP) -> str:
    """The text of a file a guest's script left (its first ``cap`` bytes); "" when none."""
    try:
        with path.open("rb") as fh:
            return fh.read(cap).decode("utf-8", "replace")
    except OSError:
        return ""


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
        what = "the guest's description"
        if len(data) > WIRE_CAP:
            raise InfraError(f"{what} is {len(data)} bytes compressed, more than "
                             f"{WIRE_CAP // MiB} MiB: refused")
        try:
            with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
                for member in members(tar, FACTS_CAP, what):
                    fh = tar.extractfile(member) if member.isfile() else None
                    if fh is not None:
                        files[Path(member.name).name] = fh.read().decode("utf-8", "replace")
        except _BROKEN as exc:
            raise InfraError(f"{what} is not a readable archive: "
                             f"{type(exc).__name__}: {exc}") from exc
        return cls(files)

    def get(self, name: str) -> str:
        return self.files.get(name, "").strip()

    @property
    def cpus(self) -> int:
        text = self.get("nproc") or "1"
        if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= 65536:
            raise InfraError(f"the guest's meta/nproc is {text[:40]!r}, not a CPU count")
        return int(text)

    @property
    def cyclictest_help(self) -> str:
        return self.files.get("cyclictest-help", "")

    @property
    def cyclictest_version(self) -> str:
        return parse_help(self.cyclictest_help).version

    @property
    def preempt_rt(self) -> bool:
        return preempt_rt(self.get("uname-v"), self.get("realtime") or None)

    def environment(self, spec: BoardSpec, vcpus: int) -> Environment:
        """What ``rtgate.harness.environment.capture`` records, as far as a guest knows it."""
        return Environment(
            uname=self.get("uname-a"),
            kernel_release=self.get("uname-r"),
            kernel_version=self.get("uname-v"),
            machine=self.get("uname-m"),
            cmdline=self.get("cmdline"),
            sys_kernel_realtime=self.get("realtime") or None,
            preempt_rt=self.preempt_rt,
            cpus_online=self.cpus,
            cpufreq_governors={},
            isolated_cpus=self.get("isolated"),
            virtual=True,
            virtual_detected_by=f"board {spec.name}: {spec.driver} emulator, {vcpus} vCPUs",
            tools={"stress-ng": _version(self.get("stress-ng-version")),
                   "iperf3": _version(self.get("iperf3-version"))},
        )


def board_records(plan: Plan, state: Path) -> list[LoadRecord]:
    """The board's loads from the run script's notes (``state/NAME.early`` holds "status uptime"
    of a load that ended by itself)."""
    records = []
    for load in plan.loads:
        early = state / f"{load.name}.early"
        status = after = None
        if early.is_file():
            fields = note(early).split()
            status = _number(int, fields[0], early) if fields else -1
            start = state / f"{load.name}.start"
            begun = note(start).split() if start.is_file() else []
            if len(fields) > 1 and begun:
                after = _number(float, fields[1], early) - _number(float, begun[0], start)
        records.append(LoadRecord(load.name, load.argv, status, after, "board"))
    return records


N = TypeVar("N", int, float)


def _number(kind: type[N], text: str, path: Path) -> N:
    try:
        value: N | None = kind(text)
    except ValueError:
        value = None
    if value is None or not math.isfinite(value):
        raise InfraError(f"the guest's note holds {text[:40]!r}, not a number", path=path)
    return value


def unpack(data: bytes, out: Path) -> None:
    """raw/ (the run's files), meta/ (the guest's description), state/ (the script's notes)."""
    for name in ("meta", "state"):
        shutil.rmtree(out / name, ignore_errors=True)
    what = "results from the guest"
    if len(data) > WIRE_CAP:
        raise InfraError(f"{what} are {len(data)} bytes compressed, more than "
                         f"{WIRE_CAP // MiB} MiB: refused", path=out)
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            members(tar, RESULTS_CAP, what)
            tarsafe.extract(tar, out)
    except _BROKEN as exc:
        raise InfraError(f"{what} are not a readable archive: {type(exc).__name__}: {exc}",
                         path=out) from exc


def noted(path: Path) -> int | None:
    """The number a script noted in ``path``; None when it noted none."""
    try:
        return int(note(path).split()[0])
    except (ValueError, IndexError):
        return None


def _loadavg(path: Path) -> list[float] | None:
    try:
        values = [float(x) for x in note(path).split()[:3]]
    except ValueError:
        return None
    return values if all(math.isfinite(v) for v in values) else None


def read_log(log: RunLog, plan: Plan, state: Path) -> None:
    """What the run script noted in ``state/`` about the run, into ``log``."""
    log.cyclictest_rc = noted(state / f"{plan.tool}-rc")
    log.reducer_rc = noted(state / "reducer-rc")
    log.measured_s = float(noted(state / "measured-s") or 0)
    log.hung = (state / "hung").is_file()
    log.loadavg_before = _loadavg(state / "loadavg-before")
    log.loadavg_after = _loadavg(state / "loadavg-after")


def on_controller(plan: Plan, rawdir: Path) -> Plan:
    """``plan`` with its raw files where they are now, in ``rawdir`` on the controller, for the
    parser to read."""
    cyclictest = tools.get("cyclictest").on_controller(plan.cyclictest, rawdir)
    assert isinstance(cyclictest, CyclictestCommand)
    measure = plan.measure and tools.get(plan.tool).on_controller(plan.measure, rawdir)
    return replace(plan, cyclictest=cyclictest, measure=measure)
