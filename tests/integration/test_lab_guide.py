"""The lab pages' shell blocks outside the setup guide's order (docs/lab.md, docs/rpi5.md): every
shell block parses, the dependency groups the guide installs exist; the /etc/hosts line,
cyclictest's setcap/getcap and the SD card cleanup run for real. The setup guide itself
("Setting up the lab") is run in order by tests/e2e/test_lab_ansible.py; its marks are checked
by tests/unit/test_lab_guide_marks.py."""

from __future__ import annotations

import re
import shutil
import subprocess
import textwrap
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


def test_the_guide_names_the_runner_service_as_the_template_instance() -> None:
    # Everywhere the guide names the service, it is this template's instance (it once said
    # rtgate-runner-rpi5).
    text = GUIDE[0].read_text()
    assert "systemctl stop rtgate-runner@rpi5-b" in text and "rtgate-runner-" not in text
    assert (ROOT / "rtgate" / "lab" / "rtgate-runner@.service").is_file()
