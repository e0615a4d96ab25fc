"""A Pi's setup (lab/roles/pi, told in docs/rpi5.md's "Setting up a Pi") against what it relies
on: the bootloader is checked and moved while the Pi still has apt, before anything is held,
and the release rpi-eeprom would install by default is one bench/firmware/rpi5.yml flags, which
the role's message and the page both answer."""

from __future__ import annotations

from pathlib import Path

import yaml

from rtgate.board.doctor import judge_version, known_versions

ROOT = Path(__file__).resolve().parents[2]
ROLE = ROOT / "lab" / "roles" / "pi" / "tasks"
SETUP = (ROOT / "docs" / "rpi5.md").read_text().split("## Setting up a Pi", 1)[1].split("\n## ")[0]
# rpi-eeprom at 86759b04 (2026-08-19): firmware-2712/default/ holds pieeprom-2026-05-26.bin, the
# release `rpi-eeprom-update -a` installs with FIRMWARE_RELEASE_STATUS=default; its bootloader
# answers as vcgencmd prints (tests/integration/test_rpi5_ssh.py, LISTED_BAD).
DEFAULT_RELEASE = "2026/05/26 16:01:25\nversion 086b83e3 (release)\ntimestamp 1779807685\n"


def tasks(name: str) -> list[dict]:
    """The role's tasks of one file, blocks flattened, in order."""
    out: list[dict] = []
    for task in yaml.safe_load((ROLE / name).read_text()):
        out.append(task)
        out.extend(task.get("block", []))
    return out


def modules(task: dict) -> str:
    return " ".join(f"{k} {v}" for k, v in task.items() if k.startswith("ansible.builtin."))


def test_the_default_release_is_listed_bad_so_the_role_and_the_page_say_latest() -> None:
    assert judge_version("bootloader", DEFAULT_RELEASE, known_versions("rpi5")).state == "fail"
    firmware = (ROLE / "firmware.yml").read_text()
    assert "FIRMWARE_RELEASE_STATUS=latest" in firmware and "rpi-eeprom-update -a" in firmware
    assert "FIRMWARE_RELEASE_STATUS=latest" in SETUP and "rpi-eeprom-update -a" in SETUP


def test_the_bootloader_moves_before_anything_is_held_or_isolated() -> None:
    """A Pi on the isolated segment has no apt: packages first (setup.yml before firmware.yml),
    then the EEPROM checked and updated, then the packages held and the update service masked."""
    imports = [t["ansible.builtin.import_tasks"] for t in yaml.safe_load(
        (ROLE / "main.yml").read_text())]
    assert imports.index("setup.yml") < imports.index("firmware.yml"), imports
    assert "ansible.builtin.apt" in modules(tasks("setup.yml")[0])
    steps = [modules(t) for t in tasks("firmware.yml")]
    order = [next(i for i, s in enumerate(steps) if needle in s) for needle in (
        "bootloader_version", "rpi-eeprom-update -a", "selection': 'hold'", "'masked': True")]
    assert order == sorted(order), (order, steps)
    page = [SETUP.index(s) for s in ("Everything from the network first", "rpi-eeprom-update -a",
                                     "Then the holds")]
    assert page == sorted(page)


def test_the_account_gets_its_key_without_a_password_and_crash_evidence_survives() -> None:
    setup = tasks("setup.yml")
    user = next(t["ansible.builtin.user"] for t in setup if "ansible.builtin.user" in t)
    assert "password" not in user and user["groups"] == ["video"]
    keys = next(t["ansible.builtin.copy"] for t in setup
                if t.get("ansible.builtin.copy", {}).get("dest", "").endswith("authorized_keys"))
    assert keys["mode"] == "0600"
    boot = (ROLE / "boot.yml").read_text()
    assert "[PStore]\n      Unlink=no" in boot and "Storage=persistent" in boot
    assert "/etc/systemd/pstore.conf.d/" in SETUP and "Unlink=no" in SETUP
    assert "/var/log/journal" in SETUP and "ssh-copy-id" in SETUP
