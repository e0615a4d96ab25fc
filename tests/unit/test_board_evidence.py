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
