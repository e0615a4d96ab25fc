"""A lab of booted Debian 12 systems for the Ansible playbook (lab/): a controller and two
"Raspberry Pi 5"s, each a `systemd-nspawn -b` container with systemd as init and a real sshd.

The host runs no systemd, so nspawn starts with ``--register=no --keep-unit`` (no machined, no
scope unit of its own). Each container is an overlay over one cached root file system, built
once with debootstrap (like the kernels, under the rtgate cache: ``lab/``), and lives in a network
namespace of its own:

    admin ns (192.0.2.1) ──veth── controller (192.0.2.2 uplink; 192.168.50.1 lab)
                                      │
                      switch ns: bridge ── rpi5-a (192.168.50.2), rpi5-b (192.168.50.3)

Every namespace is this test's own (names carry a random id): nothing reaches the host's network
or its port 22. The admin namespace plays the lab admin's workstation, where ansible-playbook
runs; it reaches the Pis only through the controller (ProxyJump), as a real isolated lab does.
Nothing here routes anywhere: the containers have no way out, so everything the playbook
installs is already in the image (packages) or handed in read-only (a wheelhouse for pip).

What makes the containers Pi-like, said as such (a container is not a Pi):
- ``/boot/firmware`` with ``config.txt``, ``cmdline.txt`` and ``overlays/README``;
- ``/dev/vcio``: a character node this test makes (1:3, /dev/null's numbers, so reading it is
  harmless), owned root:video 0660 as on Raspberry Pi OS, bound into the container;
- ``vcgencmd``: a stand-in that, like the real one, must open /dev/vcio (so it works only for
  root and the video group) and answers from files under /var/lib/fake-vc/;
- stand-in packages ``linux-image-rpi-2712``, ``raspi-firmware`` and ``rpi-eeprom`` (empty
  .debs; rpi-eeprom brings a stand-in ``rpi-eeprom-update`` and its unit), so holding and masking
  run as on a Pi;
- ``/sys/fs/pstore``: a directory of the test's, bound over the container's, and
  systemd-pstore allowed to run in a container: its unit has ``ConditionVirtualization=!container``
  (systemd 252, units/systemd-pstore.service.in), which a drop-in clears (re-adding the
  ``ConditionDirectoryNotEmpty=`` that clearing drops too).

The controller's loop devices (the runner role loop-mounts each board's untrusted cache): a
container's /dev is nspawn's own tmpfs with no loop nodes, and nothing makes them there (no
udev; mount(8) opens /dev/loopN and creates no node). So this machine's ``/dev/loop-control``
is bound in, and nodes of the loop major for the first ``LOOP_NODES`` minors, made by this test
(like /dev/vcio): ``mount -o loop`` asks loop-control for a free device (LOOP_CTL_GET_FREE: the
lowest unbound one, a new one if none is) and opens its node. The devices are this machine's,
shared with whatever else uses loop devices here; the mount is the container's, and its loop
device is released (autoclear) when the container ends. nspawn keeps CAP_SYS_ADMIN (its default
capability set), and sets no device policy here: that policy is a property of the scope unit
nspawn allocates ("Enforce a strict device policy, similar to the one nspawn configures when it
allocates its own scope unit", units/systemd-nspawn@.service.in), and with ``--register=no
--keep-unit`` it allocates none ("do not allocate nor register anything", systemd PR #6166).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from devnodes import opens_devices

from rtgate.kernel.cache import cache_root

ROOT = Path(__file__).resolve().parents[1]
MIRROR = os.environ.get("DEBIAN_MIRROR", "http://deb.debian.org/debian")
# Everything the roles install, on any of the three hosts: the containers have no network.
PACKAGES = sorted("""
systemd systemd-sysv dbus libpam-systemd python3 python3-venv python3-apt acl
openssh-server openssh-client sudo iproute2 iputils-ping procps ca-certificates
rt-tests stress-ng iperf3 libcap2-bin chrony nftables jq curl picocom git gnuplot-nox
""".split())
IMAGE_VERSION = 1  # bump when the image's own set-up below changes
SSH_PORT = 22

LAB_NET = "192.168.50"
# Loop nodes bound into the controller: a free device of this machine's is one of the first few
# unless as many are in use at once.
LOOP_NODES = 32
LOOP_MAJOR = 7
UPLINK = "192.0.2"


def sh(argv: list[str] | str, timeout: float = 600, check: bool = True,
       **kw: object) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                          shell=isinstance(argv, str), **kw)
    if check and proc.returncode != 0:
        raise RuntimeError(f"{argv!r}: exit {proc.returncode}\n{proc.stdout[-3000:]}"
                           f"\n{proc.stderr[-3000:]}")
    return proc


def lab_cache() -> Path:
    return cache_root("trusted") / "lab"


STAND_IN_DEB = """\
Package: {name}
Version: 1:0+rtgate.standin
Architecture: all
Maintainer: rtgate tests <rtgate@localhost>
Description: stand-in for the Raspberry Pi package {name} (rtgate's lab tests)
 Empty: it exists so that apt-mark hold and systemctl mask run as on a Pi.
"""

EEPROM_UPDATE = """\
#!/bin/sh
# Stand-in for rpi-eeprom-update (rtgate's lab tests): reports the bootloader release the
# fake VideoCore answers with and the one this "package" would install; -a "installs" it (the
# real one stages it for the next boot; here it takes effect at once).
state=/var/lib/fake-vc
current=$(sed -n 1p $state/bootloader_version 2>/dev/null)
latest=$(cat /usr/lib/rpi-eeprom-standin/default 2>/dev/null)
case "$1" in
  -a) { echo "$latest"; sed 1d $state/bootloader_version; } >$state/bootloader_version.new
      mv $state/bootloader_version.new $state/bootloader_version
      echo "EEPROM updates pending. Please reboot to apply the update." ;;
  *) echo "BOOTLOADER: up to date"
     echo "   CURRENT: $current"
     echo "    LATEST: $latest" ;;
esac
"""

EEPROM_UNIT = """\
[Unit]
Description=Stand-in for rpi-eeprom-update.service (rtgate's lab tests)

[Service]
Type=oneshot
ExecStart=/usr/bin/rpi-eeprom-update

[Install]
WantedBy=multi-user.target
"""

VCGENCMD = """\
#!/bin/sh
# Stand-in for vcgencmd (rtgate's lab tests). The real one talks to the VideoCore through
# /dev/vcio, root:video 0660 on Raspberry Pi OS: without access it fails, and so does this.
exec 3</dev/vcio || { echo "VCHI initialization failed" >&2; exit 255; }
state=/var/lib/fake-vc
case "$1" in
  version) cat $state/version ;;
  bootloader_version) cat $state/bootloader_version ;;
  get_throttled) echo "throttled=$(cat $state/throttled)" ;;
  *) echo "error=1 error_msg=\\"Command not registered\\"" ; exit 255 ;;
esac
"""

PSTORE_DROPIN = """\
# rtgate's lab tests: the "Pi" is an nspawn container, and systemd-pstore.service is
# ConditionVirtualization=!container. An empty assignment resets every condition of the unit
# (systemd.unit(5)), so the directory condition comes back on its own line.
[Unit]
ConditionVirtualization=
ConditionDirectoryNotEmpty=/sys/fs/pstore
"""


def _image_key() -> str:
    text = "\n".join([str(IMAGE_VERSION), MIRROR, *PACKAGES, STAND_IN_DEB, EEPROM_UPDATE,
                      EEPROM_UNIT, VCGENCMD, PSTORE_DROPIN])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def image() -> Path:
    """The cached root file system (built once: debootstrap, then the stand-ins)."""
    done = lab_cache() / f"bookworm-{_image_key()}"
    if (done / "etc" / "os-release").is_file():
        return done
    lab_cache().mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="image.", dir=lab_cache()))
    try:
        rootfs = work / "rootfs"
        sh(["debootstrap", "--variant=minbase", f"--include={','.join(PACKAGES)}", "bookworm",
            str(rootfs), MIRROR], timeout=1800)
        _stand_ins(rootfs, work)
        # Host keys are each container's own (made at start); apt's downloads are not needed.
        for key in (rootfs / "etc" / "ssh").glob("ssh_host_*"):
            key.unlink()
        shutil.rmtree(rootfs / "var" / "cache" / "apt" / "archives", ignore_errors=True)
        (rootfs / "var" / "cache" / "apt" / "archives" / "partial").mkdir(parents=True)
        # No console getty fighting over the test's stdin; nothing from the host's resolver.
        (rootfs / "etc" / "systemd" / "system" / "console-getty.service").symlink_to("/dev/null")
        (rootfs / "etc" / "resolv.conf").write_text("")
        rootfs.rename(done)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for old in lab_cache().glob("bookworm-*"):  # images of an older recipe
        if old != done:
            shutil.rmtree(old, ignore_errors=True)
    return done


def _stand_ins(rootfs: Path, work: Path) -> None:
    debs = []
    for name in ("linux-image-rpi-2712", "raspi-firmware", "rpi-eeprom"):
        pkg = work / name
        (pkg / "DEBIAN").mkdir(parents=True)
        (pkg / "DEBIAN" / "control").write_text(STAND_IN_DEB.format(name=name))
        if name == "rpi-eeprom":
            _put(pkg / "usr/bin/rpi-eeprom-update", EEPROM_UPDATE, 0o755)
            _put(pkg / "lib/systemd/system/rpi-eeprom-update.service", EEPROM_UNIT, 0o644)
            _put(pkg / "usr/lib/rpi-eeprom-standin/default", "2025/05/08 10:00:00\n", 0o644)
        sh(["dpkg-deb", "--root-owner-group", "--build", str(pkg), str(work / f"{name}.deb")])
        debs.append(f"/tmp/{name}.deb")
        shutil.copy(work / f"{name}.deb", rootfs / "tmp" / f"{name}.deb")
    sh(["chroot", str(rootfs), "dpkg", "-i", *debs])
    for deb in debs:
        (rootfs / deb.lstrip("/")).unlink()
    _put(rootfs / "usr/bin/vcgencmd", VCGENCMD, 0o755)
    _put(rootfs / "etc/systemd/system/systemd-pstore.service.d/nspawn.conf", PSTORE_DROPIN,
         0o644)


def _put(path: Path, text: str, mode: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)


def wheelhouse() -> Path:
    """rtgate's dependencies as wheels, for the containers' pip (they have no network): keyed by
    pyproject.toml, built once from this machine's pip and its index."""
    key = hashlib.sha256((ROOT / "pyproject.toml").read_bytes() + b"[runner]").hexdigest()[:16]
    done = lab_cache() / f"wheels-{key}"
    if done.is_dir():
        return done
    tmp = Path(tempfile.mkdtemp(prefix="wheels.", dir=lab_cache()))
    try:
        sh([sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check",
            "--only-binary=:all:", "-d", str(tmp), "setuptools>=68", "wheel"], timeout=900)
        sh([sys.executable, "-m", "pip", "wheel", "-q", "--disable-pip-version-check",
            "-w", str(tmp), f"{ROOT}[runner]"], timeout=1800)
        for built in tmp.glob("rtgate-*.whl"):  # rtgate comes from the checkout, never from here
            built.unlink()
        tmp.rename(done)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return done


@dataclass
class Host:
    name: str
    address: str  # what the admin's ssh config names (the Pis: on the lab segment)
    netns: str
    root: Path  # the merged overlay
    workdir: Path
    binds: list[str] = field(default_factory=list)
    supervisor: subprocess.Popen[bytes] | None = None

    def nsenter(self, command: str, timeout: float = 120,
                check: bool = True) -> subprocess.CompletedProcess[str]:
        """A command inside the running container (its init's namespaces), as root."""
        pid = self.leader()
        return sh(["nsenter", "-t", str(pid), "-m", "-u", "-i", "-n", "-p", "--",
                   "/bin/sh", "-c", command], timeout=timeout, check=check)

    def leader(self) -> int:
        """The container's init: the child of nspawn (whose pid the supervisor writes)."""
        pidfile = self.workdir / "nspawn.pid"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with contextlib.suppress(FileNotFoundError, ValueError):
                nspawn = int(pidfile.read_text())
                kids = Path(f"/proc/{nspawn}/task/{nspawn}/children").read_text().split()
                if kids:
                    return int(kids[0])
            time.sleep(0.2)
        raise RuntimeError(f"{self.name}: no container init")


SUPERVISOR = """\
#!/bin/sh
# Like systemd-nspawn@.service (RestartForceExitStatus=133): a reboot inside the container makes
# nspawn exit 133, and the container is started again.
{firmware}
while :; do
  firmware
  systemd-nspawn "$@" &
  echo $! >{pidfile}
  wait $!
  rc=$?
  echo "$(date +%s) nspawn exit $rc" >>{log}
  [ $rc -eq 133 ] || exit $rc
done
"""

FIRMWARE = """\
# The Pi firmware's part of a boot, for a "Pi" (a stand-in): a reboot whose parameter says
# tryboot (`reboot '0 tryboot'`; fake-firmware.service keeps systemd's /run/systemd/reboot-param)
# reads tryboot.txt once, else config.txt; that file's os_prefix picks cmdline.txt, which becomes
# the container's /proc/cmdline. The flag is cleared before the boot, as the firmware does.
firmware() {{
  fw={root}/boot/firmware; param={root}/var/lib/fake-vc/reboot-param; config=$fw/config.txt
  case "$(cat $param 2>/dev/null)" in
    *tryboot*) [ -f $fw/tryboot.txt ] && config=$fw/tryboot.txt ;;
  esac
  rm -f $param
  prefix=$(sed -n 's/^os_prefix=//p' $config | tail -n 1)
  head -n 1 $fw/${{prefix}}cmdline.txt >{root}/var/lib/fake-vc/cmdline
}}
"""

FIRMWARE_UNIT = """\
[Unit]
Description=Stand-in for the Pi firmware's tryboot flag (rtgate's lab tests): keeps the reboot
Description=parameter where the next boot's firmware stand-in reads it
DefaultDependencies=no
Conflicts=shutdown.target
Before=shutdown.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/true
ExecStop=/bin/sh -c 'cp /run/systemd/reboot-param /var/lib/fake-vc/reboot-param 2>/dev/null || true'

[Install]
WantedBy=multi-user.target
"""


class Lab:
    """Three booted containers on a private network; stop() undoes every namespace and mount."""

    def __init__(self, base: Path, wheels: Path) -> None:
        self.id = uuid.uuid4().hex[:6]
        self.dir = Path(tempfile.mkdtemp(prefix=f"rtgate-lab-{self.id}."))
        self.base, self.wheels = base, wheels
        self.admin_ns = f"rtl{self.id}-admin"
        self.switch_ns = f"rtl{self.id}-sw"
        self.hosts: dict[str, Host] = {}
        self.timings: dict[str, float] = {}
        self.started = 0.0  # time.monotonic() when start() began: fresh machines, nothing booted
        self._netns: list[str] = []
        self._mounts: list[Path] = []
        self.key = self.dir / "admin_ed25519"
        sh(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "admin@workstation",
            "-f", str(self.key)])

    # network ---------------------------------------------------------------------------------
    def _ns(self, name: str) -> str:
        sh(["ip", "netns", "add", name])
        self._netns.append(name)
        sh(["ip", "-n", name, "link", "set", "lo", "up"])
        return name

    def _network(self) -> None:
        admin, switch = self._ns(self.admin_ns), self._ns(self.switch_ns)
        sh(["ip", "-n", switch, "link", "add", "br0", "type", "bridge"])
        sh(["ip", "-n", switch, "link", "set", "br0", "up"])
        for netns in ("ctl", "pa", "pb"):
            self._ns(f"rtl{self.id}-{netns}")
        ctl = f"rtl{self.id}-ctl"
        # The uplink: the admin's workstation to the controller's first interface.
        sh(["ip", "link", "add", "up0", "netns", admin, "type", "veth", "peer", "name", "eth0",
            "netns", ctl])
        sh(["ip", "-n", admin, "addr", "add", f"{UPLINK}.1/24", "dev", "up0"])
        sh(["ip", "-n", admin, "link", "set", "up0", "up"])
        sh(["ip", "-n", ctl, "addr", "add", f"{UPLINK}.2/24", "dev", "eth0"])
        sh(["ip", "-n", ctl, "link", "set", "eth0", "up"])
        # A new namespace inherits this machine's forwarding (on where dockerd runs); the
        # controller's /etc/sysctl.d file (lab/roles/controller) turns it off at boot, which a
        # container cannot do itself (nspawn mounts /proc/sys read-only here): done for it.
        sh(["ip", "netns", "exec", ctl, "sysctl", "-q", "-w", "net.ipv4.ip_forward=0",
            "net.ipv6.conf.all.forwarding=0"])
        # The lab segment: every board's and the controller's second interface on one bridge.
        for i, netns, dev in ((1, ctl, "eth1"), (2, f"rtl{self.id}-pa", "eth0"),
                              (3, f"rtl{self.id}-pb", "eth0")):
            port = f"p{i}"
            sh(["ip", "link", "add", port, "netns", switch, "type", "veth", "peer", "name", dev,
                "netns", netns])
            sh(["ip", "-n", switch, "link", "set", port, "master", "br0", "up"])
            sh(["ip", "-n", netns, "addr", "add", f"{LAB_NET}.{i}/24", "dev", dev])
            sh(["ip", "-n", netns, "link", "set", dev, "up"])

    # containers ------------------------------------------------------------------------------
    def _overlay(self, name: str) -> Path:
        d = self.dir / name
        for sub in ("upper", "work", "root"):
            (d / sub).mkdir(parents=True)
        sh(["mount", "-t", "overlay", "overlay", "-o",
            f"lowerdir={self.base},upperdir={d / 'upper'},workdir={d / 'work'}", str(d / "root")])
        self._mounts.append(d / "root")
        return d / "root"

    def _seed(self, host: Host) -> None:
        root = host.root
        (root / "etc" / "hostname").write_text(f"{host.name}\n")
        with open(root / "etc" / "hosts", "a") as hosts:
            hosts.write(f"127.0.1.1 {host.name}\n")
        sh(["ssh-keygen", "-A", "-f", str(root)])
        # The admin's account, as a Pi imager or a Debian installer with an SSH key leaves it:
        # a key, sudo without a password.
        sh(["chroot", str(root), "useradd", "-m", "-s", "/bin/bash", "-G", "sudo", "admin"])
        ssh_dir = root / "home" / "admin" / ".ssh"
        ssh_dir.mkdir(mode=0o700)
        (ssh_dir / "authorized_keys").write_text(self.key.with_suffix(".pub").read_text())
        sh(["chroot", str(root), "chown", "-R", "admin:admin", "/home/admin/.ssh"])
        _put(root / "etc/sudoers.d/admin", "admin ALL=(ALL) NOPASSWD: ALL\n", 0o440)

    def _seed_pi(self, host: Host) -> None:
        root, work = host.root, host.workdir
        fw = root / "boot" / "firmware"
        _put(fw / "config.txt", "# known-good\narm_64bit=1\nauto_initramfs=1\n", 0o755)
        _put(fw / "cmdline.txt", "console=serial0,115200 root=PARTUUID=1234-02 rootwait\n",
             0o755)
        _put(fw / "overlays" / "README", "Device Tree overlays of the known-good kernel\n",
             0o755)
        state = root / "var" / "lib" / "fake-vc"
        _put(state / "version", "2025/05/08 10:00:00\nCopyright (c) 2012 Broadcom\n"
             "version 1a2b3c4d (release) (embedded)\n", 0o644)
        # The bootloader the "Pi" comes with: inside rtgate's own known-bad range (2026-05-26,
        # bench/firmware/rpi5.yml), so the playbook must update it before it holds rpi-eeprom.
        _put(state / "bootloader_version", "2026/05/26 12:00:00\nversion abcdef12 (release)\n",
             0o644)
        _put(state / "throttled", "0x0\n", 0o644)
        _put(root / "usr/lib/rpi-eeprom-standin/default", "2026/06/29 10:00:00\n", 0o644)
        # /dev/vcio: the test's own node (never the host's), root:video 0660.
        vcio = self._devices(host) / "vcio"
        os.mknod(vcio, 0o660 | 0o020000, os.makedev(1, 3))
        video = int(sh(["chroot", str(root), "getent", "group", "video"]).stdout.split(":")[2])
        os.chown(vcio, 0, video)
        os.chmod(vcio, 0o660)
        pstore = work / "pstore"
        pstore.mkdir()
        _put(root / "etc/systemd/system/fake-firmware.service", FIRMWARE_UNIT, 0o644)
        wants = root / "etc/systemd/system/multi-user.target.wants"
        wants.mkdir(parents=True, exist_ok=True)
        (wants / "fake-firmware.service").symlink_to("/etc/systemd/system/fake-firmware.service")
        # Binds below /proc are made inside the container: the source is the container's path.
        (state / "cmdline").write_text("")
        host.binds += [f"--bind={vcio}:/dev/vcio", f"--bind={pstore}:/sys/fs/pstore",
                       "--bind-ro=/var/lib/fake-vc/cmdline:/proc/cmdline",
                       # cyclictest holds it at 0, as on the Pi (the measurement is this host's)
                       "--bind=/dev/cpu_dma_latency"]

    def _devices(self, host: Host) -> Path:
        """A directory for the host's device nodes whose mount lets them open: the work
        directory's, else (a nodev /tmp) a small tmpfs of the lab's own."""
        devices = host.workdir / "dev"
        if not devices.is_dir():
            devices.mkdir()
            if not opens_devices(devices):
                sh(["mount", "-t", "tmpfs", "-o", "mode=0755,size=64k,nosuid", "tmpfs",
                    str(devices)])
                self._mounts.append(devices)
        return devices

    def _seed_controller(self, host: Host) -> None:
        """Loop devices: this machine's loop-control, and nodes of the test's own."""
        nodes = self._devices(host)
        host.binds.append("--bind=/dev/loop-control")
        for minor in range(LOOP_NODES):
            node = nodes / f"loop{minor}"
            os.mknod(node, 0o660 | stat.S_IFBLK, os.makedev(LOOP_MAJOR, minor))
            host.binds.append(f"--bind={node}:/dev/loop{minor}")

    def start(self) -> Lab:
        self.started = time.monotonic()
        self._network()
        for name, address, netns in (
                ("controller", f"{UPLINK}.2", f"rtl{self.id}-ctl"),
                ("rpi5-a", f"{LAB_NET}.2", f"rtl{self.id}-pa"),
                ("rpi5-b", f"{LAB_NET}.3", f"rtl{self.id}-pb")):
            workdir = self.dir / name
            host = Host(name, address, netns, self._overlay(name), workdir)
            self._seed(host)
            if name == "controller":
                self._seed_controller(host)
            else:
                self._seed_pi(host)
            host.binds.append(f"--bind-ro={self.wheels}:/srv/wheels")
            self.hosts[name] = host
        for host in self.hosts.values():
            self._boot(host)
        for host in self.hosts.values():
            self.wait_booted(host)
        self._ssh_config()
        return self

    def _boot(self, host: Host) -> None:
        sup = host.workdir / "supervise"
        firmware = (FIRMWARE.format(root=host.root)
                    if (host.root / "boot" / "firmware").is_dir() else "firmware() { :; }")
        _put(sup, SUPERVISOR.format(pidfile=host.workdir / "nspawn.pid", firmware=firmware,
                                    log=host.workdir / "restarts.log"), 0o755)
        argv = [str(sup), "-b", "-q", "-D", str(host.root), "--register=no", "--keep-unit",
                f"--machine=rtl{self.id}-{host.name}", f"--hostname={host.name}",
                f"--network-namespace-path=/run/netns/{host.netns}",
                # mlockall for cyclictest -m (not in nspawn's default capability set)
                "--capability=CAP_IPC_LOCK", "--console=read-only",
                # nftables in its own network namespace (the controller role's firewall)
                "--capability=CAP_NET_ADMIN", *host.binds]
        with open(host.workdir / "console.log", "ab") as log:
            host.supervisor = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                                               stderr=subprocess.STDOUT, start_new_session=True)

    def wait_booted(self, host: Host, timeout: float = 120) -> None:
        """systemd in the container says it is up (running or degraded), sshd listens and
        logins are allowed: pam_nologin(8) refuses every user but root while /run/nologin exists
        (systemd-user-sessions.service removes it; a degraded boot may have failed to)."""
        deadline = time.monotonic() + timeout
        said = ""
        while time.monotonic() < deadline:
            if host.supervisor and host.supervisor.poll() is not None:
                raise RuntimeError(f"{host.name}: nspawn exited {host.supervisor.returncode}:\n"
                                   + self.console(host))
            with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
                said = host.nsenter("systemctl is-system-running; systemctl is-active ssh; "
                                    "test -e /run/nologin && echo nologin; "
                                    "systemctl --failed --no-legend --plain",
                                    timeout=20, check=False).stdout
                state, ssh, *rest = said.split("\n") + [""]
                if (state in ("running", "degraded") and ssh.strip() == "active"
                        and "nologin" not in rest):
                    return
            time.sleep(1)
        raise RuntimeError(f"{host.name} did not boot in {timeout:g} s ({said!r}):\n"
                           + self.console(host))

    def console(self, host: Host) -> str:
        with contextlib.suppress(OSError):
            return (host.workdir / "console.log").read_text(errors="replace")[-4000:]
        return ""

    def _ssh_config(self) -> None:
        """The admin's ssh_config: the host keys as the machines were made (a Debian install
        or a Pi image shows them), the key, and the Pis through the controller."""
        known = []
        for host in self.hosts.values():
            pub = (host.root / "etc/ssh/ssh_host_ed25519_key.pub").read_text().split()
            known.append(f"{host.address} {pub[0]} {pub[1]}")
        (self.dir / "known_hosts").write_text("\n".join(known) + "\n")
        ctl = self.hosts["controller"].address
        self.ssh_config.write_text(
            f"Host *\n  User admin\n  IdentityFile {self.key}\n  IdentitiesOnly yes\n"
            f"  UserKnownHostsFile {self.dir / 'known_hosts'}\n  StrictHostKeyChecking yes\n"
            f"  BatchMode yes\n  ConnectTimeout 10\n"
            f"Host {LAB_NET}.*\n  ProxyJump admin@{ctl}\n")

    @property
    def ssh_config(self) -> Path:
        return self.dir / "ssh_config"

    def admin(self, argv: list[str], timeout: float = 1800, env: dict[str, str] | None = None,
              cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        """A command on the admin's workstation (the admin network namespace)."""
        return sh(["ip", "netns", "exec", self.admin_ns, *argv], timeout=timeout, check=False,
                  env={**os.environ, **(env or {})}, cwd=cwd)

    def stop(self) -> None:
        for host in self.hosts.values():
            sup = host.supervisor
            if sup is None or sup.poll() is not None:
                continue
            # The supervisor first, so a poweroff's exit is not taken for a reboot; then nspawn,
            # which a SIGTERM asks to shut the container down.
            with contextlib.suppress(ProcessLookupError):
                os.kill(sup.pid, signal.SIGKILL)
            with contextlib.suppress(FileNotFoundError, ValueError, ProcessLookupError):
                os.kill(int((host.workdir / "nspawn.pid").read_text()), signal.SIGTERM)
        for host in self.hosts.values():
            with contextlib.suppress(FileNotFoundError, ValueError):
                pid = int((host.workdir / "nspawn.pid").read_text())
                deadline = time.monotonic() + 30
                while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
                    time.sleep(0.3)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        for mount in reversed(self._mounts):
            sh(["umount", "-l", str(mount)], check=False)
        for netns in reversed(self._netns):
            sh(["ip", "netns", "delete", netns], check=False)
        shutil.rmtree(self.dir, ignore_errors=True)

