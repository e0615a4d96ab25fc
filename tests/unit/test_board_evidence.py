"""The panic line in crash evidence is found reading a bounded amount (rtgate.board.evidence)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rtgate.board import evidence
from rtgate.inputfile import MiB

PANIC = "[   12.345678] Kernel panic - not syncing: Attempted to kill init!\n"


def test_a_line_without_an_end_is_cut_and_the_panic_after_it_found(tmp_path: Path) -> None:
    log = tmp_path / "console.log"
    log.write_bytes(b"x" * (3 * MiB // 2) + b"\n" + PANIC.encode())
    assert evidence.first_panic([log]) == "Kernel panic - not syncing: Attempted to kill init!"


def test_no_more_than_log_cap_of_a_file_is_read(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(evidence, "LOG_CAP", 2 * MiB)
    late, early = tmp_path / "late.txt", tmp_path / "early.txt"
    late.write_bytes(b"noise\n" * (3 * MiB // 6) + PANIC.encode())
    early.write_bytes(b"noise\n" * 1000 + PANIC.replace("Kernel panic", "BUG:").encode())
    assert evidence.first_panic([late, early]) == "BUG: - not syncing: Attempted to kill init!"


def test_unreadable_files_are_skipped(tmp_path: Path) -> None:
    assert evidence.first_panic([tmp_path / "absent", tmp_path]) is None


@pytest.mark.parametrize("line, said", [
    # hung_task's own words (kernel/hung_task.c): a task stuck in D state.
    ("[  245.1] INFO: task kworker/3:1:123 blocked for more than 120 seconds.",
     "INFO: task kworker/3:1:123 blocked for more than 120 seconds."),
    # The softlockup detector (kernel/watchdog.c).
    ("[  30.2] watchdog: BUG: soft lockup - CPU#3 stuck for 22s! [cyclictest:812]",
     "watchdog: BUG: soft lockup - CPU#3 stuck for 22s! [cyclictest:812]"),
    # A test kernel that rebooted by itself (kernel/reboot.c): rtgate reads the evidence before
    # it ever asks a test kernel to reboot.
    ("[  61.0] reboot: Restarting system", "reboot: Restarting system"),
])
def test_hangs_and_reboots_nobody_asked_for_are_evidence(tmp_path: Path, line: str,
                                                         said: str) -> None:
    log = tmp_path / "journal-kernel.txt"
    log.write_text(f"[    0.0] Booting Linux\n{line}\n")
    assert evidence.first_panic_in([tmp_path / "absent", log]) == (said, log)


def test_a_claimed_crash_holds_only_with_its_line_in_a_file_inside_the_run(tmp_path: Path) -> None:
    home = tmp_path / "run"
    (home / "previous-boot").mkdir(parents=True)
    (home / "previous-boot" / "journal-kernel.txt").write_text(PANIC)
    said = "Kernel panic - not syncing: Attempted to kill init!"
    assert evidence.confirmed(home, said, "previous-boot/journal-kernel.txt")
    assert not evidence.confirmed(home, "Kernel panic - not syncing: else",
                                  "previous-boot/journal-kernel.txt")
    (tmp_path / "outside.txt").write_text(PANIC)
    assert not evidence.confirmed(home, said, "../outside.txt")
    assert not evidence.confirmed(home, said, str(tmp_path / "outside.txt"))
    # Never through a link the artifact's writer planted.
    (home / "console.log").symlink_to(tmp_path / "outside.txt")
    assert not evidence.confirmed(home, said, "console.log")
    assert not evidence.confirmed(home, said, "previous-boot/absent")


def test_the_pstore_drop_in_is_what_systemd_pstore_reads_to_keep_records() -> None:
    """systemd-pstore moves every /sys/fs/pstore file to /var/lib/systemd/pstore and unlinks it
    at boot unless told otherwise: its defaults are Storage=external and Unlink=yes (systemd
    src/pstore/pstore.c, ``arg_storage = PSTORE_STORAGE_EXTERNAL``, ``arg_unlink = true``,
    ``arg_archivedir = "/var/lib/systemd/pstore"``; pstore.conf(5), "Unlink="). Its settings are
    read from /etc/systemd/pstore.conf.d/*.conf in section [PStore] (``parse_config``:
    ``CONF_PATHS_NULSTR("systemd/pstore.conf.d")``, section "PStore")."""
    path, text = evidence.PSTORE_DROPIN
    assert path.startswith("/etc/systemd/pstore.conf.d/") and path.endswith(".conf")
    assert text.splitlines() == ["[PStore]", "Unlink=no"]
    assert evidence.PSTORE_ARCHIVE == "/var/lib/systemd/pstore"
