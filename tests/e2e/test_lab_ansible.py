"""The lab as code (lab/): the playbook brings a controller and two "Raspberry Pi 5"s from a
fresh Debian 12 to a lab rtgate can measure on, and a second run changes nothing.

The machines are booted Debian 12 systems (systemd-nspawn -b, tests/nspawnlab.py says what makes
them Pi-like and what cannot be): the playbook reaches them over real sshd, the Pis through the
controller, from an admin namespace of the test's own. No network leaves the test's namespaces:
packages are in the image and pip reads a wheelhouse (the inventory's pip arguments), which is
all that differs from a lab's inventory (lab/inventory.example.yml).
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from fakegithub import app_key
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

