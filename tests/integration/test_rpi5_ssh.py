"""The Raspberry Pi 5 driver against a real OpenSSH server on 127.0.0.1.

sshd runs with a throwaway host key and client key; the "Pi" is this machine with a fake
``/boot/firmware`` tree and modules directory in a temp dir (the driver's paths are board data,
taken from ``bench/boards/rpi5.yml`` and pointed there). The reboot commands are a script that
records its arguments and then either "comes back" (a new boot id), or comes back having changed a
tool (as a kernel under test could), or takes sshd down for good. The board's PATH starts with its
own ``bin/``. sshd runs in a mount namespace of its own where the files a tuning profile reads
and writes (/proc/cmdline, /sys/devices/system/cpu, /proc/irq, two sysctls, /dev/cpu_dma_latency,
/sys/class) are the fake Pi's: "booting" plays the firmware (the config tryboot selects, its
os_prefix's cmdline.txt, the Wi-Fi/Bluetooth overlays) and the kernel (what the words isolate,
rcuop/N threads for rcu_nocbs), so every setting is read back by effect, and run-time writes
land in the fake tree, never on this host. The board runs the real ``rtgate bench`` over SSH,
with the controller as the iperf3 peer; a "board" that forges its result.json or deletes its
raw files wraps that real bench.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from clirun import RunProcess
from kcidb_io.schema import LATEST

from rtgate import paths
from rtgate.board.rpi5.digests import TOOL_DIGEST
from rtgate.board.tuning import Applied, load_profile
from rtgate.harness.loads import free_port, listening
from rtgate.result import load_result

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"
RELEASE = os.uname().release
CONFIG_TXT = "# known-good\narm_64bit=1\ndtparam=watchdog=on\n"
OVERLAYS_README = "Device Tree overlays of the known-good kernel\n"
CMDLINE_TXT = "console=serial0,115200 root=PARTUUID=1234-02 rootwait\n"

REBOOT = """#!/bin/sh
# The board's reboot: note the arguments, then behave as the test's mode file says.
case "$1" in power|watchdog) ;; *) echo "reboot $*" >>{root}/reboots.log ;; esac
fake={root}/fake
boot() {{
  # The firmware: tryboot.txt on a tryboot (when there is one), else config.txt; the command
  # line from its os_prefix.
  fw={root}/boot/firmware; config=$fw/config.txt
  case "$*" in *tryboot*) [ -f $fw/tryboot.txt ] && config=$fw/tryboot.txt ;; esac
  prefix=$(sed -n 's/^os_prefix=//p' $config | tail -n 1)
  # The kernel's /proc/cmdline, less a parameter the test drops (one that does not take).
  awk -v drop="$(cat {root}/drop 2>/dev/null)" 'NR == 1 {{ for (i = 1; i <= NF; i++) {{
      split($i, a, "="); if (a[1] != drop) printf "%s%s", (n++ ? " " : ""), $i }}; print "" }}' \
    $fw/${{prefix}}cmdline.txt >$fake/cmdline
  word() {{ tr ' ' '\\n' <$fake/cmdline | sed -n "s/^$1=//p" | tail -n 1; }}
  cpus() {{ echo "$1" | awk -F, '{{ for (i = 1; i <= NF; i++) {{ n = split($i, r, "-");
      for (c = r[1]; c <= r[n]; c++) print c }} }}'; }}
  word isolcpus >$fake/cpu/isolated
  word nohz_full >$fake/cpu/nohz_full
  ia=$(word irqaffinity)
  cpus "${{ia:-$(cat $fake/cpu/online)}}" | awk '{{ m += 2 ^ $1 }} END {{ printf "%x\\n", m }}' \
    >$fake/irq/default_smp_affinity
  for pid in $(cat $fake/rcuo.pids 2>/dev/null); do kill $pid; done
  : >$fake/rcuo.pids
  for c in $(cpus "$(word rcu_nocbs)"); do
    sh -c "echo rcuop/$c >/proc/\\$\\$/comm; while sleep 1; do :; done" </dev/null >/dev/null 2>&1 &
    echo $! >>$fake/rcuo.pids
  done
  rm -rf $fake/class/net/wlan0 $fake/class/bluetooth/hci0
  grep -qx dtoverlay=disable-wifi $config || mkdir $fake/class/net/wlan0
  grep -qx dtoverlay=disable-bt $config || mkdir $fake/class/bluetooth/hci0
  cat /proc/sys/kernel/random/uuid >{root}/boot_id
  # The journal's new boot (journalctl lists boot ids without dashes), and its kernel log.
  id=$(tr -d - <{root}/boot_id)
  echo "$id" >>{root}/journal/boots
  echo "[    0.000000] Booting Linux on physical CPU 0x0 ($config)" >{root}/journal/$id.txt
  # systemd-pstore at boot, with Debian's defaults (Storage=external, Unlink=yes): every
  # pstore record moved into its archive, gone from pstore.
  for f in {root}/pstore/*; do [ -f "$f" ] && mv "$f" {root}/pstore-archive/; done
  # What the serial console shows.
  echo "[    0.000000] Booting Linux on physical CPU 0x0 ($config, os_prefix=$prefix)" \
    >>{root}/serial.txt
}}
# The power supply switched off and on (the board file's power_cycle_command): config.txt's
# kernel, and sshd started again.
if [ "$1" = power ]; then
  echo power >>{root}/reboots.log
  echo comeback >{root}/mode
  boot
  setsid sh {root}/start-sshd </dev/null >>{root}/sshd.log 2>&1 &
  exit 0
fi
# The hardware watchdog resets a board whose kernel stopped feeding it: every connection
# gone, then config.txt's kernel, and sshd again.
if [ "$1" = watchdog ]; then
  echo watchdog >>{root}/reboots.log
  pid=$(cat {root}/sshd.pid); kids=$(pgrep -P "$pid"); kill "$pid" $kids
  sleep 0.5
  boot
  setsid sh {root}/start-sshd </dev/null >>{root}/sshd.log 2>&1 &
  exit 0
fi
case "$(cat {root}/mode)" in
  comeback) boot "$@" ;;
  # The test kernel boots (its own boot in the journal, its word on /proc/cmdline), panics;
  # the watchdog resets the board, which comes back on config.txt with the panic in pstore,
  # which systemd-pstore moves to its archive at that boot; then the board reboots once more
  # by itself, so `journalctl -b -1` would read a boot that says nothing.
  panic)
    case "$*" in *tryboot*) ;; *) boot; exit 0 ;; esac
    boot "$@"
    echo "[    2.300000] rtgate-test: about to panic" \
      >>{root}/journal/$(tr -d - <{root}/boot_id).txt
    echo "[    2.345678] Kernel panic - not syncing: rtgate-test: planted panic" >>{root}/serial.txt
    printf '%s\n' "Panic#1 Part1" "<0>[    2.345678] Kernel panic - not syncing: rtgate-test: \
planted panic" "<4>[    2.345690] CPU: 3 PID: 1 Comm: swapper/0" >{root}/pstore/dmesg-ramoops-0
    boot
    boot ;;
  # Like a kernel under test that rewrites a tool on the board's disk while it runs.
  tamper) printf 'x' >>{root}/bin/cyclictest; boot "$@" ;;
  # Like a board going down: the daemon and every connection it serves (each has its own
  # session, so list them first).
  vanish) pid=$(cat {root}/sshd.pid); kids=$(pgrep -P "$pid"); kill "$pid" $kids ;;
esac
"""


JOURNALCTL = """#!/bin/sh
# journalctl as systemd 252 answers `--list-boots` (oldest first, index, boot id without dashes,
# first and last entry; no header) and `-k -b ID`, from the fake Pi's persistent journal.
j={root}/journal
case "$*" in
  *--list-boots*)
    n=$(wc -l <$j/boots)
    span="Thu 2026-11-26 10:00:00 UTC—Thu 2026-11-26 11:00:00 UTC"
    awk -v n="$n" -v span="$span" '{{ printf "%3d %s %s\\n", NR - n, $1, span }}' $j/boots ;;
  *)
    id=""; prev=""; for a in "$@"; do [ "$prev" = -b ] && id=$a; prev=$a; done
    case "$id" in -*|"") echo "rtgate-test: never -b OFFSET" >&2; exit 1 ;; esac
    cat "$j/$id.txt" 2>/dev/null || {{
      echo "Data from the specified boot ($id) is not available: No such boot ID in journal" >&2
      exit 1; }} ;;
esac
"""
OLDER_BOOT = "0a1b2c3d4e5f60718293a4b5c6d7e8f9"
"""A boot before the fixture's, whose kernel log holds an older crash: never the test boot's."""


FORGER = """#!{python}
# A board that lies: the real `rtgate bench`, then a result.json claiming 5 us everywhere ({mode}).
import json, subprocess, sys
from pathlib import Path

subprocess.call([sys.executable, "-m", "rtgate", "bench", *sys.argv[1:]])
out = Path(sys.argv[sys.argv.index("--out") + 1])
result = json.loads((out / "result.json").read_text())
for part in [result["totals"], *result["threads"]]:
    part["max_us"] = 5
result["status"], result["reasons"] = "complete", []
(out / "result.json").write_text(json.dumps(result))
if "{mode}" == "delete-raw":
    for raw in (out / "raw").glob("cyclictest.*"):
        raw.unlink()
if "{mode}" == "forge-json":  # the JSON says 5 us too; the block maxima still disagree
    data = json.loads((out / "raw" / "cyclictest.json").read_text())
    for thread in data["thread"].values():
        thread["max"] = 5
    (out / "raw" / "cyclictest.json").write_text(json.dumps(data))
"""


@dataclass
class FakePi:
    root: Path
    port: int
    proc: subprocess.Popen[bytes]

    @property
    def firmware(self) -> Path:
        return self.root / "boot" / "firmware"

    @property
    def modules(self) -> Path:
        return self.root / "lib" / "modules"

    @property
    def fake(self) -> Path:
        """What the board's /proc and /sys files are, in its sshd's mount namespace."""
        return self.root / "fake"

    @property
    def tuning_state(self) -> Path:
        return self.root / "run" / "rtgate-tuning"

    def reboots(self) -> list[str]:
        log = self.root / "reboots.log"
        return log.read_text().splitlines() if log.is_file() else []

    def mode(self, mode: str) -> None:
        (self.root / "mode").write_text(mode)

    def forging_bench(self, mode: str) -> str:
        """A bench_command whose result.json lies (and, with "delete-raw", whose raw files are
        gone)."""
        forger = self.root / f"bench-{mode}"
        forger.write_text(FORGER.format(python=sys.executable, mode=mode))
        forger.chmod(0o755)
        return f"{forger} --board local --scenario {{scenario}} --duration {{duration}} " \
               "--out {out}"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# Board path → the fake Pi's file or directory bound over it (as the Pi's kernel boots it,
# before any tuning: no isolation, the ondemand governor, every IRQ on every CPU).
FAKE_MOUNTS = {"/proc/cmdline": "cmdline", "/sys/devices/system/cpu": "cpu", "/proc/irq": "irq",
               "/proc/sys/kernel/sched_rt_runtime_us": "sched_rt_runtime_us",
               "/proc/sys/kernel/timer_migration": "timer_migration",
               "/dev/cpu_dma_latency": "cpu_dma_latency", "/sys/class": "class"}
CPUS = os.cpu_count() or 1
"""The fake Pi has this host's CPUs: cyclictest's -a and the loads' taskset are real."""
ALL = f"0-{CPUS - 1}" if CPUS > 1 else "0"
RUNTIME_DEFAULTS = {"sched_rt_runtime_us": "950000\n", "timer_migration": "1\n",
                    "irq/24/smp_affinity_list": f"{ALL}\n", "irq/25/smp_affinity_list": f"{ALL}\n",
                    **{f"cpu/cpu{c}/cpufreq/scaling_governor": "ondemand\n" for c in range(CPUS)}}


def _fake_tree(fake: Path) -> None:
    """The Pi's /proc and /sys files a profile touches, as its known-good kernel boots."""
    fake.mkdir()
    (fake / "cmdline").write_text(CMDLINE_TXT)
    for name in ("online", "possible", "present"):
        (fake / "cpu" / name).parent.mkdir(parents=True, exist_ok=True)
        (fake / "cpu" / name).write_text(f"{ALL}\n")
    (fake / "cpu" / "isolated").write_text("\n")
    (fake / "cpu" / "nohz_full").write_text("\n")
    (fake / "irq").mkdir()
    (fake / "irq" / "default_smp_affinity").write_text(f"{(1 << CPUS) - 1:x}\n")
    for path, value in RUNTIME_DEFAULTS.items():
        (fake / path).parent.mkdir(parents=True, exist_ok=True)
        (fake / path).write_text(value)
    for irq in ("24", "25"):
        # Served where it may be: the fake kernel moves an IRQ when told.
        (fake / "irq" / irq / "effective_affinity_list").symlink_to("smp_affinity_list")
    (fake / "cpu_dma_latency").write_bytes((2000000000).to_bytes(4, "little"))
    (fake / "class" / "net").mkdir(parents=True)
    (fake / "class" / "bluetooth").mkdir()
    (fake / "class" / "net" / "wlan0").mkdir()
    (fake / "class" / "bluetooth" / "hci0").mkdir()


BENCH_USER, BENCH_UID = "rtbench", 4242
"""The board's login: not root, as on a lab Pi. It exists in sshd's mount namespace only (its
/etc/passwd, group, shadow and sudoers are the fake Pi's), with sudo for everything, as
docs/rpi5.md sets the Pi's rtgate user up."""
SUDO = "sudo -n"


def _accounts(root: Path) -> dict[str, Path]:
    """The fake Pi's account files, bound over /etc's in sshd's namespace."""
    etc = root / "etc"
    etc.mkdir()
    lines = {"passwd": f"{BENCH_USER}:x:{BENCH_UID}:{BENCH_UID}::{root}/home:/bin/sh",
             "group": f"{BENCH_USER}:x:{BENCH_UID}:",
             "shadow": f"{BENCH_USER}:*:19000:0:99999:7:::"}
    files = {}
    for name, line in lines.items():
        text = Path("/etc", name).read_text()
        (etc / name).write_text(text + ("" if text.endswith("\n") else "\n") + line + "\n")
        files[f"/etc/{name}"] = etc / name
    (etc / "shadow").chmod(0o640)
    sudoers = etc / "sudoers"
    sudoers.write_text("Defaults env_reset\nroot ALL=(ALL:ALL) ALL\n"
                       f"{BENCH_USER} ALL=(ALL:ALL) NOPASSWD: ALL\n")
    sudoers.chmod(0o440)
    files["/etc/sudoers"] = sudoers
    (root / "home").mkdir()
    os.chown(root / "home", BENCH_UID, BENCH_UID)
    return files


@pytest.fixture
def pi(tmp_path: Path) -> Iterator[FakePi]:
    if not os.access(SSHD, os.X_OK):
        pytest.fail("sshd is missing: scripts/deps.sh qemu installs openssh-server")
    if not shutil.which("sudo"):
        pytest.fail("sudo is missing: scripts/deps.sh qemu installs it")
    # Outside pytest's private temp root: the bench user must reach the fake Pi's files.
    root = Path(tempfile.mkdtemp(prefix="rtgate-pi-"))
    root.chmod(0o755)
    accounts = _accounts(root)
    # Where the bench user writes its runs (/var/tmp on a Pi).
    (root / "var").mkdir()
    os.chown(root / "var", BENCH_UID, BENCH_UID)
    (root / "boot" / "firmware").mkdir(parents=True)
    (root / "lib" / "modules").mkdir(parents=True)
    (root / "bin").mkdir()
    _vcgencmd(root)
    (root / "boot" / "firmware" / "config.txt").write_text(CONFIG_TXT)
    (root / "boot" / "firmware" / "cmdline.txt").write_text(CMDLINE_TXT)
    (root / "boot" / "firmware" / "overlays").mkdir()
    (root / "boot" / "firmware" / "overlays" / "README").write_text(OVERLAYS_README)
    (root / "boot_id").write_text("first-boot\n")
    # A persistent journal of several boots: an older one that crashed, then this one.
    (root / "journal").mkdir()
    (root / "journal" / "boots").write_text(f"{OLDER_BOOT}\nfirstboot\n")
    (root / "journal" / f"{OLDER_BOOT}.txt").write_text(
        "[   9.0] Kernel panic - not syncing: an older boot's crash\n")
    (root / "journal" / "firstboot.txt").write_text("[   0.0] Booting Linux (config.txt)\n")
    (root / "journalctl").write_text(JOURNALCTL.format(root=root))
    (root / "journalctl").chmod(0o755)
    # pstore, and systemd-pstore's archive holding an older crash's record.
    (root / "pstore").mkdir()
    (root / "pstore-archive").mkdir()
    (root / "pstore-archive" / "dmesg-ramoops-7").write_text(
        "<0>[   9.0] Kernel panic - not syncing: an older boot's crash\n")
    _fake_tree(root / "fake")
    (root / "mode").write_text("comeback")
    reboot = root / "fake-reboot"
    reboot.write_text(REBOOT.format(root=root))
    reboot.chmod(0o755)
    for key in ("host_key", "client_key"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(root / key)],
                       check=True)
    shutil.copyfile(root / "client_key.pub", root / "authorized_keys")
    port = free_port()
    (root / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {root}/host_key\n"
        f"AuthorizedKeysFile {root}/authorized_keys\nPidFile {root}/sshd.pid\n"
        "PermitRootLogin prohibit-password\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\nLogLevel VERBOSE\n"
        f"SetEnv PATH={root}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n")
    Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege-separation directory
    log = open(root / "sshd.log", "wb")
    binds = {**{path: root / "fake" / fake for path, fake in FAKE_MOUNTS.items()}, **accounts}
    mounts = "".join(f"mount --bind {src} {path} && " for path, src in binds.items())
    start = root / "start-sshd"
    start.write_text("exec unshare --mount --propagation private sh -c "
                     f"'{mounts}exec {SSHD} -D -e -f {root / 'sshd_config'}'\n")
    proc = subprocess.Popen(["sh", str(start)], stdout=log, stderr=log)
    deadline = time.monotonic() + 10
    while not listening(port):
        assert proc.poll() is None, (root / "sshd.log").read_text()
        assert time.monotonic() < deadline, "sshd did not start"
        time.sleep(0.05)
    yield FakePi(root, port, proc)
    if proc.poll() is None:
        proc.terminate()
        proc.wait(timeout=10)
    # An sshd the fake power cycle started again.
    with contextlib.suppress(OSError, ValueError):
        os.kill(int((root / "sshd.pid").read_text()), signal.SIGTERM)
    log.close()
    # What the fake kernel and a profile left running: rcuop/N stand-ins, a PM QoS holder.
    for pids in (root / "fake" / "rcuo.pids", root / "run" / "rtgate-tuning" / "holders"):
        for pid in pids.read_text().split() if pids.is_file() else []:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGTERM)
    shutil.rmtree(root, ignore_errors=True)


def _kernel(tmp_path: Path, release: str) -> Path:
    """A kernel build directory as `rtgate kernel build --board rpi5` lays it out."""
    k = tmp_path / f"kernel-{release}"
    (k / "dtbs" / "broadcom").mkdir(parents=True)
    (k / "dtbs" / "overlays").mkdir()
    (k / "kernel_2712.img").write_bytes(b"arm64 Image " + release.encode())
    (k / "dtbs" / "broadcom" / "bcm2712-rpi-5-b.dtb").write_bytes(b"\xd0\x0d\xfe\xed dtb")
    (k / "dtbs" / "overlays" / "disable-wifi.dtbo").write_bytes(b"\xd0\x0d\xfe\xed dtbo")
    mods = tmp_path / f"stage-{release}" / "lib" / "modules" / release
    (mods / "kernel").mkdir(parents=True)
    (mods / "kernel" / "rtgate-test.ko").write_bytes(b"module")
    (mods / "modules.dep").write_text("kernel/rtgate-test.ko:\n")
    with tarfile.open(k / "modules.tar.gz", "w:gz") as tar:
        tar.add(tmp_path / f"stage-{release}", arcname=".")
    (k / "metadata.json").write_text(json.dumps({
        "schema": "rtgate/kernel-build/v1", "kernel_release": release, "uts_version": None,
        "plan": {"board": {"name": "rpi5", "image_name": "kernel_2712.img"}, "flavor": "rt"}}))
    return k


def _root(tmp_path: Path, pi: FakePi, **overrides: object) -> Path:
    """An RTGATE_ROOT whose bench/boards/rpi5.yml is the shipped one pointed at the fake Pi."""
    root = tmp_path / "rtgate-root"
    (root / "bench" / "boards").mkdir(parents=True)
    (root / "bench" / "scenarios").symlink_to(paths.SCENARIOS)
    (root / "bench" / "tuning").symlink_to(paths.ROOT / "bench" / "tuning")
    # The shipped list of bad firmware and bootloader versions, as the doctor reads it.
    (root / "bench" / "firmware").symlink_to(paths.ROOT / "bench" / "firmware")
    board = yaml.safe_load((paths.BOARDS / "rpi5.yml").read_text())
    board["options"].update({
        "host": "127.0.0.1", "port": pi.port, "user": BENCH_USER,
        "identity_file": str(pi.root / "client_key"),
        "ssh_options": ["BatchMode=yes", "StrictHostKeyChecking=no",
                        "UserKnownHostsFile=/dev/null", "ConnectTimeout=2", "LogLevel=ERROR"],
        "sudo": SUDO, "firmware_dir": str(pi.firmware), "modules_dir": str(pi.modules),
        "reboot_tryboot": f"{pi.root}/fake-reboot '0 tryboot'",
        "reboot_normal": f"{pi.root}/fake-reboot",
        "boot_id_command": f"cat {pi.root}/boot_id",
        "boot_timeout_s": 20, "poll_interval_s": 0.2,
        # As on a lab Pi (docs/rpi5.md): the data root named, then the venv's interpreter.
        "bench_command": f"RTGATE_ROOT={paths.ROOT} {sys.executable} -m rtgate bench --board local "
                         "--scenario {scenario} --duration {duration} --out {out}",
        "remote_out": str(pi.root / "var" / "rtgate-run"),
        "tuning_state": str(pi.tuning_state),
        "peer": {**board["options"]["peer"], "board_address": "127.0.0.1",
                 "board_port": free_port()},
        **overrides})
    (root / "bench" / "boards" / "rpi5.yml").write_text(yaml.safe_dump(board))
    return root


def _board_run(rtgate_process: RunProcess, root: Path, kernel: Path, out: Path,
               scenario: str = "net") -> subprocess.CompletedProcess[str]:
    return rtgate_process("board", "run", "--board", "rpi5", "--kernel", str(kernel),
                          "--scenario", scenario, "--duration", "2", "--scale", "0.5", "--out",
                          str(out), env={"RTGATE_ROOT": str(root)}, timeout=150)


def test_tryboot_deploys_side_slot_measures_and_restores(rtgate_process: RunProcess,
                                                         tmp_path: Path, pi: FakePi) -> None:
    config_before = _sha(pi.firmware / "config.txt")
    kernel = _kernel(tmp_path, RELEASE)
    out = tmp_path / "out"
    proc = _board_run(rtgate_process, _root(tmp_path, pi), kernel, out)
    assert proc.returncode == 0, proc.stderr

    slot = pi.firmware / "rtgate"
    assert (slot / "kernel_2712.img").read_bytes() == (kernel / "kernel_2712.img").read_bytes()
    assert (slot / "bcm2712-rpi-5-b.dtb").is_file()
    assert (slot / "overlays" / "disable-wifi.dtbo").is_file()
    # The firmware reads the slot's overlays/ only when it holds a README: the known-good one.
    assert (slot / "overlays" / "README").read_text() == OVERLAYS_README
    # The known-good command line, marked: a boot with the word runs a test kernel.
    assert (slot / "cmdline.txt").read_text() == CMDLINE_TXT.strip() + " rtgate.slot=rtgate\n"
    assert (pi.modules / RELEASE / "kernel" / "rtgate-test.ko").read_bytes() == b"module"
    assert (pi.modules / RELEASE / ".rtgate-slot").is_file()
    # tryboot.txt was written for the test boot and removed by restore; config.txt never.
    assert not (pi.firmware / "tryboot.txt").exists()
    assert _sha(pi.firmware / "config.txt") == config_before
    assert pi.reboots() == ["reboot 0 tryboot", "reboot "]
    session = (out / "ssh.log").read_text()
    assert "os_prefix=rtgate/" not in CONFIG_TXT and "uname -r" in session

    result = load_result(out / "result.json")
    assert result.board.name == "rpi5" and result.board.virtual is False
    assert result.kernel.release == RELEASE and result.kernel.flavor == "rt"
    assert result.totals.samples > 0 and result.status == "complete"
    # Nothing pinned in the shipped board file: said, and the digests are kept with the result.
    assert "tools not pinned, so not checked: rtgate, cyclictest, stress-ng, iperf3" in proc.stderr
    cyclictest = Path(shutil.which("cyclictest") or "/usr/bin/cyclictest").resolve()
    assert result.environment["tool_sha256"]["cyclictest"] == _sha(cyclictest)
    assert re.fullmatch("[0-9a-f]{64}", result.environment["tool_sha256"]["rtgate"])
    assert {ld.name for ld in result.loads} == {"iperf3-server", "iperf3-client"}
    # The server ran on the board, the client on the controller, against the board's port.
    # Traffic flowed during the run: interval lines with bytes moved. (Its closing summary is
    # not guaranteed: the board stops its server when the measurement ends, and a client still
    # sending then ends on a broken pipe.)
    client = (out / "raw" / "iperf3-client.stdout").read_text()
    assert re.search(r"sec\s+[\d.]+ [KMG]Bytes\s+[\d.]+ [KMG]bits/sec", client), client[-2000:]
    # Measured through the board file's sudo: cyclictest and the loads ran as root, and said so.
    privileges = result.environment["privileges"]
    assert privileges["route"] == "sudo" and privileges["user"] == "root"
    assert privileges["loads_as"] == "root" and privileges["trial"] == "0"


def _with_caps(pi: FakePi, caps: str | None) -> Path:
    """A copy of cyclictest first on the board's PATH, with ``caps`` set (None: no
    capabilities), and /dev/cpu_dma_latency the bench user's (what docs/rpi5.md's udev rule
    gives its group)."""
    tool = pi.root / "bin" / "cyclictest"
    shutil.copyfile(shutil.which("cyclictest") or "/usr/bin/cyclictest", tool)
    tool.chmod(0o755)
    if caps:
        subprocess.run(["setcap", caps, str(tool)], check=True, timeout=30)
        os.chown(pi.fake / "cpu_dma_latency", BENCH_UID, BENCH_UID)
    return tool


def test_an_unprivileged_bench_user_is_refused_before_any_load(rtgate_process: RunProcess,
                                                               tmp_path: Path,
                                                               pi: FakePi) -> None:
    _with_caps(pi, None)
    out = tmp_path / "out"
    proc = _board_run(rtgate_process, _root(tmp_path, pi, measure_privilege="file-capabilities"),
                      _kernel(tmp_path, RELEASE), out)
    assert proc.returncode == 3, proc.stderr
    assert f"the bench cannot measure as {BENCH_USER}" in proc.stderr, proc.stderr
    for missing in ("file capabilities cap_ipc_lock,cap_sys_nice=ep",
                    "SCHED_FIFO 99 for cyclictest", "write access to /dev/cpu_dma_latency"):
        assert missing in proc.stderr, proc.stderr
    assert "refused before any load started" in proc.stderr
    # Nothing measured, no load started on either side; the board is back on its kernel.
    assert not (out / "bench.log").exists() and not (out / "raw" / "iperf3-client.stdout").exists()
    assert "rtgate bench" not in (out / "ssh.log").read_text(errors="replace")
    assert pi.reboots() == ["reboot 0 tryboot", "reboot "]


def test_file_capabilities_let_a_non_root_bench_measure(rtgate_process: RunProcess,
                                                        tmp_path: Path, pi: FakePi) -> None:
    tool = _with_caps(pi, "cap_sys_nice,cap_ipc_lock+ep")
    out = tmp_path / "out"
    proc = _board_run(rtgate_process, _root(tmp_path, pi, measure_privilege="file-capabilities"),
                      _kernel(tmp_path, RELEASE), out)
    assert proc.returncode == 0, proc.stderr
    result = load_result(out / "result.json")
    assert result.status == "complete" and result.totals.samples > 0
    privileges = result.environment["privileges"]
    assert privileges["route"] == "file-capabilities" and privileges["user"] == BENCH_USER
    assert privileges["cyclictest"] == str(tool)
    assert "cap_ipc_lock,cap_sys_nice=ep" in privileges["getcap"]
    # The loads ran as the user: only cyclictest carries the capabilities.
    assert privileges["loads_as"] == BENCH_USER
    # cyclictest held /dev/cpu_dma_latency (the fake Pi's file) at 0 while it measured.
    assert (pi.fake / "cpu_dma_latency").read_bytes() == (0).to_bytes(4, "little")


def test_board_that_never_comes_back_is_infra_and_config_untouched(rtgate_process: RunProcess,
                                                                   tmp_path: Path,
                                                                    pi: FakePi) -> None:
    pi.mode("vanish")
    config_before = _sha(pi.firmware / "config.txt")
    out = tmp_path / "out"
    proc = _board_run(rtgate_process,
                      _root(tmp_path, pi, boot_timeout_s=2), _kernel(tmp_path, RELEASE), out)
    assert proc.returncode == 3, proc.stderr
    assert "did not come back" in proc.stderr and "power cycle" in proc.stderr
    assert pi.reboots() == ["reboot 0 tryboot"]
    assert _sha(pi.firmware / "config.txt") == config_before
    # What the firmware reads on that one-shot boot: the known-good config, then the slot.
    tryboot = (pi.firmware / "tryboot.txt").read_text()
    assert tryboot.startswith(CONFIG_TXT.rstrip("\n"))
    assert tryboot.endswith("[all]\nos_prefix=rtgate/\nkernel=kernel_2712.img\n")
    assert not (out / "result.json").exists()
    assert (out / "ssh.log").is_file()


def test_wrong_release_is_infra_and_the_board_is_restored(rtgate_process: RunProcess,
                                                          tmp_path: Path, pi: FakePi) -> None:
    out = tmp_path / "out"
    proc = _board_run(rtgate_process,
                      _root(tmp_path, pi), _kernel(tmp_path, "6.12.0-rtgate-not-this"), out)
    assert proc.returncode == 3, proc.stderr
    assert "booted release" in proc.stderr and "6.12.0-rtgate-not-this" in proc.stderr
    # restore: tryboot.txt gone, a normal reboot, the known-good release verified.
    assert pi.reboots() == ["reboot 0 tryboot", "reboot "]
    assert not (pi.firmware / "tryboot.txt").exists()
    assert not (out / "result.json").exists()


def test_refuses_to_overwrite_modules_it_did_not_write(rtgate_process: RunProcess,
                                                       tmp_path: Path, pi: FakePi) -> None:
    (pi.modules / RELEASE / "kernel").mkdir(parents=True)
    (pi.modules / RELEASE / "kernel" / "installed.ko").write_bytes(b"keep me")
    proc = _board_run(rtgate_process,
                      _root(tmp_path, pi), _kernel(tmp_path, RELEASE), tmp_path / "out")
    assert proc.returncode == 2, proc.stderr
    assert "not written by rtgate" in proc.stderr
    assert (pi.modules / RELEASE / "kernel" / "installed.ko").read_bytes() == b"keep me"
    assert pi.reboots() == []


def _raw_max(raw: Path) -> float:
    """The largest latency cyclictest itself wrote in its --json output, in µs (-N: its ns)."""
    data = json.loads((raw / "cyclictest.json").read_text())
    unit = 1000 if data.get("resolution_in_ns") == 1 else 1
    return max(t["max"] for t in data["thread"].values()) / unit


def test_a_forged_board_result_changes_no_number(rtgate_process: RunProcess,
                                                 tmp_path: Path, pi: FakePi) -> None:
    out = tmp_path / "out"
    root = _root(tmp_path, pi, bench_command=pi.forging_bench("forge"))
    proc = _board_run(rtgate_process, root, _kernel(tmp_path, RELEASE), out)
    assert proc.returncode == 0, proc.stderr
    result = load_result(out / "result.json")
    raw_max = _raw_max(out / "raw")
    assert raw_max > 5 and result.totals.max_us == raw_max
    assert max(t.max_us or 0 for t in result.threads) == raw_max
    assert {Path(s.path).name for s in result.sources} == {"cyclictest.json", "blocks.txt"}
    # The block maxima the board's reducer wrote, re-read here against the histogram.
    assert all(t.blocks is not None and t.blocks.cycles == t.samples
               and max(t.blocks.maxima_us) == t.max_us for t in result.threads)
    assert result.run_id.startswith("rpi5-net-") and result.board.name == "rpi5"
    # The board's claim of 5 us is kept as data, next to the result it did not make.
    assert json.loads((out / "bench-claims.json").read_text())["totals"]["max_us"] == 5


def test_raw_files_that_contradict_each_other_are_not_read_apart(rtgate_process: RunProcess,
                                                                 tmp_path: Path,
                                                                  pi: FakePi) -> None:
    out = tmp_path / "out"
    root = _root(tmp_path, pi, bench_command=pi.forging_bench("forge-json"))
    proc = _board_run(rtgate_process, root, _kernel(tmp_path, RELEASE), out)
    # Read alone, the forged JSON would pass for a 5 us run; read with the block maxima (whose
    # largest is the run's real maximum) it cannot be: no result from the raw files, never a
    # pass.
    assert proc.returncode == 3, proc.stderr
    result = load_result(out / "result.json")
    assert result.status == "partial" and result.totals.max_us is None
    assert "cyclictest.json" in proc.stderr or "blocks.txt" in proc.stderr, proc.stderr


def test_a_board_that_deletes_its_raw_files_is_never_a_pass(rtgate_process: RunProcess,
                                                            tmp_path: Path, pi: FakePi) -> None:
    out = tmp_path / "out"
    root = _root(tmp_path, pi, bench_command=pi.forging_bench("delete-raw"))
    proc = _board_run(rtgate_process, root, _kernel(tmp_path, RELEASE), out)
    assert proc.returncode == 3, proc.stderr
    assert re.search(r"raw/cyclictest\.json: missing or empty", proc.stderr), proc.stderr
    result = load_result(out / "result.json")
    assert result.status == "partial" and result.totals.samples == 0
    assert pi.reboots() == ["reboot 0 tryboot", "reboot "]


def test_a_tool_changed_on_the_board_is_refused_before_measuring(rtgate_process: RunProcess,
                                                                 tmp_path: Path,
                                                                 pi: FakePi) -> None:
    tool = pi.root / "bin" / "cyclictest"
    shutil.copyfile(shutil.which("cyclictest") or "/usr/bin/cyclictest", tool)
    tool.chmod(0o755)
    pinned = _sha(tool)
    root = _root(tmp_path, pi, tools={"cyclictest": pinned})
    kernel = _kernel(tmp_path, RELEASE)
    # The kernel under test changes the tool while it runs: the check before measuring sees it.
    pi.mode("tamper")
    out = tmp_path / "out"
    proc = _board_run(rtgate_process, root, kernel, out)
    assert proc.returncode == 3, proc.stderr
    assert f"tool 'cyclictest' ({tool}) has sha256 " in proc.stderr, proc.stderr
    assert f"rpi5.yml pins {pinned}" in proc.stderr
    assert "before measuring" in proc.stderr and "refusing to measure" in proc.stderr
    assert not (out / "bench.log").exists() and not (out / "result.json").exists()
    assert "rtgate bench" not in (out / "ssh.log").read_text()
    assert pi.reboots() == ["reboot 0 tryboot", "reboot "]  # restored all the same
    # The next run is refused under the known-good kernel, before another kernel boots.
    proc = _board_run(rtgate_process, root, kernel, tmp_path / "again")
    assert proc.returncode == 3 and "before deploying" in proc.stderr, proc.stderr
    assert pi.reboots() == ["reboot 0 tryboot", "reboot "]


def _digests(program: Path | str) -> str:
    return subprocess.run(["sh", str(TOOL_DIGEST), str(program)], capture_output=True, text=True,
                          check=True, timeout=60).stdout


def test_the_rtgate_digest_covers_its_whole_environment(tmp_path: Path) -> None:
    """Not the console script alone: a .pth planted in site-packages changes what rtgate runs."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "lib" / "site-packages").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (venv / "bin" / "python").symlink_to(Path(sys.executable).resolve())
    script = venv / "bin" / "rtgate"
    script.write_text(f"#!{venv}/bin/python\nfrom rtgate.cli import main\nmain()\n")
    script.chmod(0o755)
    found = re.search(r"^  rtgate: ([0-9a-f]{64})  # " + re.escape(str(venv)), _digests(script),
                      re.M)
    assert found, _digests(script)
    (venv / "lib" / "site-packages" / "zz.pth").write_text("import os\n")
    assert found.group(1) not in _digests(script)
    # A program outside any virtual environment cannot be pinned, and the reason is printed.
    assert "  # rtgate: /bin/sh is not in a virtual environment" in _digests("/bin/sh")


def _pi_venv(pi: FakePi) -> Path:
    """The Pi's /opt/rtgate: a virtual environment of its own (root-owned on a Pi), running this
    checkout's rtgate through a .pth, as `pip install` would have put it there."""
    venv = pi.root / "opt-rtgate"
    real = Path(sys.executable).resolve()
    site = venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / \
        "site-packages"
    site.mkdir(parents=True)
    (venv / "bin").mkdir()
    (venv / "pyvenv.cfg").write_text(f"home = {real.parent}\ninclude-system-site-packages = "
                                     "false\n")
    (venv / "bin" / "python").symlink_to(real)
    import rtgate
    deps = Path(rtgate.__file__).resolve().parents[1], Path(yaml.__file__).resolve().parents[1]
    (site / "rtgate-checkout.pth").write_text("".join(f"{d}\n" for d in deps))
    return venv


def _pin_as_documented(pi: FakePi, root: Path, program: str) -> dict[str, str]:
    """docs/rpi5.md, "Pinning the tools": tooldigest.sh over SSH, its block pasted under
    options: of the board file (rtgate/board/rpi5/tooldigest.sh prints YAML)."""
    said = subprocess.run(
        ["ssh", "-i", str(pi.root / "client_key"), "-p", str(pi.port), "-o", "BatchMode=yes",
         "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o",
         "LogLevel=ERROR", f"{BENCH_USER}@127.0.0.1", "sh", "-s", "--", program],
        stdin=TOOL_DIGEST.open("rb"), capture_output=True, timeout=120, check=True)
    tools = yaml.safe_load(said.stdout)["tools"]
    path = root / "bench" / "boards" / "rpi5.yml"
    board = yaml.safe_load(path.read_text())
    board["options"]["tools"] = tools
    path.write_text(yaml.safe_dump(board))
    return tools


def test_an_upgrade_that_changes_rtgate_is_re_pinned_before_the_next_run(
        rtgate_process: RunProcess, tmp_path: Path, pi: FakePi) -> None:
    """docs/lab.md, "Upgrading the lab", on the fake Pi: its rtgate pinned as documented
    measures; an upgrade of its venv (a new file in site-packages, as pip leaves) is refused
    before anything boots, naming the tool (exit 3); re-pinned as documented, it measures."""
    venv = _pi_venv(pi)
    program = str(venv / "bin" / "python")
    root = _root(tmp_path, pi, bench_command=(
        f"RTGATE_ROOT={paths.ROOT} {program} -m rtgate bench --board local --scenario "
        "{scenario} --duration {duration} --out {out}"))
    before = _pin_as_documented(pi, root, program)
    assert set(before) >= {"rtgate", "cyclictest", "stress-ng", "iperf3"}, before
    kernel = _kernel(tmp_path, RELEASE)
    proc = _board_run(rtgate_process, root, kernel, tmp_path / "first", "idle")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "tools not pinned" not in proc.stderr

    # The upgrade: the venv changes under the pin.
    (next(venv.rglob("site-packages")) / "rtgate_upgraded.py").write_text("VERSION = 2\n")
    proc = _board_run(rtgate_process, root, kernel, tmp_path / "refused", "idle")
    assert proc.returncode == 3, proc.stderr[-3000:]
    assert "before deploying: tool 'rtgate'" in proc.stderr and "reinstall it" in proc.stderr
    assert pi.reboots() == ["reboot 0 tryboot", "reboot "]  # nothing booted for the refusal

    after = _pin_as_documented(pi, root, program)
    assert after["rtgate"] != before["rtgate"]
    assert {k: v for k, v in after.items() if k != "rtgate"} == \
        {k: v for k, v in before.items() if k != "rtgate"}
    proc = _board_run(rtgate_process, root, kernel, tmp_path / "re-pinned", "idle")
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = load_result(tmp_path / "re-pinned" / "result.json")
    assert result.environment["tool_sha256"]["rtgate"] == after["rtgate"]


def _tuned_pipeline(rtgate_process: RunProcess, tmp_path: Path, root: Path, kernel: Path,
                    profile: str = "isolated") -> subprocess.CompletedProcess[str]:
    kernels = tmp_path / "kernels"
    kernels.mkdir(exist_ok=True)
    (kernels / "rt").symlink_to(kernel)
    # A budget any run meets: the exit is the result's status (a failed check: incomplete).
    budget = tmp_path / "thresholds.yml"
    budget.write_text("schema: rtgate/thresholds/v2\nbudgets:\n  - {board: rpi5, flavor: rt, "
                      "scenario: net, max_us: 1000000, avg_us: 1000000, reason: any run}\n")
    return rtgate_process("pipeline", "--board", "rpi5", "--kernels", str(kernels), "--flavors",
                          "rt", "--scenarios", "net", "--duration", "2s", "--scale", "0.5",
                          "--tuning", profile, "--thresholds", str(budget), "--out",
                          str(tmp_path / "out"), env={"RTGATE_ROOT": str(root)}, timeout=170)


def _runtime_values(pi: FakePi) -> dict[str, str]:
    return {path: (pi.fake / path).read_text() for path in RUNTIME_DEFAULTS}


ISOLATED = str(CPUS - 1)
HOUSEKEEPING = f"0-{CPUS - 2}" if CPUS > 2 else "0"


@pytest.mark.skipif(CPUS < 2, reason="the isolated profile keeps one CPU for housekeeping")
def test_tuned_tryboot_applies_verifies_records_and_undoes(rtgate_process: RunProcess,
                                                           tmp_path: Path, pi: FakePi) -> None:
    known_good = {name: (pi.firmware / name).read_bytes() for name in ("config.txt",
                                                                        "cmdline.txt")}
    assert _runtime_values(pi) == RUNTIME_DEFAULTS
    proc = _tuned_pipeline(rtgate_process,
                           tmp_path, _root(tmp_path, pi), _kernel(tmp_path, RELEASE))
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-3000:]

    # The words went into the slot's command line only; the known-good files are untouched.
    words = [f"isolcpus={ISOLATED}", f"nohz_full={ISOLATED}", f"rcu_nocbs={ISOLATED}",
             f"irqaffinity={HOUSEKEEPING}"]
    assert (pi.firmware / "rtgate" / "cmdline.txt").read_text() == \
        " ".join([CMDLINE_TXT.strip(), *words, "rtgate.slot=rtgate"]) + "\n"
    assert {name: (pi.firmware / name).read_bytes() for name in known_good} == known_good
    assert not (pi.firmware / "tryboot.txt").exists()
    assert pi.reboots() == ["reboot 0 tryboot", "reboot "]
    # Back on the known-good boot: its command line, Wi-Fi and Bluetooth back, the run-time
    # writes put back (the fake reboot resets none of them: rtgate did), no state left.
    assert (pi.fake / "cmdline").read_text() == CMDLINE_TXT
    assert (pi.fake / "class" / "net" / "wlan0").is_dir()
    assert _runtime_values(pi) == RUNTIME_DEFAULTS
    assert not pi.tuning_state.exists()

    result = load_result(tmp_path / "out" / "rt" / "net" / "result.json")
    assert result.status == "complete", result.reasons
    tuning = result.tuning
    assert tuning is not None and tuning.profile == "isolated"
    assert tuning.isolated_cpus == ISOLATED and tuning.boot_args == words
    assert tuning.firmware == ["dtoverlay=disable-wifi", "dtoverlay=disable-bt"]
    settings = ["isolcpus", "nohz_full", "rcu_nocbs", "irqaffinity", "dtoverlay=disable-wifi",
                "dtoverlay=disable-bt", "governor", "rt-throttling", "timer-migration",
                "irq-affinity", "cpu-dma-latency"]
    assert {(c.setting, c.phase) for c in tuning.checks} == {
        *((s, phase) for s in settings for phase in ("boot", "end")),
        ("cyclictest-affinity", "run"), ("load-affinity", "run")}
    assert {c.status for c in tuning.checks} == {"ok"}, [c for c in tuning.checks
                                                         if c.status != "ok"]
    # What ran was pinned: cyclictest on the isolated CPU (the board's load under taskset).
    assert f"-a{ISOLATED}" in result.tool.cmdline.split()

    # The run as a KCIDB report (issue 39), valid by kcidb-io: a hardware board, its boot
    # test passed; the fake kernel's metadata is no build record, and its build says so.
    report = tmp_path / "kcidb.json"
    proc = rtgate_process("kcidb", str(tmp_path / "out"), "--board", "rpi5", "--flavors", "rt",
                          "--scenarios", "net", "--origin", "rtgate_lab", "--thresholds",
                          str(tmp_path / "thresholds.yml"), "--out", str(report),
                          env={"RTGATE_ROOT": str(tmp_path / "rtgate-root")})
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(report.read_text())
    LATEST.validate(doc)
    (boot,) = [t for t in doc["tests"] if t["path"] == "boot"]
    assert boot["status"] == "PASS" and boot["misc"]["virtual"] is False
    assert {t["status"] for t in doc["tests"] if t["path"].endswith(".all.max")} == {"PASS"}
    (build,) = doc["builds"]
    assert "not a build record" in build["comment"]


def test_a_word_missing_from_proc_cmdline_is_incomplete_naming_it(rtgate_process: RunProcess,
                                                                  tmp_path: Path,
                                                                  pi: FakePi) -> None:
    # The firmware booted the slot, but the running kernel's /proc/cmdline lacks nohz_full
    # (what a bootloader that rewrites the command line, or a misspelt word, leaves).
    (pi.root / "drop").write_text("nohz_full")
    known_good = {name: (pi.firmware / name).read_bytes() for name in ("config.txt",
                                                                        "cmdline.txt")}
    proc = _tuned_pipeline(rtgate_process,
                           tmp_path, _root(tmp_path, pi), _kernel(tmp_path, RELEASE))
    assert proc.returncode == 3, proc.stderr[-3000:]
    result = load_result(tmp_path / "out" / "rt" / "net" / "result.json")
    assert result.status == "degraded"
    missing = [r for r in result.reasons if r.startswith("tuning: ")]
    assert missing == [
        f"tuning: nohz_full not in effect (boot): expected nohz_full={ISOLATED} on "
        "/proc/cmdline, found absent",
        f"tuning: nohz_full not in effect (end): expected nohz_full={ISOLATED} on "
        "/proc/cmdline, found absent"], result.reasons
    assert "nohz_full not in effect" in proc.stdout  # the verdict names it
    assert {name: (pi.firmware / name).read_bytes() for name in known_good} == known_good
    assert _runtime_values(pi) == RUNTIME_DEFAULTS and not pi.tuning_state.exists()


def test_a_crashed_tuned_run_is_undone_at_the_next_start(rtgate_process: RunProcess,
                                                         tmp_path: Path, pi: FakePi) -> None:
    # The crashed run: the profile applied on the board by the real scripts, never undone.
    applied = Applied(load_profile("isolated"), "rpi5", CPUS)
    subprocess.run(["ssh", "-p", str(pi.port), "-i", str(pi.root / "client_key"),
                    "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no",
                    "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR",
                    "root@127.0.0.1", "sh -s"],
                   input=applied.apply_script(str(pi.tuning_state)), text=True, check=True,
                   capture_output=True, timeout=60)
    assert (pi.fake / "timer_migration").read_text() == "0\n"
    assert (pi.fake / "sched_rt_runtime_us").read_text() == "-1\n"
    # The next run, untuned, puts everything back before it deploys.
    proc = _board_run(rtgate_process,
                      _root(tmp_path, pi), _kernel(tmp_path, RELEASE), tmp_path / "out")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "putting back the run-time settings a previous run left" in proc.stderr
    assert _runtime_values(pi) == RUNTIME_DEFAULTS and not pi.tuning_state.exists()


# rtgate board doctor -------------------------------------------------------------------------

VCGENCMD = """#!/bin/sh
# The Pi's vcgencmd, answering from the fake Pi's files. Like raspberrypi/utils vcgencmd.c
# (mbox_open), it first opens /dev/vcio, which Raspberry Pi OS gives to root and group video
# only (mode 0660): anyone else gets its two lines and exit 255.
if ! [ -r {vc}/vcio ]; then
  echo "Can't open device file: /dev/vcio"
  echo "Try creating a device file with: sudo mknod /dev/vcio c 100 0"
  exit 255
fi
case "$1" in
  version) cat {vc}/version ;;
  bootloader_version) cat {vc}/bootloader ;;
  get_throttled) echo "throttled=$(cat {vc}/throttled)" ;;
  *) echo "error=1 error_msg=\\"Command not registered\\""; exit 1 ;;
esac
"""
TIMEDATECTL = "#!/bin/sh\n# The Pi's timedatectl show -p NTPSynchronized --value.\ncat {vc}/ntp\n"
APT_MARK = "#!/bin/sh\n# The Pi's apt-mark showhold.\ncat {vc}/held\n"
SYSTEMCTL = "#!/bin/sh\n# The Pi's systemctl is-enabled rpi-eeprom-update.\ncat {vc}/eeprom\n"
# What a Pi 5 prints (the form of Raspberry Pi OS bookworm's vcgencmd) on the 2026-08-12 EEPROM
# release: its build date, git hash and timestamp as rpi-eeprom's firmware-2712/versions.txt
# lists them. bench/firmware/rpi5.yml flags none of it.
FIRMWARE_VERSION = ("2026/08/12 00:06:56 \nCopyright (c) 2012 Broadcom\n"
                    "version f5e89631 (release) (embedded)\n")
BOOTLOADER_VERSION = "2026/08/12 00:06:56\nversion f5e89631 (release)\ntimestamp 1786493216\n"
# Releases the shipped bench/firmware/rpi5.yml flags: 2026-05-26 (the default release there) as
# inside the listed bad range (2025/12/08 through 2026/06/17), 2024-11-12 as older than the
# maintainers' minimum, 2025-05-08.
LISTED_BAD = "2026/05/26 16:01:25\nversion 086b83e3 (release)\ntimestamp 1779807685\n"
TOO_OLD = "2024/11/12 16:10:44\nversion 4b019946 (release)\ntimestamp 1731427844\n"


def _vcgencmd(root: Path) -> Path:
    """The Pi's vcgencmd and the fake /dev/vcio it opens (root-only here: the bench user is not
    in group video), with a ready Pi's answers."""
    vc = root / "vc"
    vc.mkdir(exist_ok=True)
    for name, text in {"version": FIRMWARE_VERSION, "bootloader": BOOTLOADER_VERSION,
                       "throttled": "0x0\n", "vcio": ""}.items():
        (vc / name).write_text(text)
    (vc / "vcio").chmod(0o660)  # root:root, as root:video is to an account outside video
    (root / "bin" / "vcgencmd").write_text(VCGENCMD.format(vc=vc))
    (root / "bin" / "vcgencmd").chmod(0o755)
    return vc


def _pi_interface(pi: FakePi) -> Path:
    """The Pi's own programs and files a doctor reads, as a ready Pi answers them."""
    vc = _vcgencmd(pi.root)
    for name, text in {"ntp": "yes\n", "eeprom": "masked\n",
                       "held": "linux-image-rpi-2712\nraspi-firmware\nrpi-eeprom\n"}.items():
        (vc / name).write_text(text)
    for name, script in {"timedatectl": TIMEDATECTL, "apt-mark": APT_MARK,
                         "systemctl": SYSTEMCTL}.items():
        (pi.root / "bin" / name).write_text(script.format(vc=vc))
        (pi.root / "bin" / name).chmod(0o755)
    zone = pi.fake / "class" / "thermal" / "thermal_zone0"
    zone.mkdir(parents=True, exist_ok=True)
    (zone / "temp").write_text("48300\n")
    return vc


def _doctor(rtgate_process: RunProcess, root: Path) -> tuple[int, dict[str, tuple[str, str]]]:
    proc = rtgate_process("board", "doctor", "rpi5", "--plain", env={"RTGATE_ROOT": str(root)},
                          timeout=120)
    rows = {}
    for line in proc.stdout.splitlines():
        state, item, found, todo = line.split("\t")
        rows[item] = (state, found + " / " + todo)
    return proc.returncode, rows


def _failing(rows: dict[str, tuple[str, str]]) -> dict[str, str]:
    return {item: said for item, (state, said) in rows.items() if state == "fail"}


@pytest.mark.timeout(300)
def test_doctor_passes_a_ready_pi_and_names_each_planted_fault(rtgate_process: RunProcess,
                                                               tmp_path: Path,
                                                               pi: FakePi) -> None:
    vc = _pi_interface(pi)
    flag = pi.root / "tryboot-flag"
    root = _root(tmp_path, pi, tryboot_flag=str(flag))
    rc, rows = _doctor(rtgate_process, root)
    assert rc == 0 and _failing(rows) == {}, rows
    assert rows["ssh"][0] == rows["sudo"][0] == rows["RT privileges"][0] == "ok", rows
    assert rows["bootloader"] == ("ok", "2026/08/12 00:06:56 version f5e89631 (release) "
                                        "timestamp 1786493216 / ")
    assert rows["throttling"][0] == rows["time sync"][0] == rows["thermal"][0] == "ok", rows
    assert rows["autoboot.txt"][0] == rows["known-good kernel"][0] == "ok", rows
    assert rows["iperf3 peer"][0] == "ok" and rows["slot"][0] == "n/a", rows
    # Measures, but worth fixing: unpinned tools, the ondemand governor.
    assert rows["tool cyclictest"][0] == rows["governor"][0] == "warn", rows

    # Every fault of the Pi planted at once: each is named by its own row, and only those fail.
    autoboot = pi.firmware / "autoboot.txt"
    autoboot.write_text("[all]\ntryboot_a_b=1\nboot_partition=2\n")
    (vc / "throttled").write_text("0x50005\n")
    (pi.fake / "class" / "thermal" / "thermal_zone0" / "temp").write_text("85200\n")
    (vc / "ntp").write_text("no\n")
    flag.write_bytes(b"\x00\x00\x00\x01")
    (pi.firmware / "rtgate" / "overlays").mkdir(parents=True)
    # A bootloader inside the shipped bench/firmware/rpi5.yml's bad range, with its source.
    (vc / "bootloader").write_text(LISTED_BAD)
    rc, rows = _doctor(rtgate_process, root)
    assert rc == 3
    failing = _failing(rows)
    expected = {
        # raspberrypi/documentation, config_txt/autoboot.adoc, tryboot_a_b: "Set this property
        # to 1 to load the normal config.txt and boot.img files instead of tryboot.txt and
        # tryboot.img when the TRYBOOT flag is set" (from tryboot_partition).
        "autoboot.txt": "loads its config.txt, never tryboot.txt",
        "throttling": "under-voltage now, throttled now, under-voltage since boot",
        "thermal": "85.2 °C", "time sync": "NTPSynchronized=no",
        "known-good kernel": "is a test kernel",
        "slot overlays": "rtgate/overlays/README missing",
        "bootloader": "ignores os_prefix when checking for the initramfs, so the side slot "
                      "(os_prefix) may boot with the wrong initramfs (https://github.com/"
                      "raspberrypi/rpi-eeprom/commit/aa33b8dc7cee51de4b75580095521dea50407d6e)"}
    assert set(failing) == set(expected), rows
    for item, words in expected.items():
        assert words in failing[item], (item, failing[item])
    # vcgencmd ran as root: the bench user cannot open the fake /dev/vcio (group video), and
    # a doctor reading as that user would have seen no bootloader at all.
    vcgencmd = subprocess.run(["runuser", "-u", "nobody", "--", str(pi.root / "bin" / "vcgencmd"),
                               "bootloader_version"], capture_output=True, text=True, timeout=30)
    assert vcgencmd.returncode == 255 and "Can't open device file: /dev/vcio" in vcgencmd.stdout

    # A sudo that asks for a password: the bench has no privileges, and nothing vcgencmd says
    # can be read (it runs through that sudo), each row saying why.
    sudoers = pi.root / "etc" / "sudoers"
    # Written in place: the file sshd's namespace sees is this inode.
    ready = sudoers.read_text()
    sudoers.write_text(ready.replace("NOPASSWD: ", ""))
    rc, rows = _doctor(rtgate_process, root)
    failing = _failing(rows)
    assert rc == 3
    assert "a password is required" in failing["sudo"], rows
    assert "the trial did not run through sudo (sudo: a password is required)" in \
        failing["RT privileges"], rows
    assert "through the board file's sudo, which failed" in failing["bootloader"], rows
    sudoers.write_text(ready)

    # Faults of the board file, read as a run would: no capabilities on the route it names, a
    # pin the tool does not match, a peer address DNS does not know. And a bootloader older
    # than the shipped file's minimum.
    (vc / "bootloader").write_text(TOO_OLD)
    _with_caps(pi, None)
    wrong = _root(tmp_path / "wrong", pi, tryboot_flag=str(flag),
                  measure_privilege="file-capabilities", tools={"cyclictest": "0" * 64},
                  peer={"loads": ["iperf3-client"], "board_address": "rpi5-lab.invalid",
                        "board_port": 5201})
    rc, rows = _doctor(rtgate_process, wrong)
    failing = _failing(rows)
    assert rc == 3
    assert "file capabilities cap_ipc_lock,cap_sys_nice=ep" in failing["RT privileges"], rows
    assert "the board file pins 000000000000" in failing["tool cyclictest"], rows
    assert "rpi5-lab.invalid does not resolve" in failing["iperf3 peer"], rows
    # Only the minimum it is older than: 2024-11-12 has the 2024-04-18 fixes.
    assert "older than 2025/05/08: Raspberry Pi's automatic-update minimum" in \
        failing["bootloader"] and "older than 2024/04/18" not in failing["bootloader"], rows
    rc, rows = _doctor(rtgate_process, _root(tmp_path / "gone", pi, port=free_port()))
    assert rc == 3 and list(_failing(rows)) == ["ssh"], rows


def test_doctor_names_low_free_space_alone(rtgate_process: RunProcess, tmp_path: Path,
                                           pi: FakePi) -> None:
    """The one fault planted: the Pi's modules directory on a filesystem of 64 MiB (a tmpfs
    mounted in the board's own mount namespace, sshd's, so the board's df reads it; this host
    never sees it). Only the free-space row of the modules fails, naming what is free and what
    to free; the board is not ready (exit 3)."""
    _pi_interface(pi)
    root = _root(tmp_path, pi, tryboot_flag=str(pi.root / "tryboot-flag"))
    sshd = int((pi.root / "sshd.pid").read_text())
    subprocess.run(["nsenter", f"--mount=/proc/{sshd}/ns/mnt", "mount", "-t", "tmpfs", "-o",
                    "size=64m,mode=0755", "rtgate-small", str(pi.modules)], check=True)
    # A deployed module tree already takes part of it, as an old -rtgate tree would.
    subprocess.run(["nsenter", f"--mount=/proc/{sshd}/ns/mnt", "dd", "if=/dev/zero",
                    f"of={pi.modules}/old-rtgate.img", "bs=1M", "count=16", "status=none"],
                   check=True)
    proc = rtgate_process("board", "doctor", "rpi5", "--plain", env={"RTGATE_ROOT": str(root)},
                          timeout=120)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "rpi5: NOT ready" in proc.stderr
    rows = {line.split("\t")[1]: line.split("\t") for line in proc.stdout.splitlines()}
    assert [r[1] for r in rows.values() if r[0] == "fail"] == ["free space (modules)"], rows
    _, _, found, todo = rows["free space (modules)"]
    assert found == "48 MiB free", found
    assert todo.startswith("free at least 512 MiB") and "docs/rpi5.md" in todo, todo
    # The others, on this host's disk, are ok.
    assert rows["free space (firmware)"][0] == rows["free space (run)"][0] == "ok", rows


# crash evidence and recovery -----------------------------------------------------------------

def _crash_options(pi: FakePi, **more: object) -> dict[str, object]:
    """A console that replays what the board prints from now on, and the previous boot's log
    where the fake Pi keeps it."""
    serial = pi.root / "serial.txt"
    serial.touch()
    console = pi.root / "console"
    # From the byte it starts at: a serial line shows nothing of the past.
    console.write_text(f"#!/bin/sh\nn=$(wc -c <{serial})\nwhile :; do m=$(wc -c <{serial})\n"
                       f"  [ $m -gt $n ] && tail -c +$((n + 1)) {serial} | head -c $((m - n))\n"
                       "  n=$m; sleep 0.1; done\n")
    console.chmod(0o755)
    return {"console_command": str(console),
            "pstore_dir": str(pi.root / "pstore"),
            "pstore_archive_dir": str(pi.root / "pstore-archive"),
            # The default commands, with the fake Pi's journalctl (root's PATH is sudo's).
            "boots_command": f"{pi.root}/journalctl --list-boots --no-pager -q",
            "boot_log_command": f"{pi.root}/journalctl -k -b {{boot}} --no-pager -q", **more}


def _pipeline(rtgate_process: RunProcess, tmp_path: Path, root: Path,
              scenario: str = "net") -> tuple[subprocess.CompletedProcess[str], Path]:
    kernels = tmp_path / "kernels"
    kernels.mkdir()
    (kernels / "rt").symlink_to(_kernel(tmp_path, RELEASE))
    budget = tmp_path / "thresholds.yml"
    budget.write_text("schema: rtgate/thresholds/v2\nbudgets:\n  - {board: rpi5, flavor: rt, "
                      f"scenario: {scenario}, max_us: 1000000, avg_us: 1000000, "
                      "reason: any run}\n")
    out = tmp_path / "out"
    proc = rtgate_process("pipeline", "--board", "rpi5", "--kernels", str(kernels), "--flavors",
                          "rt", "--scenarios", scenario, "--duration", "2s", "--scale", "0.5",
                          "--thresholds", str(budget), "--out", str(out),
                          env={"RTGATE_ROOT": str(root)}, timeout=150)
    return proc, out


def test_a_test_kernel_that_panics_at_boot_fails_with_its_evidence(
        rtgate_process: RunProcess, tmp_path: Path, pi: FakePi) -> None:
    """The test kernel boots (its own boot in the journal), panics; the watchdog brings the
    board back on config.txt, where systemd-pstore (Unlink=yes, its default) moves the panic
    record out of pstore into its archive; then the board reboots once more. The run is the
    kernel's failure (exit 1), with the evidence in infra.json, the JUnit and the summary:
    the record systemd-pstore archived after the tryboot (not the older one archived before),
    the test boot's journal (not `-b -1`, which is the extra boot, nor the older crashed
    boot's), the console."""
    # An older panic in pstore is no evidence about this kernel: cleared before the tryboot.
    (pi.root / "pstore" / "dmesg-ramoops-9").write_text("Kernel panic - not syncing: older\n")
    pi.mode("panic")
    proc, out = _pipeline(rtgate_process, tmp_path, _root(tmp_path, pi, **_crash_options(pi)))
    assert proc.returncode == 1, proc.stderr[-3000:]
    said = "Kernel panic - not syncing: rtgate-test: planted panic"
    home = out / "rt" / "net"
    record = json.loads((home / "infra.json").read_text())
    assert record["crash"] == said and record["evidence"] == \
        "previous-boot/pstore-archive/dmesg-ramoops-0", record
    assert "did not stay up" in record["message"] and "came back by itself" in record["message"]
    summary = (out / "summary.md").read_text()
    assert "the kernel under test crashed" in summary and said in summary
    assert "infrastructure failure" not in summary
    junit = (out / "junit.xml").read_text()
    assert 'type="crash"' in junit and said in junit
    evidence = home / "previous-boot"
    assert [p.name for p in (evidence / "pstore-archive").iterdir()] == ["dmesg-ramoops-0"]
    assert not any((evidence / "pstore").iterdir())  # systemd-pstore had emptied it
    journal = (evidence / "journal-kernel.txt").read_text()
    # The boots between the one left for the tryboot and the one answering: the test boot
    # (which said it was about to panic) and the fallback's; not the older crashed boot.
    assert "rtgate-test: about to panic" in journal and "an older boot" not in journal
    # The console from the tryboot on: the test boot, its panic, the known-good boots.
    console = (home / "console.log").read_text().splitlines()
    assert "tryboot.txt" in console[0] and said in console[1], console
    assert "config.txt" in console[2] and sum(said in line for line in console) == 1
    # Restored all the same.
    assert pi.reboots() == ["reboot 0 tryboot", "reboot "]
    assert not (pi.firmware / "tryboot.txt").exists()


def test_a_test_kernel_that_crashes_while_measuring_is_read_from_its_own_boot(
        rtgate_process: RunProcess, tmp_path: Path, pi: FakePi) -> None:
    """The test kernel is up and measuring when it oopses and stops feeding the watchdog:
    the board resets to config.txt and reboots once more. Only the test boot's journal, found
    by the boot id rtgate recorded after the tryboot, holds the oops (no console, nothing in
    pstore): it is the kernel's failure, exit 1."""
    oops = "BUG: Unable to handle kernel paging request at virtual address dead000000000100"
    bench = (f"echo '[   12.5] {oops}' >>{pi.root}/journal/$(tr -d - <{pi.root}/boot_id).txt; "
             f"(setsid sh -c '{pi.root}/fake-reboot watchdog; {pi.root}/fake-reboot' "
             "</dev/null >/dev/null 2>&1 &); sleep 60")
    options = _crash_options(pi, bench_command=bench)
    del options["console_command"]
    proc, out = _pipeline(rtgate_process, tmp_path, _root(tmp_path, pi, **options), "idle")
    assert proc.returncode == 1, proc.stderr[-3000:]
    record = json.loads((out / "rt" / "idle" / "infra.json").read_text())
    assert record["crash"] == oops and record["evidence"] == "previous-boot/journal-kernel.txt"
    assert "left the test boot during the run" in record["message"], record
    journal = (out / "rt" / "idle" / "previous-boot" / "journal-kernel.txt").read_text()
    assert journal.count("-- rtgate: the test boot") == 1 and oops in journal
    assert (out / "summary.md").read_text().count(oops) >= 1


def test_a_test_kernel_that_hangs_with_the_watchdog_fed_is_power_cycled_and_read(
        rtgate_process: RunProcess, tmp_path: Path, pi: FakePi) -> None:
    """A test kernel whose tasks hang while it still feeds the watchdog drops off the network
    and stays down: rtgate switches the power (power_cycle_command), the board boots config.txt,
    and the hung test boot's journal says what happened: the kernel's failure, exit 1."""
    hung = "INFO: task kworker/u8:2:97 blocked for more than 122 seconds."
    bench = (f"echo '[  245.0] {hung}' >>{pi.root}/journal/$(tr -d - <{pi.root}/boot_id).txt; "
             f"echo vanish >{pi.root}/mode; "
             f"(setsid {pi.root}/fake-reboot hang </dev/null >/dev/null 2>&1 &); sleep 60")
    options = _crash_options(pi, bench_command=bench, boot_timeout_s=4,
                             power_cycle_command=f"{pi.root}/fake-reboot power")
    proc, out = _pipeline(rtgate_process, tmp_path, _root(tmp_path, pi, **options), "idle")
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "power-cycling it" in proc.stderr
    record = json.loads((out / "rt" / "idle" / "infra.json").read_text())
    assert record["crash"] == hung and record["evidence"] == "previous-boot/journal-kernel.txt"
    assert "power" in pi.reboots()


def test_a_fallback_without_a_sign_of_a_crash_is_the_labs(
        rtgate_process: RunProcess, tmp_path: Path, pi: FakePi) -> None:
    """The same loss during the run, with nothing in any log: the board left the test boot by
    itself and nothing says the kernel did it (a power loss, a network): exit 3."""
    bench = (f"(setsid sh -c '{pi.root}/fake-reboot watchdog' </dev/null >/dev/null 2>&1 &); "
             "sleep 60")
    options = _crash_options(pi, bench_command=bench)
    proc, out = _pipeline(rtgate_process, tmp_path, _root(tmp_path, pi, **options), "idle")
    assert proc.returncode == 3, proc.stderr[-3000:]
    record = json.loads((out / "rt" / "idle" / "infra.json").read_text())
    assert record.get("crash") is None and "no sign of a crash" in record["message"], record
    assert "infrastructure failure" in (out / "summary.md").read_text()


def test_a_board_that_does_not_come_back_is_power_cycled(rtgate_process: RunProcess,
                                                         tmp_path: Path, pi: FakePi) -> None:
    pi.mode("vanish")
    root = _root(tmp_path, pi, **_crash_options(
        pi, boot_timeout_s=3, power_cycle_command=f"{pi.root}/fake-reboot power"))
    out = tmp_path / "out"
    proc = _board_run(rtgate_process, root, _kernel(tmp_path, RELEASE), out)
    assert proc.returncode == 3, proc.stderr
    assert "power-cycling it" in proc.stderr
    assert "came back after a power cycle" in proc.stderr and "no sign of a crash" in proc.stderr
    # Back on config.txt after the power cycle, then restored as after any run.
    assert pi.reboots() == ["reboot 0 tryboot", "power", "reboot "]
    assert not (pi.firmware / "tryboot.txt").exists()


def test_deploy_first_returns_a_board_left_on_a_test_kernel(rtgate_process: RunProcess,
                                                           tmp_path: Path, pi: FakePi) -> None:
    # A cancelled job's board: the slot booted by tryboot, never restored.
    slot = pi.firmware / "rtgate"
    slot.mkdir()
    (slot / "cmdline.txt").write_text(CMDLINE_TXT.strip() + " rtgate.slot=rtgate\n")
    (pi.firmware / "tryboot.txt").write_text(CONFIG_TXT + "[all]\nos_prefix=rtgate/\n")
    subprocess.run([str(pi.root / "fake-reboot"), "0 tryboot"], check=True, timeout=30)
    assert "rtgate.slot=rtgate" in (pi.fake / "cmdline").read_text()
    out = tmp_path / "out"
    proc = _board_run(rtgate_process, _root(tmp_path, pi), _kernel(tmp_path, RELEASE), out)
    assert proc.returncode == 0, proc.stderr
    assert "still runs a test kernel (/proc/cmdline has rtgate.slot=)" in proc.stderr
    assert pi.reboots() == ["reboot 0 tryboot", "reboot ", "reboot 0 tryboot", "reboot "]
    assert (pi.fake / "cmdline").read_text() == CMDLINE_TXT


@pytest.mark.parametrize("before, during, after, reason", [
    # The supply sags once the loads start: under-voltage and throttling since boot.
    ("0x0", "0x50000", "0x50000",
     "the Pi reported under-voltage since boot, throttled since boot during the run "
     "(vcgencmd get_throttled 0x0 -> 0x50000)"),
    # Already under-voltage since boot: a sag during the run would leave the same 0x10000.
    ("0x10000", "0x10000", "0x10000",
     "cannot tell whether the Pi throttled during the run: the Pi had already reported "
     "under-voltage since boot before the run (get_throttled 0x10000), so a recurrence during "
     "it would not show"),
    # vcgencmd answers before the run and not after it.
    ("0x0", "garbled", "garbled",
     "cannot tell whether the Pi throttled during the run: get_throttled gave no value after "
     "the run (before: 0x0)"),
])
def test_a_pi_that_throttles_while_it_measures_is_degraded(
        rtgate_process: RunProcess, tmp_path: Path, pi: FakePi, before: str, during: str,
        after: str, reason: str) -> None:
    vc = _pi_interface(pi)
    (vc / "throttled").write_text(before + "\n")
    bench = (f"echo {during} >{vc}/throttled; RTGATE_ROOT={paths.ROOT} {sys.executable} -m "
             "rtgate bench --board local --scenario {scenario} --duration {duration} --out {out}")
    out = tmp_path / "out"
    proc = _board_run(rtgate_process, _root(tmp_path, pi, bench_command=bench),
                      _kernel(tmp_path, RELEASE), out)
    assert proc.returncode == 3, proc.stderr
    result = load_result(out / "result.json")
    assert result.status == "degraded" and result.totals.samples > 0
    assert result.environment["throttled"] == {
        "before": before, "after": after if after.startswith("0x") else None}
    assert reason in result.reasons, result.reasons
