"""The lab guide's commands that can run here, run (docs/lab.md, docs/rpi5.md): every shell
block parses, the dependency groups it installs exist, the Pi's sudoers line is valid, and the SD
card cleanup removes rtgate's module trees only. (rtgate's own commands in the guide — `board
doctor`, `kernel pin` — are run by test_rpi5_ssh.py and test_kernel_source_pin.py.)"""

from __future__ import annotations

import re
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
