"""The lab guide's commands that can run here, run (docs/lab.md, docs/rpi5.md; the guide's own
list of what is run and what is not is at the top of docs/lab.md): every shell block parses,
the dependency groups it installs exist, the Pi's sudoers line is valid; the controller's SSH
key command, the /etc/hosts line, cyclictest's setcap/getcap and the SD card cleanup run for
real. (rtgate's own commands in the guide — `board doctor`, `kernel pin` — are run by
test_rpi5_ssh.py and test_kernel_source_pin.py.)"""

from __future__ import annotations

import os
import pwd
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
GUIDE = [ROOT / "docs" / "lab.md", ROOT / "docs" / "rpi5.md"]
_BLOCK = re.compile(r"^( *)```sh\n(.*?)^\1```", re.M | re.S)


def blocks(path: Path) -> list[str]:
    return [textwrap.dedent(m.group(2)) for m in _BLOCK.finditer(path.read_text())]


def all_blocks() -> list[tuple[str, str]]:
    return [(f"{p.name}#{i}", b) for p in GUIDE for i, b in enumerate(blocks(p))]


@pytest.mark.parametrize(("where", "block"), all_blocks(), ids=[w for w, _ in all_blocks()])
def test_every_shell_block_parses(where: str, block: str) -> None:
    proc = subprocess.run(["sh", "-n"], input=block, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, f"{where}: {proc.stderr}"


def test_the_dependency_groups_the_guide_installs_exist() -> None:
    deps = (ROOT / "scripts" / "deps.sh").read_text()
    groups = set(re.findall(r"^\s*\[([a-z]+)\]=", deps, re.M))
    named = [w for b in blocks(GUIDE[0]) for line in b.splitlines()
             if line.startswith("scripts/deps.sh ") for w in line.split()[1:]]
    assert named and set(named) <= groups, (named, groups)
    # What the guide says each is for: jq is ci's, Docker is docker's.
    assert re.search(r'\[ci\]="[^"]*\bjq\b', deps) and re.search(r'\[docker\]="docker\.io', deps)


def test_the_pis_sudoers_line_is_valid(tmp_path: Path) -> None:
    setup = next(b for b in blocks(GUIDE[1]) if "sudoers.d/rtgate" in b)
    line = re.search(r"echo '([^']*)' \| sudo tee /etc/sudoers.d/rtgate", setup)
    assert line, setup
    sudoers = tmp_path / "rtgate"
    sudoers.write_text(line.group(1) + "\n")
    proc = subprocess.run(["visudo", "-cf", str(sudoers)], capture_output=True, text=True,
                          timeout=30)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_sd_card_cleanup_removes_old_rtgate_module_trees_only(tmp_path: Path) -> None:
    text = GUIDE[1].read_text().replace("\n", " ")
    command = re.search(r"`(sudo find /lib/modules .*?xargs -r sudo rm -rf)`", text)
    assert command, "the cleanup command moved"
    modules = tmp_path / "lib" / "modules"
    for release, ours, days in [("6.12.0-rtgate-old", True, 30), ("6.12.0-rtgate-new", True, 1),
                                ("6.6.51+rpt-rpi-2712", False, 300)]:
        (modules / release / "kernel").mkdir(parents=True)
        if ours:
            mark = modules / release / ".rtgate-slot"
            mark.write_text(release + "\n")
            subprocess.run(["touch", "-d", f"{days} days ago", str(mark)], check=True)
    run = command.group(1).replace("sudo ", "").replace("/lib/modules", str(modules))
    subprocess.run(["sh", "-c", run], check=True, timeout=30)
    assert sorted(p.name for p in modules.iterdir()) == ["6.12.0-rtgate-new",
                                                         "6.6.51+rpt-rpi-2712"]


def _block(path: Path, needle: str) -> str:
    return next(b for b in blocks(path) if needle in b)


def test_the_controllers_ssh_key_command_makes_a_private_key_of_the_runner_user() -> None:
    # The runner user as `nobody` (ssh-keygen wants a passwd entry), its home a fresh
    # directory without ~/.ssh (outside pytest's root-only tmp, which it could not enter).
    with tempfile.TemporaryDirectory(prefix="rtgate-lab-") as top:
        Path(top).chmod(0o755)
        _make_a_key(Path(top) / "home")


def _make_a_key(home: Path) -> None:
    user = pwd.getpwnam("nobody")
    home.mkdir()
    os.chown(home, user.pw_uid, user.pw_gid)
    block = _block(GUIDE[0], "ssh-keygen")
    run = block.replace("sudo -u rtgate-runner",
                        f"setpriv --reuid={user.pw_uid} --regid={user.pw_gid} --clear-groups --") \
        .replace("~rtgate-runner", str(home))
    proc = subprocess.run(["sh", "-ec", run], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    key = home / ".ssh" / "rtgate_lab_ed25519"
    for path, mode in [(home / ".ssh", 0o700), (key, 0o600)]:
        st = path.stat()
        assert (st.st_uid, st.st_mode & 0o777) == (user.pw_uid, mode), path
    said = subprocess.run(["ssh-keygen", "-l", "-f", f"{key}.pub"], capture_output=True,
                          text=True, check=True, timeout=30).stdout
    assert said.rstrip().endswith("rtgate@ctrl-rpi5-01 (ED25519)"), said
    # The board file names that key.
    assert "identity_file: ~/.ssh/rtgate_lab_ed25519" in (
        ROOT / "bench" / "boards" / "rpi5.yml").read_text()


def test_the_hosts_line_makes_the_boards_address_resolve(tmp_path: Path) -> None:
    """The iperf3 peer resolves board_address through the resolver, not ~/.ssh/config: the
    guide's line, run in a mount namespace of its own over a copy of /etc/hosts."""
    hosts = tmp_path / "hosts"
    shutil.copyfile("/etc/hosts", hosts)
    block = _block(GUIDE[1], "/etc/hosts").replace("sudo ", "")
    script = f"mount --bind {hosts} /etc/hosts\n{block}\ngetent hosts rpi5-lab\n"
    proc = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-ec", script],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    # tee echoes the line; getent's answer is the last.
    assert proc.stdout.splitlines()[-1].split() == ["192.168.50.2", "rpi5-lab"], proc.stdout
    address = re.search(r"board_address: ([\w.-]+)",
                        (ROOT / "bench" / "boards" / "rpi5.yml").read_text())
    assert address and address.group(1) == "rpi5-lab"


def test_cyclictests_capabilities_are_what_the_guide_says_getcap_reads(tmp_path: Path) -> None:
    """The guide's setcap and getcap, on a copy of this machine's cyclictest."""
    block = _block(GUIDE[1], "setcap")
    lines = [line for line in block.splitlines() if "setcap" in line or "getcap" in line]
    copy = tmp_path / "cyclictest"
    shutil.copy2(shutil.which("cyclictest") or "/usr/bin/cyclictest", copy)
    run = "\n".join(lines).replace("sudo ", "").replace("/usr/bin/cyclictest", str(copy))
    proc = subprocess.run(["sh", "-ec", run], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    expected = lines[1].split("#", 1)[1].strip().replace("/usr/bin/cyclictest", str(copy))
    assert proc.stdout.strip() == expected


def test_the_runner_supervisors_steps_run_as_written() -> None:
    """Setup steps 3 and 4, every command, under a directory of the test's own: the App's key
    installed, the runner release unpacked (the stand-in of tests/fakerunner/), the lab file,
    `rtgate lab setup`, `systemctl enable` (offline, `--root`), then the installed unit's own
    command line as systemd would start it, against the loopback fake of GitHub's API, until
    its runner is online; then systemctl's stop signal. The lab file gets the fake's address
    and a runner section pointing under the test's directory, the runner user `nobody`."""
    from fakegithub import FakeGitHub, app_key

    private, public = app_key()
    fake = FakeGitHub(app_id="123456", public_key=public, installation_id=7654321,
                      scopes=("/repos/OWNER/rtgate",))
    with tempfile.TemporaryDirectory(prefix="rtgate-lab-") as name, fake.running():
        top = Path(name)
        top.chmod(0o755)
        (top / "rtgate-lab.private-key.pem").write_bytes(private)  # the App's download
        subprocess.run(["tar", "-czf", str(top / "actions-runner-linux-arm64.tar.gz"), "-C",
                        str(ROOT / "tests" / "fakerunner"), "."], check=True, timeout=30)
        rtgate = f"{sys.executable} -m rtgate"
        moved = {"/etc/rtgate": f"{top}/etc/rtgate", "/opt/actions-runner": f"{top}/opt/runner",
                 "/opt/rtgate/venv/bin/rtgate lab setup":
                     f"{rtgate} lab setup --config {top}/etc/rtgate/lab.yml "
                     f"--unit-dir {top}/etc/systemd/system",
                 "systemctl enable --now": f"systemctl --root={top} enable",
                 "github:\n": f"github:\n  api: {fake.url}\n",
                 "boards:\n": f"runner:\n  install_dir: {top}/opt/runner\n  user: nobody\n"
                              f"  state_dir: {top}/srv\n  env_dir: {top}/etc/rtgate/runner\n"
                              "boards:\n"}
        script = "\n".join([_block(GUIDE[0], "/etc/rtgate/app.pem"),
                            _block(GUIDE[0], "rtgate lab setup")])
        assert all(old in script for old in moved), [o for o in moved if o not in script]
        # One pass, longest first: a replacement is never replaced again.
        script = re.sub("|".join(map(re.escape, sorted(moved, key=len, reverse=True))),
                        lambda m: moved[m.group()], script)
        proc = subprocess.run(["sh", "-ec", script], cwd=top, capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 0, proc.stderr
        for path, mode in [("etc/rtgate/app.pem", 0o600), ("etc/rtgate/lab.yml", 0o600),
                           ("etc/rtgate/runner/rpi5.env", 0o644),
                           ("srv/rpi5/results", 0o1733), ("opt/runner/run.sh", 0o755)]:
            assert (top / path).stat().st_mode & 0o7777 == mode, path
        units = top / "etc" / "systemd" / "system"
        assert (units / "multi-user.target.wants" / "rtgate-runner@rpi5.service").is_symlink()
        unit = (units / "rtgate-runner@.service").read_text().replace(
            "/opt/rtgate/venv/bin/rtgate", rtgate).replace("/etc/rtgate", f"{top}/etc/rtgate")
        # systemd's own reading of the unit (the interpreter for the venv's rtgate).
        (top / "rtgate-runner@.service").write_text(unit)
        said = subprocess.run(["systemd-analyze", "verify", "./rtgate-runner@rpi5.service"],
                              cwd=top, capture_output=True, text=True, timeout=60)
        assert (said.returncode, said.stderr) == (0, ""), said.stderr
        start = re.search(r"^ExecStart=(.*)$", unit, re.M)
        assert start and re.search(r"^KillMode=mixed$", unit, re.M)
        with (top / "journal").open("w") as journal:
            service = subprocess.Popen(shlex.split(start.group(1).replace("%i", "rpi5")),
                                       stdout=journal, stderr=journal, start_new_session=True)
        try:
            deadline = time.monotonic() + 60
            while not any(r.status == "online" for r in list(fake.runners.values())):
                assert service.poll() is None and time.monotonic() < deadline, \
                    (top / "journal").read_text()
                time.sleep(0.1)
        finally:
            service.send_signal(signal.SIGTERM)
            assert service.wait(60) == 0, (top / "journal").read_text()
        assert fake.names() == [] and fake.registered[0].labels == [
            "self-hosted", "linux", "rtgate-lab", "rpi5", "board-rpi5"]
        assert "rpi5: registered rpi5-" in (top / "journal").read_text()
    # Everywhere the guide names the service, it is this template's instance (it once said
    # rtgate-runner-rpi5).
    text = GUIDE[0].read_text()
    assert "systemctl stop rtgate-runner@rpi5" in text and "rtgate-runner-" not in text
