"""The lab as code (lab/): the playbook brings a controller and two "Raspberry Pi 5"s from a
fresh Debian 12 to a lab rtgate can measure on, and a second run changes nothing.

The machines are booted Debian 12 systems (systemd-nspawn -b, tests/nspawnlab.py says what makes
them Pi-like and what cannot be): the playbook reaches them over real sshd, the Pis through the
controller, from an admin namespace of the test's own. No network leaves the test's namespaces:
packages are in the image and pip reads a wheelhouse (the inventory's pip arguments), which is
all that differs from a lab's inventory (lab/inventory.example.yml).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import re
import shlex
import shutil
import subprocess
import tarfile
import time
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml
from fakegithub import FakeGitHub, app_key
from nspawnlab import LAB_NET, UPLINK, Lab, image, wheelhouse

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(__import__("sys").executable).parent

pytestmark = [pytest.mark.integration, pytest.mark.timeout(3600)]

PIP_ARGS = ["--no-index", "--find-links", "/srv/wheels"]
APT_FOREVER = 10 * 365 * 86400
FAKE_GITHUB_PORT = 8765
RUNNER = "rtgate-runner"


@pytest.fixture(scope="module")
def lab() -> Iterator[Lab]:
    if shutil.which("systemd-nspawn") is None:
        pytest.fail("systemd-nspawn is missing: scripts/deps.sh lab")
    started = time.monotonic()
    lab = Lab(image(), wheelhouse())
    try:
        lab.start()
        lab.timings["booted"] = time.monotonic() - started
        yield lab
    finally:
        lab.stop()


def commit_worktree(into: Path) -> Path:
    """This work tree as one commit of a repository of the test's own (the playbook installs
    the commit its checkout is at; uncommitted work is tested too)."""
    files = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "-co", "--exclude-standard"],
                           capture_output=True, check=True).stdout.split(b"\0")
    for name in filter(None, (f.decode() for f in files)):
        src = ROOT / name
        if src.is_file():
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, into / name)
    git(into, "init", "-q")
    git(into, "add", "-A")
    git(into, "-c", "user.name=admin", "-c", "user.email=admin@lab", "commit", "-qm", "lab")
    return into


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          check=True).stdout


def inventory(lab: Lab, at: Path) -> Path:
    # The GitHub App's key (a throwaway one, as the fake GitHub's tests make) and the runner
    # release: the stand-in of tests/fakerunner (the real one cannot be downloaded here).
    private, public = app_key()
    key = at / "app.pem"
    key.write_bytes(private)
    (at / "app.pub").write_bytes(public)
    release = at / "actions-runner-linux-x64-standin.tar.gz"
    with tarfile.open(release, "w:gz") as tar:
        tar.add(ROOT / "tests" / "fakerunner", arcname=".")
    doc = {"all": {
        "vars": {"ansible_user": "admin", "ansible_become": True,
                 "ansible_ssh_common_args": f"-F {lab.ssh_config}",
                 "lab_network": f"{LAB_NET}.0/24", "lab_controller_address": f"{LAB_NET}.1",
                 "lab_github_owner": "OWNER", "lab_github_repo": "rtgate",
                 "lab_github_app_id": "123456", "lab_github_installation_id": 7654321,
                 "lab_github_app_key": str(key), "lab_runner_release": str(release)},
        "children": {
            "controllers": {"hosts": {"controller": {
                "ansible_host": f"{UPLINK}.2", "lab_interface": "eth1",
                # No docker, kernel toolchains or QEMU in these containers (and no network
                # to fetch them): the groups the measurement needs.
                "controller_deps_groups": ["core"],
                "controller_pip_args": PIP_ARGS,
                # The image's package lists are as old as the image, and nothing can fetch
                # newer ones here.
                "controller_apt_cache_valid_time": APT_FOREVER,
                # The fake GitHub API on the controller's own loopback (plain http is allowed
                # there only, rtgate/lab/config.py).
                "runner_github_api": f"http://127.0.0.1:{FAKE_GITHUB_PORT}"}}},
            "pis": {"vars": {"lab_controller": "controller", "pi_pip_args": PIP_ARGS,
                             "pi_apt_cache_valid_time": APT_FOREVER},
                    "hosts": {"rpi5-a": {"ansible_host": f"{LAB_NET}.2"},
                              "rpi5-b": {"ansible_host": f"{LAB_NET}.3"}}}}}}
    path = at / "inventory.yml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


RECAP = re.compile(r"^(\S+)\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)",
                   re.M)


def playbook(lab: Lab, checkout: Path, inv: Path, *extra: str) -> dict[str, dict[str, int]]:
    proc = lab.admin([str(VENV_BIN / "ansible-playbook"), "-i", str(inv), "site.yml", *extra],
                     cwd=checkout / "lab",
                     env={"ANSIBLE_CONFIG": str(checkout / "lab" / "ansible.cfg"),
                          "ANSIBLE_FORCE_COLOR": "0", "PATH": f"{VENV_BIN}:/usr/sbin:/usr/bin:"
                                                              "/sbin:/bin"})
    out = proc.stdout + proc.stderr
    recap = {m[1]: {"ok": int(m[2]), "changed": int(m[3]), "unreachable": int(m[4]),
                    "failed": int(m[5])} for m in RECAP.finditer(proc.stdout)}
    (checkout.parent / f"playbook-{len(list(checkout.parent.glob('playbook-*')))}.log"
     ).write_text(out)
    assert proc.returncode == 0 and recap, f"ansible-playbook exit {proc.returncode}:\n" \
                                           f"{out[-8000:]}"
    return recap


@pytest.fixture(scope="module")
def applied(lab: Lab, tmp_path_factory: pytest.TempPathFactory
            ) -> tuple[Lab, Path, Path, dict[str, dict[str, int]]]:
    work = tmp_path_factory.mktemp("lab-admin")
    checkout = commit_worktree(work / "rtgate")
    inv = inventory(lab, work)
    t = time.monotonic()
    first = playbook(lab, checkout, inv)
    lab.timings["first playbook run"] = time.monotonic() - t
    # The admin's reviewed pull request: the board files the playbook wrote, with the tools'
    # pins, become bench/boards/BOARD.yml. Labelled virtual here: these "Pis" are containers on
    # this machine, and nothing they measure says anything about a Pi.
    for board in ("rpi5-a", "rpi5-b"):
        doc = yaml.safe_load((work / "boards" / f"{board}.yml").read_text())
        assert doc["name"] == board and doc["kind"] == "rpi5", doc
        assert set(doc["options"]["tools"]) == {"rtgate", "cyclictest", "stress-ng", "iperf3"}
        doc["virtual"] = True
        doc["description"] = f"{board}: a systemd-nspawn container standing in for a Pi 5 " \
                             "(tests/e2e/test_lab_ansible.py); its numbers are this machine's"
        (checkout / "bench" / "boards" / f"{board}.yml").write_text(yaml.safe_dump(doc))
    git(checkout, "add", "-A")
    git(checkout, "-c", "user.name=admin", "-c", "user.email=admin@lab", "commit", "-qm",
        "bench/boards: rpi5-a and rpi5-b")
    t = time.monotonic()
    upgrade = playbook(lab, checkout, inv)
    lab.timings["run with the board files"] = time.monotonic() - t
    return lab, checkout, inv, {"first": first, "upgrade": upgrade}


def test_the_playbook_sets_up_the_lab_and_a_second_run_changes_nothing(applied) -> None:
    lab, checkout, inv, runs = applied
    first, upgrade = runs["first"], runs["upgrade"]
    assert set(first) >= {"controller", "rpi5-a", "rpi5-b"}, first
    assert all(h["changed"] > 0 for name, h in first.items() if name != "localhost"), first
    # A commit that only adds board files installs the controller's rtgate again and leaves the
    # Pis' alone: their pins hold.
    assert upgrade["controller"]["changed"] > 0, upgrade
    assert upgrade["rpi5-a"]["changed"] == upgrade["rpi5-b"]["changed"] == 0, upgrade
    again = playbook(lab, checkout, inv)
    assert {n: h["changed"] for n, h in again.items()} == {n: 0 for n in again}, again
    check = playbook(lab, checkout, inv, "--check", "--diff")
    assert {n: h["changed"] for n, h in check.items()} == {n: 0 for n in check}, check


def as_runner(lab: Lab, command: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """A command on the controller as the runner user, with the environment a runner job has
    (the gate runs main's checkout with RTGATE_PYTHON; here the controller's own checkout)."""
    env = ("env -i HOME=/home/rtgate-runner PATH=/usr/local/bin:/usr/bin:/bin "
           "RTGATE_ROOT=/opt/rtgate/src COLUMNS=200")
    return lab.hosts["controller"].nsenter(
        f"cd /home/{RUNNER} && runuser -u {RUNNER} -- {env} sh -c {shlex.quote(command)}",
        timeout=timeout, check=False)


@pytest.mark.parametrize("board", ["rpi5-a", "rpi5-b"])
def test_board_doctor_on_each_pi_fails_only_time_sync(applied, board: str) -> None:
    lab = applied[0]
    proc = as_runner(lab, f"/opt/rtgate/venv/bin/python -I -m rtgate board doctor {board}")
    out = proc.stdout + proc.stderr
    rows = doctor_rows(out)
    # A container cannot sync the clock (systemd-timesyncd and chrony need CAP_SYS_TIME, which
    # would set this machine's clock): NTPSynchronized is the host kernel's, never this lab's.
    failed = {item for state, item in rows if state == "fail"}
    assert failed == {"time sync"}, out
    assert proc.returncode == 3, out
    ok = {item for state, item in rows if state == "ok"}
    # What the playbook set up, row by row: the key, sudo, the pinned tools, the bootloader it
    # updated, the video group (vcgencmd's throttling reading), held packages, masked updates.
    for item in ("ssh", "sudo", "tool rtgate", "tool cyclictest", "tool stress-ng",
                 "tool iperf3", "bootloader", "throttling", "autoboot.txt", "held packages",
                 "EEPROM auto-update", "iperf3 peer"):
        assert item in ok, f"{item}: not ok\n{out}"


def doctor_rows(out: str) -> list[tuple[str, str]]:
    """(state, check) of each row of the doctor's table (rich's box characters)."""
    rows = []
    for line in out.splitlines():
        if line.startswith("│"):
            cells = [c.strip() for c in line.strip().strip("│").split("│")]
            if len(cells) >= 2 and cells[0] and cells[1] in ("ok", "warn", "fail", "n/a"):
                rows.append((cells[1], cells[0]))
    return rows


@pytest.fixture(scope="module")
def kernels(applied) -> str:
    """A kernel build directory as `rtgate kernel build --board rpi5` lays it out, in the
    runner user's home: its release is this machine's (the containers run this kernel, so the
    "booted" release matches), its image and modules are a few bytes (nothing boots them)."""
    lab = applied[0]
    release = os.uname().release
    home = lab.hosts["controller"].root / "home" / RUNNER
    k = home / "kernels" / "rt"
    (k / "dtbs" / "broadcom").mkdir(parents=True)
    (k / "dtbs" / "overlays").mkdir()
    (k / "kernel_2712.img").write_bytes(b"arm64 Image " + release.encode())
    (k / "dtbs" / "broadcom" / "bcm2712-rpi-5-b.dtb").write_bytes(b"\xd0\x0d\xfe\xed dtb")
    stage = home / "stage" / "lib" / "modules" / release
    (stage / "kernel").mkdir(parents=True)
    (stage / "kernel" / "rtgate-test.ko").write_bytes(b"module")
    (stage / "modules.dep").write_text("kernel/rtgate-test.ko:\n")
    with tarfile.open(k / "modules.tar.gz", "w:gz") as tar:
        tar.add(home / "stage", arcname=".")
    (k / "metadata.json").write_text(json.dumps({
        "schema": "rtgate/kernel-build/v1", "kernel_release": release, "uts_version": None,
        "plan": {"board": {"name": "rpi5", "image_name": "kernel_2712.img"}, "flavor": "rt"}}))
    lab.hosts["controller"].nsenter(f"chown -R {RUNNER}: /home/{RUNNER}/kernels "
                                    f"/home/{RUNNER}/stage")
    return f"/home/{RUNNER}/kernels"


@pytest.mark.parametrize("board", ["rpi5-a", "rpi5-b"])
def test_a_pipeline_on_each_pi_as_the_runner_user(applied, kernels: str, board: str) -> None:
    lab = applied[0]
    pi = lab.hosts[board]
    restarts = pi.workdir / "restarts.log"
    before = restarts.read_text().count("exit 133") if restarts.is_file() else 0
    out = f"/home/{RUNNER}/out-{board}"
    t = time.monotonic()
    proc = as_runner(lab, f"/opt/rtgate/venv/bin/python -I -m rtgate pipeline --board {board} "
                          f"--kernels {kernels} --flavors rt --scenarios net --duration 5s "
                          f"--out {out}", timeout=900)
    text = proc.stdout + proc.stderr
    (pi.workdir.parent / f"pipeline-{board}.log").write_text(text)
    result = lab.hosts["controller"].root / out.lstrip("/") / "rt" / "net" / "result.json"
    assert result.is_file(), f"exit {proc.returncode}:\n{text[-6000:]}"
    doc = json.loads(result.read_text())
    # Labelled as the board file says: these numbers are this machine's, not a Pi's.
    assert doc["board"] == {"name": board, "virtual": True}, doc.get("board")
    assert doc["status"] == "complete", doc.get("status")
    # Two reboots: into the "test kernel" by tryboot, and back (nspawn exits 133 on a reboot).
    assert restarts.read_text().count("exit 133") - before == 2, restarts.read_text()
    assert proc.returncode in (0, 1, 3), text[-6000:]
    lab.timings[f"pipeline {board}"] = time.monotonic() - t
    # docs/journal.md quotes these: the time from fresh machines to measured Pis.
    print(f"lab timings (s): {json.dumps(lab.timings)}")


def test_pstore_keeps_a_crash_record_for_rtgate_across_a_reboot(applied) -> None:
    """systemd-pstore archives /sys/fs/pstore at boot; Debian's default (Unlink=yes) moves the
    records away before rtgate reads them (systemd-pstore.service(8), pstore.conf(5)). With the
    playbook's Unlink=no they stay, and the archive copy is there too."""
    lab = applied[0]
    pi = lab.hosts["rpi5-a"]
    record = "dmesg-ramoops-0"
    (pi.workdir / "pstore" / record).write_text(
        "Panic#1 Part1\n<0>[    2.345678] Kernel panic - not syncing: planted by the lab test\n")
    restarts = pi.workdir / "restarts.log"
    before = restarts.read_text().count("exit 133") if restarts.is_file() else 0
    pi.nsenter("systemctl reboot", check=False)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (
            not restarts.is_file() or restarts.read_text().count("exit 133") == before):
        time.sleep(0.5)
    lab.wait_booted(pi)
    ran = pi.nsenter("systemctl show -p ConditionResult -p Result systemd-pstore").stdout
    assert "ConditionResult=yes" in ran and "Result=success" in ran, ran
    assert (pi.workdir / "pstore" / record).is_file(), "systemd-pstore moved the record away"
    archived = pi.nsenter(f"find /var/lib/systemd/pstore -name {record}").stdout.split()
    assert archived, "systemd-pstore archived nothing"


def test_one_runner_supervisor_per_board_with_its_own_state(applied) -> None:
    """`rtgate lab setup` ran from the playbook: each board's directories with the owners the
    security model needs (rtgate/lab/state.py), its runner environment, and its supervisor
    unit enabled and running (rtgate-runner@BOARD)."""
    lab = applied[0]
    ctl = lab.hosts["controller"]
    for board in ("rpi5-a", "rpi5-b"):
        modes = ctl.nsenter(f"stat -c '%n %U %a' /srv/rtgate/{board}/jobs "
                            f"/srv/rtgate/{board}/results /srv/rtgate/{board}/cache-main "
                            f"/srv/rtgate/{board}/cache-pr").stdout.split("\n")
        assert modes[:4] == [f"/srv/rtgate/{board}/jobs root 711",
                             f"/srv/rtgate/{board}/results root 1733",
                             f"/srv/rtgate/{board}/cache-main {RUNNER} 700",
                             f"/srv/rtgate/{board}/cache-pr {RUNNER} 700"], modes
        env = ctl.nsenter(f"cat /etc/rtgate/runner/{board}.env").stdout
        assert f"RTGATE_RESULTS_DIR=/srv/rtgate/{board}/results" in env.splitlines(), env
        state = ctl.nsenter(f"systemctl is-enabled rtgate-runner@{board}; "
                            f"systemctl is-active rtgate-runner@{board}", check=False).stdout
        assert state.split() == ["enabled", "active"], state
    assert ctl.nsenter("readlink -f /opt/actions-runner").stdout.strip() == \
        "/opt/actions-runner-linux-x64-standin"


CLONE_NEWNET = 0x40000000


@contextlib.contextmanager
def network_of(netns: str) -> Iterator[None]:
    """This thread in another network namespace (setns(2) is per thread), and back: a socket
    made meanwhile stays in that namespace, whichever thread later serves it."""
    libc = ctypes.CDLL(None, use_errno=True)
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    other = os.open(f"/run/netns/{netns}", os.O_RDONLY)
    try:
        if libc.setns(other, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"setns {netns}")
        try:
            yield
        finally:
            if libc.setns(own, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), "setns back")
    finally:
        os.close(own)
        os.close(other)


def test_each_runner_supervisor_takes_a_job_from_the_fake_github(applied) -> None:
    """The supervisors the playbook enabled, against the fake GitHub API (tests/fakegithub.py)
    listening on the controller's own loopback, where the lab file points them: each registers
    a runner of its own board's labels (the runner is tests/fakerunner, a stand-in) and runs one
    job with its board's environment."""
    lab = applied[0]
    ctl = lab.hosts["controller"]
    admin = Path(applied[2]).parent
    fake = FakeGitHub(app_id="123456", public_key=(admin / "app.pub").read_bytes(),
                      installation_id=7654321, scopes=("/repos/OWNER/rtgate",))
    fake.server.server_close()
    with network_of(ctl.netns):
        fake.server = ThreadingHTTPServer(("127.0.0.1", FAKE_GITHUB_PORT), fake._handler())
    fake.server.daemon_threads = True
    jobs = {board: fake.queue_job(f"board-{board}", 0.5) for board in ("rpi5-a", "rpi5-b")}
    with fake.running():
        # The units have been backing off while nothing answered: a restart starts them now.
        ctl.nsenter("systemctl restart rtgate-runner@rpi5-a rtgate-runner@rpi5-b")
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and not all(j.done for j in jobs.values()):
            time.sleep(0.5)
        logs = ctl.nsenter("journalctl -u 'rtgate-runner@*' --no-pager | tail -n 40",
                           check=False).stdout
        assert all(j.done for j in jobs.values()), logs
    for board, job in jobs.items():
        assert job.runner.startswith(f"{board}-"), (job.runner, logs)
        assert job.env["RTGATE_BOARD"] == board, job.env
        assert job.env["RTGATE_RESULTS_DIR"] == f"/srv/rtgate/{board}/results", job.env
    labels = sorted(tuple(r.labels) for r in fake.registered)
    assert ("self-hosted", "linux", "rtgate-lab", "rpi5", "board-rpi5-a") in labels, labels
    ctl.nsenter("systemctl stop rtgate-runner@rpi5-a rtgate-runner@rpi5-b", check=False)
