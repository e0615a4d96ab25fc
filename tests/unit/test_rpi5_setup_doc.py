"""docs/rpi5.md's "Setting up a Pi" against what it relies on: the bootloader is checked and
moved while the Pi still has apt, before anything is held, and the release the guide would
otherwise install is one bench/firmware/rpi5.yml flags."""

from __future__ import annotations

import re
from pathlib import Path

from rtgate.board.doctor import judge_version, known_versions
from rtgate.board.evidence import PSTORE_DROPIN

ROOT = Path(__file__).resolve().parents[2]
SETUP = (ROOT / "docs" / "rpi5.md").read_text().split("## Setting up a Pi", 1)[1].split("\n## ")[0]
# rpi-eeprom at 86759b04 (2026-08-19): firmware-2712/default/ holds pieeprom-2026-05-26.bin, the
# release `rpi-eeprom-update -a` installs with FIRMWARE_RELEASE_STATUS=default; its bootloader
# answers as vcgencmd prints (tests/integration/test_rpi5_ssh.py, LISTED_BAD).
DEFAULT_RELEASE = "2026/05/26 16:01:25\nversion 086b83e3 (release)\ntimestamp 1779807685\n"


def test_the_default_release_is_listed_bad_so_the_guide_installs_latest() -> None:
    assert judge_version("bootloader", DEFAULT_RELEASE, known_versions("rpi5")).state == "fail"
    assert "FIRMWARE_RELEASE_STATUS=latest" in SETUP and "rpi-eeprom-update -a" in SETUP


def test_the_bootloader_moves_before_anything_is_held_or_isolated() -> None:
    """A Pi on the isolated segment has no apt: the EEPROM is checked and updated first, then
    the packages are held and the update service masked."""
    order = [SETUP.index(s) for s in ("apt-get install", "rpi-eeprom-update -a",
                                      "apt-mark hold", "systemctl mask rpi-eeprom-update")]
    assert order == sorted(order), order


def test_the_account_gets_its_key_without_a_password_and_crash_evidence_survives() -> None:
    # useradd leaves the password locked: ssh-copy-id cannot log in as the new account.
    blocks = re.findall(r"```sh\n(.*?)```", SETUP, re.S)
    commands = [line for b in blocks for line in b.splitlines()
                if line.strip() and not line.lstrip().startswith("#")]
    assert commands and not any("ssh-copy-id" in line for line in commands)
    assert "/home/rtgate/.ssh/authorized_keys" in SETUP and "known_hosts" in SETUP
    path, text = PSTORE_DROPIN
    assert path in SETUP and "Unlink=no" in SETUP and "/var/log/journal" in SETUP
    assert text == "[PStore]\nUnlink=no\n"
