"""`rtgate board doctor`: is a board ready for its first run, and what to do where it is not.

Every check reads the board as a run would (the same SSH options, sudo, PATH and paths from the
board file) and says what it found and, when it is not ready, what to do. ``fail`` rows make the
board not ready; ``warn`` rows are worth fixing but measure all the same. Firmware and EEPROM
versions are flagged only against bench/firmware/<kind>.yml, where each bad version and each
minimum names its source: a version that file does not flag is never guessed bad.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import socket
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from rtgate import paths
from rtgate.board import evidence
from rtgate.board.privileges import TRIAL, judge
from rtgate.board.rpi5 import digests, throttle
from rtgate.board.rpi5.session import Pi
from rtgate.board.spec import BoardSpec, LavaOptions, QemuOptions, SshOptions, kind_of
from rtgate.yamlsource import load_yaml

State = Literal["ok", "warn", "fail", "n/a"]
FIRMWARE_DIR = "firmware"
MIN_FREE_KIB = {"firmware": 64 * 1024, "modules": 512 * 1024, "run": 1024 * 1024}
"""Room a deploy and a run need: a kernel, its DTBs and overlays; one module tree; raw files."""
HOT_C, THROTTLE_C = 70.0, 80.0
"""Idle above HOT_C: the cooler is missing or blocked; the Pi 5 throttles from 80 °C (its
firmware's soft limit starts at 80 °C, docs/rpi5.md)."""
HELD = ("linux-image-rpi-2712", "raspi-firmware", "rpi-eeprom")


@dataclass(frozen=True)
class Finding:
    item: str
    state: State
    found: str
    todo: str = ""


@dataclass(frozen=True)
class DoctorSettings:
    spec: BoardSpec
    workdir: Path
    """Where the session log goes."""


RELEASE_DATE = re.compile(r"\b(\d{4}/\d{2}/\d{2})\b")
"""The release a `vcgencmd version` / `bootloader_version` answer names: its build date, as its
first line prints it (and as the release notes name releases)."""
DATE = r"^\d{4}/\d{2}/\d{2}$"
SCHEMA_ID = "rtgate/firmware-known/v2"
"""v2 adds release ranges (``from``/``through``) to ``known``. A v1 file, single versions only,
still reads as it always did (v2 changed no field's meaning); a range in it is refused."""


class KnownVersion(BaseModel):
    """Bad releases: one ``version`` (a substring of the answer), or every release dated
    ``from`` through ``through`` (YYYY/MM/DD, both included, compared with the date the answer
    starts with, as a minimum is)."""

    model_config = ConfigDict(extra="forbid")
    component: Literal["bootloader", "firmware"]
    version: str | None = Field(None, min_length=4)
    from_: str | None = Field(None, alias="from", pattern=DATE)
    through: str | None = Field(None, pattern=DATE)
    problem: str
    source: str = Field(pattern=r"^https://")

    @model_validator(mode="after")
    def _one_form(self) -> KnownVersion:
        ranged = self.from_ is not None or self.through is not None
        if self.version is not None and ranged:
            raise ValueError("give version or a range (from and through), not both")
        if self.version is None and not ranged:
            raise ValueError("give version or a range (from and through)")
        if ranged and (self.from_ is None or self.through is None):
            raise ValueError("a range needs both from and through")
        if self.from_ is not None and self.through is not None and self.from_ > self.through:
            raise ValueError(f"from {self.from_} is after through {self.through}")
        return self

    @property
    def is_range(self) -> bool:
        return self.version is None

    def flags(self, said: str, date: str | None) -> bool:
        """Whether an answer (``said``, the release date it names or None) is this bad release."""
        if self.version is not None:
            return self.version in said
        return date is not None and (self.from_ or "") <= date <= (self.through or "")


class MinimumVersion(BaseModel):
    """Releases older than ``version`` lack something rtgate needs (``why``, from ``source``)."""

    model_config = ConfigDict(extra="forbid")
    component: Literal["bootloader", "firmware"]
    version: str = Field(pattern=DATE)
    why: str
    source: str = Field(pattern=r"^https://")


class KnownVersions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    schema_: Literal["rtgate/firmware-known/v1", "rtgate/firmware-known/v2"] = Field(
        alias="schema")
    known: list[KnownVersion]
    minimum: list[MinimumVersion] = []


def known_versions(kind: str) -> KnownVersions:
    path = paths.ROOT / "bench" / FIRMWARE_DIR / f"{kind}.yml"
    if not path.is_file():
        return KnownVersions.model_validate({"schema": SCHEMA_ID, "known": []})
    doc = load_yaml(path)
    try:
        versions = KnownVersions.model_validate(doc.data)
    except ValidationError as exc:
        raise doc.validation_error(exc) from exc
    if versions.schema_ != SCHEMA_ID:
        for i, entry in enumerate(versions.known):
            if entry.is_range:
                raise doc.error(f"known.{i}: a release range (from/through) needs "
                                f"'schema: {SCHEMA_ID}'", ("known", i))
    return versions


def judge_version(component: str, said: str, versions: KnownVersions) -> Finding:
    """One component's row: fail on a listed bad version, a release inside a listed bad range
    or one older than a minimum; warn when a range or a minimum exists but the answer names no
    release date to compare."""
    found = " ".join(said.split())[:80]
    match = RELEASE_DATE.search(said)
    date = match.group(1) if match else None
    mine = [k for k in versions.known if k.component == component]
    bad = [f"{k.problem} ({k.source})" for k in mine if k.flags(said, date)]
    minimums = [m for m in versions.minimum if m.component == component]
    ranges = [k for k in mine if k.is_range]
    if date is None and (minimums or ranges) and not bad:
        against = ([f"the minimum {max(m.version for m in minimums)}"] if minimums else []) + [
            f"the bad range {k.from_} to {k.through}" for k in ranges]
        return Finding(component, "warn", found or "no answer",
                       f"no release date to compare with {' or '.join(against)} "
                       "(bench/firmware): check it by hand")
    if date is not None:
        bad += [f"older than {m.version}: {m.why} ({m.source})" for m in minimums
                if date < m.version]
    if not bad:
        return Finding(component, "ok", found)
    return Finding(component, "fail", found, "; ".join(bad) + ": update it (rpi-eeprom-update, "
                   "docs/rpi5.md)")


def ready(checks: list[Finding]) -> bool:
    return all(c.state != "fail" for c in checks)


def examine(settings: DoctorSettings) -> list[Finding]:
    spec = settings.spec
    if isinstance(spec.options, SshOptions):
        return list(_ssh(spec, settings.workdir))
    if isinstance(spec.options, QemuOptions):
        return list(_qemu(spec.options))
    if isinstance(spec.options, LavaOptions):
        return list(_lava(spec.options))
    return list(_local())


# local / qemu / lava ---------------------------------------------------------------------------

def _program(name: str, todo: str) -> Finding:
    where = shutil.which(name)
    return Finding(f"tool {name}", "ok" if where else "fail", where or "not on PATH", "" if where
                 else todo)


def _local() -> Iterator[Finding]:
    for tool in ("cyclictest", "stress-ng", "iperf3"):
        yield _program(tool, "scripts/deps.sh core")
    if shutil.which("cyclictest"):
        proc = subprocess.run(["sh", "-s"], input=TRIAL, capture_output=True, text=True,
                              check=False, timeout=60)
        yield _privileges(judge("sudo", proc.stdout).missing, "this user",
                          "run rtgate as root, or give cyclictest file capabilities "
                          "(docs/rpi5.md, \"Measurement privileges\")")


def _privileges(missing: list[str], who: str, todo: str) -> Finding:
    if missing:
        return Finding("RT privileges", "fail", "; ".join(missing), todo)
    return Finding("RT privileges", "ok",
                   f"SCHED_FIFO 99, mlockall, /dev/cpu_dma_latency for {who}")


def _qemu(opts: QemuOptions) -> Iterator[Finding]:
    yield _program(opts.binary, "scripts/deps.sh qemu")
    yield Finding("numbers", "warn", "an emulator: its latencies say nothing about a Pi",
                "judge real-time claims on a hardware board")


def _lava(opts: LavaOptions) -> Iterator[Finding]:
    token = os.environ.get(opts.token_env)
    yield Finding("token", "ok" if token else "fail",
                f"${opts.token_env} {'set' if token else 'unset'}",
                "" if token else f"export {opts.token_env}=<the LAVA API token>")
    host, _, port = opts.server.split("://", 1)[-1].split("/", 1)[0].partition(":")
    yield _reach("server", host, int(port or (443 if opts.server.startswith("https") else 80)),
                 f"start the lab or fix options.server ({opts.server})")


def _reach(item: str, host: str, port: int, todo: str) -> Finding:
    try:
        with socket.create_connection((host, port), timeout=5):
            return Finding(item, "ok", f"{host}:{port} answers")
    except OSError as exc:
        return Finding(item, "fail", f"{host}:{port}: {exc.strerror or exc}", todo)


# ssh (rpi5) ------------------------------------------------------------------------------------

SURVEY = r"""
fw=$1; modules=$2; slot=$3; flag=$4; run=$5
r=$(uname -r)
printf 'release\t%s\n' "$r"
tr ' ' '\n' </proc/cmdline | grep -q '^rtgate\.slot=' && printf 'slot_mark\tyes\n'
[ -e "$flag" ] && printf 'tryboot_flag\t%s\n' "$(od -An -tx1 "$flag" | tr -d ' \n')"
[ -f "$fw/tryboot.txt" ] && printf 'tryboot_txt\tyes\n'
[ -f "$fw/autoboot.txt" ] && printf 'autoboot\t%s\n' "$(tr '\n' ';' <"$fw/autoboot.txt")"
[ -f "$fw/config.txt" ] && printf 'os_prefix\t%s\n' "$(sed -n 's/^os_prefix=//p' "$fw/config.txt")"
[ -f "$fw/overlays/README" ] && printf 'overlays_readme\tyes\n'
[ -d "$fw/$slot" ] && printf 'slot\tyes\n'
[ -f "$fw/$slot/overlays/README" ] && printf 'slot_readme\tyes\n'
printf 'temp\t%s\n' "$(cat /sys/class/thermal/thermal_zone*/temp 2>/dev/null | sort -n | tail -n 1)"
printf 'governor\t%s\n' "$(cat /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor \
  2>/dev/null | sort -u | tr '\n' ' ')"
command -v timedatectl >/dev/null && \
  printf 'ntp\t%s\n' "$(timedatectl show -p NTPSynchronized --value 2>&1)"
room() { d=$2; while [ ! -d "$d" ]; do d=$(dirname "$d"); done
  df -Pk "$d" | awk -v k="$1" 'NR == 2 { print "free_" k "\t" $4 }'; }
room firmware "$fw"; room modules "$modules"; room run "$run"
command -v apt-mark >/dev/null && \
  printf 'held\t%s\n' "$(apt-mark showhold 2>/dev/null | tr '\n' ' ')"
command -v systemctl >/dev/null && \
  printf 'eeprom_update\t%s\n' "$(systemctl is-enabled rpi-eeprom-update 2>&1 | head -n 1)"
true
"""
"""Read by the bench user in one session: what a run relies on and can read without root."""

ROOT_SURVEY = r"""
if command -v vcgencmd >/dev/null; then
  printf 'firmware\t%s\n' "$(vcgencmd version 2>&1 | tr '\n' ' ')"
  printf 'bootloader\t%s\n' "$(vcgencmd bootloader_version 2>&1 | tr '\n' ' ')"
  printf 'throttled\t%s\n' "$(vcgencmd get_throttled 2>&1 | tr '\n' ' ')"
fi
# systemd-pstore's Unlink= as its drop-ins leave it (the last file in name order wins).
printf 'pstore_unlink\t%s\n' "$(for f in /etc/systemd/pstore.conf \
  $(ls /etc/systemd/pstore.conf.d/*.conf /usr/lib/systemd/pstore.conf.d/*.conf 2>/dev/null |
  awk -F/ '{ print $NF "\t" $0 }' | sort | cut -f2); do
  sed -n 's/^[[:space:]]*Unlink=[[:space:]]*//p' "$f" 2>/dev/null; done | tail -n 1)"
[ -d /var/log/journal ] && printf 'journal\tpersistent\n'
true
"""
"""Read as root with the bench user's PATH: vcgencmd needs /dev/vcio (root and group video,
rtgate.board.rpi5.throttle.COMMAND); the crash-evidence settings."""


def _survey(board: Pi) -> dict[str, str]:
    o = board.opts
    args = shlex.join([o.firmware_dir.rstrip("/"), o.modules_dir.rstrip("/"), o.slot,
                       o.tryboot_flag, o.remote_out])
    out = board.ssh.run(f"sh -s -- {args}", stdin=SURVEY.encode()).stdout.decode(
        "utf-8", "replace")
    facts: dict[str, str] = {}
    proc = board.ssh.run(board.with_user_path("sh -s"), stdin=ROOT_SURVEY.encode(),
                         check=False)
    root = proc.stdout.decode("utf-8", "replace")
    for line in [*out.splitlines(), *root.splitlines()]:
        key, _, value = line.partition("\t")
        facts[key.strip()] = value.strip()
    if proc.returncode != 0:
        said = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-1:]
        facts["root_failed"] = f"exit {proc.returncode} {said[0] if said else ''}".strip()
    return facts


def _ssh(spec: BoardSpec, workdir: Path) -> Iterator[Finding]:
    board = Pi.connect(spec, workdir)
    o = board.opts
    try:
        said = board.ssh.reachable("uname -r")
        if said is None:
            yield Finding("ssh", "fail", f"{board.ssh.target}:{o.port} does not answer",
                        f"put {o.identity_file or '~/.ssh/id_ed25519'}.pub in the board's "
                        f"~{o.user}/.ssh/authorized_keys and its host key in known_hosts "
                        f"(docs/rpi5.md, \"Setting up a Pi\"); see {board.ssh.log}")
            return
        yield Finding("ssh", "ok", f"{board.ssh.target}: Linux {said}")
        yield from _checks(board, spec)
    finally:
        board.ssh.close()


def _checks(board: Pi, spec: BoardSpec) -> Iterator[Finding]:
    o = board.opts
    if o.sudo:
        sudo = board.ssh.run(board.ssh.root("true"), check=False, timeout_s=30)
        tail = sudo.stderr.decode("utf-8", "replace").strip().splitlines()[-1:]
        yield Finding("sudo", "ok" if sudo.returncode == 0 else "fail",
                    f"`{o.sudo} true`: " + ("works" if sudo.returncode == 0 else
                                            f"exit {sudo.returncode} {tail[0] if tail else ''}"),
                    "" if sudo.returncode == 0 else
                    f"echo '{o.user} ALL=(ALL) NOPASSWD: ALL' | sudo tee "
                    f"/etc/sudoers.d/rtgate on the board (docs/rpi5.md)")
    trial = board.trial()
    yield _privileges(trial.missing, f"{trial.facts.get('user')} ({o.measure_privilege})",
                      "docs/rpi5.md, \"Measurement privileges\"")
    yield from _tools(board)
    facts = _survey(board)
    yield from _firmware(facts, kind_of(spec))
    yield from _boot(facts, o)
    yield from _health(facts)
    yield from _peer(o)


def _tools(board: Pi) -> Iterator[Finding]:
    found = digests.read(board)
    for name in dict.fromkeys([*("rtgate", "cyclictest", "stress-ng", "iperf3"),
                               *board.opts.tools]):
        got = found.get(name)
        pinned = board.opts.tools.get(name)
        if got is None or got.sha256 is None:
            yield Finding(f"tool {name}", "fail", got.where if got else "not reported",
                        "install it on the board (docs/rpi5.md)")
        elif pinned is None:
            yield Finding(f"tool {name}", "warn", f"{got.where}: not pinned",
                        "paste tooldigest.sh's block into options.tools (docs/rpi5.md)")
        elif got.sha256 != pinned:
            yield Finding(f"tool {name}", "fail", f"{got.where}: sha256 {got.sha256[:12]}…, the "
                        f"board file pins {pinned[:12]}…",
                        "reinstall it; pin a new digest only once you know where it came from")
        else:
            yield Finding(f"tool {name}", "ok", f"{got.where}: as pinned")


def _firmware(facts: dict[str, str], kind: str) -> Iterator[Finding]:
    versions = known_versions(kind)
    for component in ("firmware", "bootloader"):
        said = facts.get(component)
        if said is None and "root_failed" in facts:
            yield Finding(component, "fail", "not read: vcgencmd runs as root, through the "
                          f"board file's sudo, which failed ({facts['root_failed']})",
                          "fix sudo (the sudo row)")
            continue
        if said is None:
            yield Finding(component, "fail", "vcgencmd not on the board's PATH: the EEPROM and "
                          "throttling checks cannot run", "apt install raspi-utils (Raspberry "
                          "Pi OS ships it)")
            continue
        if throttle.NO_DEVICE in said:
            yield Finding(component, "fail", throttle.why_not(said),
                          "give the board file a working sudo (the doctor and the driver run "
                          "vcgencmd through it)")
            continue
        yield judge_version(component, said, versions)


def _boot(facts: dict[str, str], o: SshOptions) -> Iterator[Finding]:
    autoboot = facts.get("autoboot")
    if autoboot and "tryboot_a_b=1" in autoboot.replace(" ", ""):
        yield Finding("autoboot.txt", "fail", "tryboot_a_b=1: on a tryboot the firmware then "
                    "boots tryboot_partition and loads its config.txt, never tryboot.txt, so "
                    "the side slot never boots", "remove tryboot_a_b=1 from autoboot.txt (or "
                    "autoboot.txt itself) on the board")
    else:
        yield Finding("autoboot.txt", "ok", "absent" if autoboot is None else "no tryboot_a_b=1")
    if facts.get("os_prefix", "").rstrip("/") == o.slot:
        yield Finding("config.txt", "fail", f"os_prefix={o.slot}/: the side slot is the "
                    "known-good boot", "restore config.txt from a backup")
    running_test = facts.get("slot_mark") == "yes" or facts.get("tryboot_flag", "").endswith("1")
    yield Finding("known-good kernel", "fail" if running_test else "ok",
                f"{facts.get('release')}" + (" is a test kernel (the tryboot flag, or "
                                             "rtgate.slot= on /proc/cmdline)" if running_test else
                                             " from config.txt"),
                f"sudo rm -f {o.firmware_dir}/tryboot.txt && sudo reboot (the next deploy "
                "does this too)" if running_test else "")
    if facts.get("tryboot_txt") == "yes" and not running_test:
        yield Finding("tryboot.txt", "warn", "left by an interrupted run", "the next deploy "
                    f"rewrites it; or sudo rm {o.firmware_dir}/tryboot.txt")
    if facts.get("slot") != "yes":
        yield Finding("slot", "n/a", f"{o.slot}/: no test kernel deployed yet")
    elif facts.get("slot_readme") != "yes":
        yield Finding("slot overlays", "fail", f"{o.slot}/overlays/README missing: the firmware "
                    "then loads the known-good overlays", "the next deploy writes it")
    else:
        yield Finding("slot overlays", "ok", f"{o.slot}/overlays/README present")
    for key, need in MIN_FREE_KIB.items():
        free = facts.get(f"free_{key}", "")
        low = not free.isdigit() or int(free) < need
        yield Finding(f"free space ({key})", "fail" if low else "ok",
                    f"{int(free) // 1024} MiB free" if free.isdigit() else "unknown",
                    f"free at least {need // 1024} MiB (old /lib/modules/*-rtgate trees: "
                    "docs/rpi5.md)" if low else "")


def _health(facts: dict[str, str]) -> Iterator[Finding]:
    temp = facts.get("temp", "")
    if not temp.lstrip("-").isdigit():
        yield Finding("thermal", "warn", "no thermal zone readable", "")
    else:
        c = int(temp) / 1000
        yield Finding("thermal", "fail" if c >= THROTTLE_C else "warn" if c >= HOT_C else "ok",
                    f"{c:.1f} °C idle", "fit the Active Cooler; check airflow"
                    if c >= HOT_C else "")
    if (throttled := facts.get("throttled")) is not None:
        if (bits := throttle.parse(throttled)) is None:
            # Unknown is not "not throttled": every run would be degraded for it.
            yield Finding("throttling", "fail", throttle.why_not(throttled),
                          "the driver reads get_throttled around every run")
        else:
            named = throttle.named(bits)
            yield Finding("throttling", "fail" if named else "ok",
                        f"{throttled}" + (f": {', '.join(named)}" if named else ""),
                        "use the official 27 W (5 V 5 A) supply; fit the Active Cooler"
                        if named else "")
    governor = facts.get("governor", "").split()
    yield Finding("governor", "ok" if governor == ["performance"] else "warn",
                " ".join(governor) or "no cpufreq",
                "" if governor == ["performance"] else
                "a tuning profile sets performance (--tuning), or set it at boot")
    ntp = facts.get("ntp")
    yield Finding("time sync", "ok" if ntp == "yes" else "fail", f"NTPSynchronized={ntp}",
                "" if ntp == "yes" else "serve time from the controller and let NTP through its "
                "firewall (docs/lab.md, \"Time on the isolated network\")")
    held = set(facts.get("held", "").split())
    missing = [p for p in HELD if p not in held]
    yield Finding("held packages", "warn" if missing else "ok",
                "not held: " + " ".join(missing) if missing else "kernel, firmware, EEPROM",
                f"sudo apt-mark hold {' '.join(missing)}" if missing else "")
    unlink = facts.get("pstore_unlink", "").lower()
    kept = unlink in ("no", "false", "0", "off")
    yield Finding("pstore", "ok" if kept else "warn",
                  f"systemd-pstore Unlink={unlink or 'yes (its default)'}",
                  "" if kept else "rtgate reads its archive too, but keep pstore: "
                  f"{evidence.PSTORE_DROPIN[0]} with [PStore] Unlink=no (docs/rpi5.md)")
    persistent = facts.get("journal") == "persistent"
    yield Finding("journal", "ok" if persistent else "warn",
                  "persistent (/var/log/journal)" if persistent else "not persistent: a crashed "
                  "test boot leaves no journal", "" if persistent else
                  "sudo mkdir -p /var/log/journal && sudo systemctl restart systemd-journald")
    eeprom = facts.get("eeprom_update", "")
    yield Finding("EEPROM auto-update", "ok" if eeprom in ("masked", "disabled") else "warn",
                eeprom or "unknown", "" if eeprom in ("masked", "disabled") else
                "sudo systemctl mask rpi-eeprom-update")


def _peer(o: SshOptions) -> Iterator[Finding]:
    if not o.peer.loads:
        return
    yield _program("iperf3", "scripts/deps.sh core (the controller is the iperf3 peer)")
    host = o.peer.board_address
    try:
        socket.getaddrinfo(host, None)
    except OSError:
        yield Finding("iperf3 peer", "fail", f"{host} does not resolve",
                    "name the board in /etc/hosts or DNS (iperf3 does not read ~/.ssh/config), "
                    "or give its address in options.peer.board_address")
        return
    yield _reach("iperf3 peer", host, o.port, f"route the controller to {host}")

