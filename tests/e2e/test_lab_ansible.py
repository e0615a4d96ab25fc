"""The lab's setup guide, run as written: docs/lab.md's "Setting up the lab", every shell block in
the order the page gives it, on the machine its mark names (tests/labguide.py), brings a
controller and two "Raspberry Pi 5"s from a fresh Debian 12 to a lab rtgate measures on; then
what the guide promises besides (a run with nothing to do changes nothing, check mode too, the
crash record kept, each runner supervisor taking a job).

The machines are booted Debian 12 systems (systemd-nspawn -b, tests/nspawnlab.py says what makes
them Pi-like and what cannot be): the playbook reaches them over real sshd, the Pis through the
controller, from an admin namespace of the test's own (the admin's workstation). No network
leaves the test's namespaces. What differs from a lab is said step by step in CHANGES and
below: the inventory (addresses, a wheelhouse for pip, the stand-ins' board files labelled
virtual), the origin the admin pushes to (a bare repository standing in for GitHub, whose
pull requests the test merges), shorter runs, and stand-in kernels for the `build` step.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import tarfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml
from actlab import (
    default_branch,
    gate_pr_job,
    keep_context,
    keep_results,
    plan,
    publish,
    pull_request,
)
from fakegithub import FakeGitHub, app_key
from labguide import NEVER_HERE, Step, steps
from nspawnlab import LAB_NET, UPLINK, Lab, image, wheelhouse
from steps import cache_mount_check

from rtgate import calibration
from rtgate.outcome import GATE_OF_AB, ABOutcome

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(__import__("sys").executable).parent

pytestmark = [pytest.mark.integration, pytest.mark.timeout(3600)]

PIP_ARGS = ["--no-index", "--find-links", "/srv/wheels"]
APT_FOREVER = 10 * 365 * 86400
FAKE_GITHUB_PORT = 8765
RUNNER = "rtgate-runner"
CACHE_PR_SIZE, CACHE_PR_BYTES = "128M", 128 << 20
BOARDS = ("rpi5-a", "rpi5-b")

# What the lab e2e changes in a block before it runs it (labguide.Step.with_changes: each must be
# in the block). Short runs: the stand-ins measure this machine, and a minute says as much as
# the gate's 130 s; the calibration banks 3 rounds a side (the least the A/B looks need) of one
# flavor and scenario, replayed 100 times: a check of the procedure, its record labelled virtual.
CHANGES: dict[str, dict[str, str]] = {
    "first-run": {"--flavors stock,rt --scenarios all-in --duration 130s":
                  "--flavors rt --scenarios net --duration 5s"},
    "calibrate": {"--flavors stock,rt --rounds 12 --round-duration 40s":
                  "--flavors rt --scenarios idle --rounds 3 --round-duration 2s --replays 100"},
}
# Steps run without `set -e`, each command to its end, and the exit their last may give: the
# doctor's time-sync row cannot be green in a container, and a 5 s run has too few samples for
# the budgets the gate's 130 s are sized for (both exit 3; the tests below check the rest).
MAY_FAIL = {"doctor": 3, "first-run": 3}


def the_admins_edit(lab: Lab, checkout: Path) -> None:
    """What the admin writes into lab/inventory.yml (the guide: "put your addresses in"): this
    lab's addresses, the GitHub App's key (a throwaway one, as the fake GitHub's tests make) and
    the runner release (the stand-in of tests/fakerunner: the real one cannot be downloaded
    here). Written over the copy of lab/inventory.example.yml the guide's `cp` made."""
    admin = checkout.parent
    private, public = app_key()
    key = admin / "app.pem"
    key.write_bytes(private)
    (admin / "app.pub").write_bytes(public)
    release = admin / "actions-runner-linux-x64-standin.tar.gz"
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
                # Each board's untrusted cache is allocated on this machine's disk (in the
                # container's overlay): small, the size any lab gives is the same code.
                "lab_cache_pr_size": CACHE_PR_SIZE,
                # The fake GitHub API on the controller's own loopback (plain http is allowed
                # there only, rtgate/lab/config.py).
                "runner_github_api": f"http://127.0.0.1:{FAKE_GITHUB_PORT}"}}},
            "pis": {"vars": {"lab_controller": "controller", "pi_pip_args": PIP_ARGS,
                             "pi_apt_cache_valid_time": APT_FOREVER},
                    "hosts": {board: {
                        "ansible_host": f"{LAB_NET}.{i}",
                        # Labelled virtual: these "Pis" are containers on this machine, and
                        # nothing they measure says anything about a Pi.
                        "pi_board_settings": {
                            "virtual": True,
                            "description": f"{board}: a systemd-nspawn container standing in "
                                           "for a Pi 5 (tests/e2e/test_lab_ansible.py); its "
                                           "numbers are this machine's"}}
                        for i, board in enumerate(BOARDS, start=2)}}}}}
    (checkout / "lab" / "inventory.yml").write_text(yaml.safe_dump(doc, sort_keys=False))


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          check=True).stdout


def the_admins_checkout(into: Path) -> Path:
    """A clone of the default branch, as the admin has one: this work tree (uncommitted work
    included) as one commit of a bare repository standing in for GitHub (`origin`). Its `.venv`
    is this suite's, whose `scripts/deps.sh core` already ran (make test-lab runs it): the
    guide's `scripts/deps.sh core` then finds everything there, as on the admin's machine the
    second time."""
    checkout = default_branch(into, checkout="rtgate", message="lab")
    git(checkout, "config", "user.name", "admin")
    git(checkout, "config", "user.email", "admin@lab")
    venv = VENV_BIN.parent
    stamp = venv / ".deps-pip.stamp"
    # deps.sh reinstalls (editable, from this checkout, into the suite's venv) when pyproject.toml
    # is newer than its stamp: a clone's files are new, so the clone gets the original's time,
    # and a stale stamp stops the test here rather than repoint the suite's venv.
    pyproject = ROOT / "pyproject.toml"
    assert stamp.is_file() and stamp.stat().st_mtime >= pyproject.stat().st_mtime, \
        "the suite's .venv is older than pyproject.toml: run scripts/deps.sh core (make test-lab)"
    os.utime(checkout / "pyproject.toml", ns=(pyproject.stat().st_atime_ns,
                                              pyproject.stat().st_mtime_ns))
    (checkout / ".venv").symlink_to(venv)
    return checkout


RECAP = re.compile(r"^(\S+)\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)",
                   re.M)
Recap = dict[str, dict[str, int]]


def recap(out: str) -> Recap:
    return {m[1]: {"ok": int(m[2]), "changed": int(m[3]), "unreachable": int(m[4]),
                   "failed": int(m[5])} for m in RECAP.finditer(out)}


def workstation(lab: Lab, checkout: Path, script: str,
                timeout: float = 1800) -> subprocess.CompletedProcess[str]:
    """A block on the admin's workstation (the admin network namespace: it reaches the
    controller only), in the checkout's top directory, as root (scripts/deps.sh wants root),
    with a home of its own: ansible's ssh multiplexes through control sockets under
    ~/.ansible/cp named by host and user, and another lab run on this machine (the same
    addresses in its own namespaces) would otherwise hand this one its connections."""
    home = checkout.parent / "home"
    home.mkdir(mode=0o700, exist_ok=True)
    return lab.admin(["sh", "-ec", script], cwd=checkout, timeout=timeout,
                     env={"HOME": str(home), "ANSIBLE_FORCE_COLOR": "0",
                          "GIT_TERMINAL_PROMPT": "0",
                          "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"})


def as_runner(lab: Lab, command: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """A command on the controller as the runner user, in its home, with a login's environment
    (`sudo -iu rtgate-runner`); `rtgate` is the playbook's /usr/local/bin/rtgate."""
    env = ("env -i HOME=/home/rtgate-runner USER=rtgate-runner LOGNAME=rtgate-runner "
           "SHELL=/bin/bash PATH=/usr/local/bin:/usr/bin:/bin COLUMNS=200")
    return lab.hosts["controller"].nsenter(
        f"cd /home/{RUNNER} && runuser -u {RUNNER} -- {env} sh -c {shlex.quote(command)}",
        timeout=timeout, check=False)


@dataclass
class Ran:
    """What one step of the guide did here."""
    step: Step
    script: str | None  # None: never run here (github, build, hardware)
    returncode: int = 0
    out: str = ""
    seconds: float = 0.0


@dataclass
class Guide:
    lab: Lab
    checkout: Path
    ran: dict[str, Ran] = field(default_factory=dict)
    playbooks: list[Recap] = field(default_factory=list)
    next_run_id: int = 1  # the next fake GitHub's first run id (lab_github)


def stand_in_kernels(lab: Lab, outs: list[str]) -> None:
    """The `build` step's kernels, at the paths it names (relative to the runner user's home),
    laid out as `rtgate kernel build --board rpi5` writes them: the release is this machine's
    (the containers run this kernel, so the "booted" release matches), the image and modules
    are a few bytes (nothing boots them)."""
    release = os.uname().release
    home = lab.hosts["controller"].root / "home" / RUNNER
    for out in outs:
        k = home / out
        flavor = k.name
        (k / "dtbs" / "broadcom").mkdir(parents=True)
        (k / "dtbs" / "overlays").mkdir()
        (k / "kernel_2712.img").write_bytes(b"arm64 Image " + release.encode())
        (k / "dtbs" / "broadcom" / "bcm2712-rpi-5-b.dtb").write_bytes(b"\xd0\x0d\xfe\xed dtb")
        stage = home / "stage" / "lib" / "modules" / release
        (stage / "kernel").mkdir(parents=True, exist_ok=True)
        (stage / "kernel" / "rtgate-test.ko").write_bytes(b"module")
        (stage / "modules.dep").write_text("kernel/rtgate-test.ko:\n")
        with tarfile.open(k / "modules.tar.gz", "w:gz") as tar:
            tar.add(home / "stage", arcname=".")
        (k / "metadata.json").write_text(json.dumps({
            "schema": "rtgate/kernel-build/v1", "kernel_release": release, "uts_version": None,
            "plan": {"board": {"name": "rpi5", "image_name": "kernel_2712.img"},
                     "flavor": flavor}}))
        top = out.split("/")[0]
        lab.hosts["controller"].nsenter(f"chown -R {RUNNER}: /home/{RUNNER}/{top}")
    shutil.rmtree(home / "stage")


def run_step(guide: Guide, step: Step) -> Ran:
    lab, checkout = guide.lab, guide.checkout
    if step.where in NEVER_HERE:
        if step.where == "build":
            stand_in_kernels(lab, [w[i + 1] for line in step.with_changes({}).splitlines()
                                   for w in [shlex.split(line)]
                                   for i, x in enumerate(w) if x == "--out"])
        return Ran(step, None)
    script = step.with_changes(CHANGES.get(step.name, {}))
    if step.name == "calibration-pr":
        # The admin's own ssh_config names the controller; here the lab's does.
        ctl = lab.hosts["controller"].address
        script = script.replace("ssh admin@ctrl-01 ", f"ssh -F {lab.ssh_config} admin@{ctl} ")
    t = time.monotonic()
    if step.where == "workstation":
        proc = workstation(lab, checkout, script)
    elif step.where == "controller":
        proc = lab.hosts["controller"].nsenter(f"set -e\n{script}", timeout=600, check=False)
    else:
        flags = "" if step.name in MAY_FAIL else "set -e\n"
        proc = as_runner(lab, flags + script, timeout=1800)
    ran = Ran(step, script, proc.returncode, proc.stdout + proc.stderr, time.monotonic() - t)
    (checkout.parent / f"step-{len(guide.ran):02d}-{step.name}.log").write_text(ran.out)
    assert proc.returncode in (0, MAY_FAIL.get(step.name, 0)), \
        f"docs/lab.md:{step.line} ({step.where} {step.name}) exit {proc.returncode}:\n{script}" \
        f"\n{ran.out[-8000:]}"
    if "ansible-playbook" in script:
        guide.playbooks.append(recap(proc.stdout))
        assert guide.playbooks[-1], ran.out[-4000:]
    return ran


def after_inventory(guide: Guide) -> None:
    lab_dir = guide.checkout / "lab"
    assert (lab_dir / "inventory.yml").read_text() == \
        (lab_dir / "inventory.example.yml").read_text(), "the guide's cp did not copy"
    the_admins_edit(guide.lab, guide.checkout)


def after_boards(guide: Guide) -> None:
    """The board files went into the pushed branch as the playbook wrote them; then GitHub
    merges the pull request (here: origin's main moves to the branch, a fast-forward)."""
    origin = guide.checkout.parent / "origin.git"
    for board in BOARDS:
        doc = yaml.safe_load(git(origin, "show", f"lab-boards:bench/boards/{board}.yml"))
        assert doc["name"] == board and doc["kind"] == "rpi5" and doc["virtual"] is True, doc
        assert set(doc["options"]["tools"]) == {"rtgate", "cyclictest", "stress-ng", "iperf3"}
    git(origin, "update-ref", "refs/heads/main", "refs/heads/lab-boards")


def after_calibration_pr(guide: Guide) -> None:
    """The record as pushed; then GitHub merges that pull request too."""
    origin = guide.checkout.parent / "origin.git"
    record = git(origin, "show", "calibration-rpi5:bench/calibration/rpi5.json")
    (guide.checkout.parent / "rpi5.json").write_text(record)
    git(origin, "update-ref", "refs/heads/main", "refs/heads/calibration-rpi5")


AFTER: dict[str, Callable[[Guide], None]] = {
    "inventory": after_inventory, "boards": after_boards, "calibration-pr": after_calibration_pr}


@pytest.fixture(scope="module")
def guide(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Guide]:
    """Fresh machines booted, then the guide's steps in order."""
    if shutil.which("systemd-nspawn") is None:
        pytest.fail("systemd-nspawn is missing: scripts/deps.sh lab")
    order = steps()
    assert [s.name for s in order if s.name in AFTER] == list(AFTER), "the guide moved"
    work = tmp_path_factory.mktemp("lab-admin")
    checkout = the_admins_checkout(work)
    lab = Lab(image(), wheelhouse())
    try:
        lab.start()
        lab.timings["booted"] = time.monotonic() - lab.started
        g = Guide(lab, checkout)
        for step in order:
            g.ran[step.name] = run_step(g, step)
            if step.name in AFTER:
                AFTER[step.name](g)
            lab.timings[step.name] = g.ran[step.name].seconds
        lab.timings["guide"] = time.monotonic() - lab.started
        # docs/journal.md quotes these: fresh machines to a calibrated lab, step by step.
        print(f"lab timings (s): {json.dumps(lab.timings)}")
        yield g
    finally:
        lab.stop()


def test_the_guide_ran_in_order_and_what_it_could_not_run_is_named(guide: Guide) -> None:
    assert list(guide.ran) == [s.name for s in steps()]
    never = {n for n, r in guide.ran.items() if r.script is None}
    assert never == {s.name for s in steps() if s.where in NEVER_HERE}
    assert {"playbook", "merged", "doctor", "first-run", "calibrate"} <= set(guide.ran) - never


def test_the_playbook_sets_up_the_lab_and_a_second_run_changes_nothing(guide: Guide) -> None:
    lab, checkout = guide.lab, guide.checkout
    first, upgrade = guide.playbooks[:2]
    assert set(first) >= {"controller", *BOARDS}, first
    assert all(h["changed"] > 0 for name, h in first.items() if name != "localhost"), first
    # A commit that only adds board files installs the controller's rtgate again and leaves the
    # Pis' alone: their pins hold.
    assert upgrade["controller"]["changed"] > 0, upgrade
    assert upgrade["rpi5-a"]["changed"] == upgrade["rpi5-b"]["changed"] == 0, upgrade
    # The calibration record merged, the guide's upgrade (its "merged" block: pull main, run the
    # playbook): the controller's checkout moves, the Pis' rtgate does not (their pins hold).
    merged = guide.ran["merged"].script
    assert merged
    calibrated = recap(workstation(lab, checkout, merged).stdout)
    assert calibrated["controller"]["changed"] > 0, calibrated
    assert calibrated["rpi5-a"]["changed"] == calibrated["rpi5-b"]["changed"] == 0, calibrated
    command = guide.ran["playbook"].script
    assert command
    again = recap(workstation(lab, checkout, command).stdout)
    assert again and {n: h["changed"] for n, h in again.items()} == {n: 0 for n in again}, again
    check = recap(workstation(lab, checkout, f"{command.rstrip()} --check --diff").stdout)
    assert check and {n: h["changed"] for n, h in check.items()} == {n: 0 for n in check}, check


def doctor_rows(out: str) -> list[tuple[str, str]]:
    """(state, check) of each row of the doctor's table (rich's box characters)."""
    rows = []
    for line in out.splitlines():
        if line.startswith("│"):
            cells = [c.strip() for c in line.strip().strip("│").split("│")]
            if len(cells) >= 2 and cells[0] and cells[1] in ("ok", "warn", "fail", "n/a"):
                rows.append((cells[1], cells[0]))
    return rows


def doctor_tables(out: str) -> dict[str, str]:
    """Each board's table of the doctor step's output, by board (rich titles each table
    `rtgate board doctor BOARD`)."""
    parts = re.split(r"^\s*rtgate board doctor (\S+)\s*$", out, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


@pytest.mark.parametrize("board", BOARDS)
def test_board_doctor_on_each_pi_fails_only_time_sync(guide: Guide, board: str) -> None:
    """The guide's doctor step, each Pi's table: every row but time sync ok. A container cannot
    sync the clock (systemd-timesyncd and chrony need CAP_SYS_TIME, which would set this
    machine's clock): NTPSynchronized is the host kernel's, never this lab's."""
    ran = guide.ran["doctor"]
    assert ran.returncode == 3, ran.out
    tables = doctor_tables(ran.out)
    assert list(tables) == list(BOARDS), ran.out
    rows = doctor_rows(tables[board])
    failed = {item for state, item in rows if state == "fail"}
    assert failed == {"time sync"}, tables[board]
    ok = {item for state, item in rows if state == "ok"}
    # What the playbook set up, row by row: the key, sudo, the pinned tools, the bootloader it
    # updated, the video group (vcgencmd's throttling reading), held packages, masked updates.
    for item in ("ssh", "sudo", "tool rtgate", "tool cyclictest", "tool stress-ng",
                 "tool iperf3", "bootloader", "throttling", "autoboot.txt", "held packages",
                 "EEPROM auto-update", "iperf3 peer"):
        assert item in ok, f"{item}: not ok\n{tables[board]}"


@pytest.mark.parametrize("board", BOARDS)
def test_the_first_run_on_each_pi_as_the_runner_user(guide: Guide, board: str) -> None:
    """The guide's first-run step measured each Pi (tryboot into the "test kernel", measure,
    restore), its result labelled virtual as the board file says."""
    lab = guide.lab
    result = (lab.hosts["controller"].root / "home" / RUNNER / f"first-run-{board}" / "rt"
              / "net" / "result.json")
    assert result.is_file(), guide.ran["first-run"].out[-6000:]
    doc = json.loads(result.read_text())
    assert doc["board"] == {"name": board, "virtual": True}, doc.get("board")
    assert doc["status"] == "complete", doc.get("status")
    # Judged, and found short of the budget's samples: incomplete (exit 3), never a pass.
    assert f"`{board}/rt/net` (`first-run-{board}/rt/net/result.json`): not decided from the " \
           "data: `too few samples" in guide.ran["first-run"].out
    # Two reboots a run at least: into the "test kernel" by tryboot, and back (nspawn exits 133
    # on a reboot); rpi5-b's calibration reboots it more.
    log = (lab.hosts[board].workdir / "restarts.log").read_text()
    assert log.count("exit 133") >= 2, log


def test_the_calibration_recipe_banks_rounds_and_its_record_reaches_a_pull_request(
        guide: Guide) -> None:
    """The guide's calibration, short (CHANGES): rounds banked on the stand-in rpi5-b with its
    runner stopped and started again, the kind's record written, labelled virtual (the board
    file says so), and the admin's pull request branch holding it."""
    record = calibration.load(guide.checkout.parent / "rpi5.json")
    assert record.kind == "rpi5" and record.virtual is True and record.replays == 100
    (key,) = record.keys
    bank = guide.lab.hosts["controller"].root / "home" / RUNNER / "calibration-rpi5"
    banked = list(bank.glob("[AB]/round-*/rt/idle/result.json"))
    # 3 rounds a side measured; a round this loaded machine cuts short is not banked.
    assert (key.flavor, key.scenario) == ("rt", "idle") and 0 < key.rounds_banked <= 6
    assert len(banked) == key.rounds_banked, banked
    assert record.plan.round_s == 2
    state = guide.lab.hosts["controller"].nsenter("systemctl is-active rtgate-runner@rpi5-b",
                                                  check=False).stdout
    assert state.strip() == "active", state
    assert "rpi5/rt/idle: primary" in guide.ran["calibrate"].out


def test_pstore_keeps_a_crash_record_for_rtgate_across_a_reboot(guide: Guide) -> None:
    """systemd-pstore archives /sys/fs/pstore at boot; Debian's default (Unlink=yes) moves the
    records away before rtgate reads them (systemd-pstore.service(8), pstore.conf(5)). With the
    playbook's Unlink=no they stay, and the archive copy is there too."""
    lab = guide.lab
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


def test_one_runner_supervisor_per_board_with_its_own_state(guide: Guide) -> None:
    """`rtgate lab setup` ran from the playbook: each board's directories with the owners the
    security model needs (rtgate/lab/state.py), its runner environment, and its supervisor
    unit enabled and running (rtgate-runner@BOARD)."""
    lab = guide.lab
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


def test_each_boards_untrusted_cache_is_a_filesystem_of_its_own(guide: Guide) -> None:
    """The runner role's untrusted caches (lab/roles/runner/tasks/cache.yml): each board's
    RTGATE_CACHE_PR a loop-mounted ext4 image of the inventory's size, allocated (not sparse),
    root's, mounted nodev,nosuid by a unit enabled at boot, its top the runner user's 0700. The
    gate's own check (latency-gate.yml, before a pull request's build) passes there as the runner
    user, and refuses the board's cache-main (a directory of the controller's disk); a write
    beyond the size fills the cache, not the controller. (The controller never reboots here:
    the unit's enablement stands for the next boot.)"""
    lab = guide.lab
    ctl = lab.hosts["controller"]
    check = cache_mount_check("latency-gate.yml")
    for board in BOARDS:
        env = dict(line.split("=", 1) for line in (
            ctl.root / "etc" / "rtgate" / "runner" / f"{board}.env").read_text().splitlines())
        cache, image = env["RTGATE_CACHE_PR"], f"/srv/rtgate/{board}-cache-pr.img"
        assert cache == f"/srv/rtgate/{board}/cache-pr", env
        source, fstype, options = ctl.nsenter(
            f"findmnt -n -o SOURCE,FSTYPE,OPTIONS --mountpoint {cache}").stdout.split()
        assert fstype == "ext4" and {"nodev", "nosuid", "rw"} <= set(options.split(",")), options
        assert ctl.nsenter(f"losetup -n -O BACK-FILE {source}").stdout.strip() == image
        size, blocks, owner, mode = ctl.nsenter(f"stat -c '%s %b %U %a' {image}").stdout.split()
        assert (int(size), owner, mode) == (CACHE_PR_BYTES, "root", "600")
        assert int(blocks) * 512 >= CACHE_PR_BYTES, f"{image}: sparse ({blocks} blocks)"
        assert ctl.nsenter(f"stat -c '%U %a' {cache}").stdout.split() == [RUNNER, "700"]
        unit = ctl.nsenter(f"systemd-escape --path --suffix=mount {cache}").stdout.strip()
        state = ctl.nsenter(f"systemctl is-enabled '{unit}'; systemctl is-active '{unit}'",
                            check=False).stdout
        assert state.split() == ["enabled", "active"], state
        for where, code in ((cache, 0), (env["RTGATE_CACHE_MAIN"], 3)):
            proc = as_runner(lab, f"RTGATE_CACHE={shlex.quote(where)}\n{check}")
            assert proc.returncode == code, (where, proc.stdout + proc.stderr)
        assert "is no filesystem of its own" in proc.stdout, proc.stdout
        fill = as_runner(lab, f"dd if=/dev/zero of={cache}/fill bs=1M count=256; "
                              f"s=$?; rm -f {cache}/fill; exit $s")
        assert fill.returncode != 0 and "No space left on device" in fill.stderr, fill.stderr
        assert ctl.nsenter(f"stat -c %b {image}").stdout.strip() == blocks, "the image grew"


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


@contextlib.contextmanager
def lab_github(guide: Guide) -> Iterator[FakeGitHub]:
    """The fake GitHub API (tests/fakegithub.py) serving on the controller's own loopback,
    where the lab file points the supervisors; its run ids go on from the last fake's, as
    GitHub's never repeat (a job's run directory RUN-ATTEMPT must be new on the controller)."""
    fake = FakeGitHub(app_id="123456",
                      public_key=(guide.checkout.parent / "app.pub").read_bytes(),
                      installation_id=7654321, scopes=("/repos/OWNER/rtgate",),
                      first_job_id=guide.next_run_id)
    fake.server.server_close()
    with network_of(guide.lab.hosts["controller"].netns):
        fake.server = ThreadingHTTPServer(("127.0.0.1", FAKE_GITHUB_PORT), fake._handler())
    fake.server.daemon_threads = True
    try:
        with fake.running():
            yield fake
    finally:
        guide.next_run_id += len(fake.jobs)


def test_each_runner_supervisor_takes_a_job_from_the_fake_github(guide: Guide) -> None:
    """The supervisors the playbook enabled, against the fake GitHub API (tests/fakegithub.py)
    listening on the controller's own loopback, where the lab file points them: each registers
    a runner of its own board's labels (the runner is tests/fakerunner, a stand-in) and runs one
    job with its board's environment."""
    lab = guide.lab
    ctl = lab.hosts["controller"]
    with lab_github(guide) as fake:
        jobs = {board: fake.queue_job(f"board-{board}", 0.5) for board in ("rpi5-a", "rpi5-b")}
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


def kernel_config_change(repo: Path) -> None:
    with (repo / "kernel" / "configs" / "rt.config").open("a") as rt:
        rt.write("CONFIG_HZ_1000=y\n")


def test_a_pull_request_gets_its_check_from_the_publisher_under_act(guide: Guide,
                                                                  tmp_path: Path) -> None:
    """The guide's end: the pull requests of the lab's repository get their check from the
    publisher (latency-report.yml's publish job run by act on the lab's main, tests/actlab.py:
    act has no checks API, so the conclusion it computes is the check), from the gate's plan
    job (its own steps) and what the lab measured.

    1. The admin's calibration pull request (the guide's calibration-pr step) changes no kernel
       input: the plan job says so, nothing is measured, and the check is green. That is the
       lab's first green check (docs/journal.md's time to it ends here).
    2. Merged, then a kernel pull request: the plan job plans A/B on the kind with the record
       just merged; the job (label rpi5: a pull request's gate asks for a kind) is taken by a
       runner supervisor of the kind, and its step measures main's kernels against the pull
       request's on that stand-in Pi (the gate's A/B command, tests/actlab.py gate_pr_job; the
       kernels are stand-ins, its flavor and scenario the record's, rt and idle). Its output,
       uploaded as gate-rpi5, is judged again by the publisher from the raw rounds: the lab's
       own decision (ab.json), reached again, whatever the artifact says besides. Stand-in
       numbers cannot meet a Pi 5's budgets or tell two kernels apart in a few short rounds:
       that check is red, never a pass."""
    lab = guide.lab
    ctl = lab.hosts["controller"]
    origin = guide.checkout.parent / "origin.git"
    store = tmp_path / "artifacts"

    # The repository as it was when the calibration pull request was opened (the guide's
    # fixture has merged it since): main at the board files, the pull request's head.
    then = tmp_path / "then.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(origin), str(then)], check=True,
                   capture_output=True)
    head = git(then, "rev-parse", "refs/heads/calibration-rpi5").strip()
    git(then, "update-ref", "refs/heads/main", "refs/heads/lab-boards")
    git(then, "update-ref", "refs/pull/1/head", head)
    before = tmp_path / "main-then"
    subprocess.run(["git", "clone", "-q", str(then), str(before)], check=True,
                   capture_output=True)
    context = plan(before, tmp_path / "pr-1", head_sha=head, pull_request=1,
                   lab_boards=["rpi5"])
    assert context["kernel_inputs_changed"] is False, context
    assert "bench/calibration/rpi5.json" in context["changed_inputs"], context
    keep_context(store, 1001, tmp_path / "pr-1")
    first = publish(before, store, gate_run=1001, event="workflow_run", head_sha=head,
                    tmp=tmp_path / "act-1")
    assert first.returncode == 0 and first.outcome is not None, first.log[-6000:]
    assert (first.outcome["outcome"], first.conclusion) == ("unchanged", "success"), first.log
    lab.timings["green check"] = time.monotonic() - lab.started
    print(f"lab timings (s): {json.dumps(lab.timings)}")

    # Merged (the guide did), then a pull request that changes a kernel config.
    assert git(origin, "rev-parse", "refs/heads/main").strip() == head
    main = tmp_path / "main"
    subprocess.run(["git", "clone", "-q", str(origin), str(main)], check=True,
                   capture_output=True)
    kernel_head = pull_request(main, 2, kernel_config_change, "rt: 1000 Hz")
    context = plan(main, tmp_path / "pr-2", head_sha=kernel_head, pull_request=2,
                   lab_boards=["rpi5"])
    record = main / "bench" / "calibration" / "rpi5.json"
    ab_plan = context["ab"]["rpi5"]
    assert ab_plan["calibration_sha256"] == hashlib.sha256(record.read_bytes()).hexdigest()
    # The plan's keys are the record's (CHANGES["calibrate"]: rt, idle), not the board's
    # flavors and scenarios: the record's cap is sized for its keys, and rtgate ab refuses a
    # cap that cannot fit the first look of more (exit 2); the publisher replays those keys.
    assert (ab_plan["flavors"], ab_plan["scenarios"]) == (["rt"], ["idle"]), ab_plan
    keep_context(store, 1002, tmp_path / "pr-2")
    # The job's checkout reads the repository (GitHub's, here a copy on the controller).
    shutil.copytree(origin, ctl.root / "srv" / "lab-origin.git")
    ctl.nsenter(f"chown -R {RUNNER}: /srv/lab-origin.git")
    stand_in_kernels(lab, ["pr-kernels/stock", "pr-kernels/rt"])
    script = gate_pr_job(origin="file:///srv/lab-origin.git", ab_plan=ab_plan,
                         base=f"/home/{RUNNER}/kernels", cand=f"/home/{RUNNER}/pr-kernels")
    t = time.monotonic()
    with lab_github(guide) as fake:
        job = fake.queue_job("rpi5", 0, script=script)
        ctl.nsenter("systemctl restart rtgate-runner@rpi5-a rtgate-runner@rpi5-b")
        deadline = time.monotonic() + 2400
        while time.monotonic() < deadline and not job.done:
            time.sleep(1)
        ctl.nsenter("systemctl stop rtgate-runner@rpi5-a rtgate-runner@rpi5-b", check=False)
    lab.timings["a pull request's A/B on a stand-in"] = time.monotonic() - t
    assert job.done, ctl.nsenter("journalctl -u 'rtgate-runner@*' --no-pager | tail -n 60",
                                 check=False).stdout
    board = job.env["RTGATE_BOARD"]
    assert board in BOARDS and job.runner.startswith(f"{board}-"), job.runner
    out = ctl.root / "srv" / "rtgate" / board / "results" / f"{job.id}-1" / f"gate-{board}"
    assert (out / "ab.json").is_file(), f"exit {job.returncode}\n{job.log[-6000:]}"
    measured = json.loads((out / "ab.json").read_text())["outcome"]
    keep_results(store, 1002, "gate-rpi5", out)
    second = publish(main, store, gate_run=1002, event="workflow_run", head_sha=kernel_head,
                     gate_conclusion="failure" if job.returncode else "success",
                     tmp=tmp_path / "act-2")
    assert second.returncode == 0 and second.outcome is not None, second.log[-6000:]
    # The publisher's own decision from the rounds is the lab's; a stand-in is no Pi 5.
    judged = GATE_OF_AB[ABOutcome(measured)].value
    assert second.outcome["boards"] == {"rpi5": judged}, (measured, second.comment)
    assert judged not in ("pass", "infrastructure"), (measured, job.log[-4000:])
    assert second.conclusion == "failure", second.log[-6000:]
    assert f"(on `{board}`)" in second.comment, second.comment

    # The same rounds under an artifact that says all is well: still the rounds' decision.
    forged = tmp_path / "forged" / f"gate-{board}"
    shutil.copytree(out, forged)
    doc = json.loads((forged / "ab.json").read_text())
    (forged / "ab.json").write_text(json.dumps({**doc, "outcome": "same", "exit": 0}))
    (forged / "outcome.json").write_text(json.dumps({"outcome": "pass", "exit": 0}))
    keep_results(store, 1002, "gate-rpi5", forged)
    third = publish(main, store, gate_run=1002, event="workflow_run", head_sha=kernel_head,
                    tmp=tmp_path / "act-3")
    assert third.outcome is not None and third.outcome["boards"] == {"rpi5": judged}, third.log
    assert third.conclusion == "failure"
