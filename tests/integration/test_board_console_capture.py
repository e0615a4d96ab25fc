"""A board's serial console, captured on the controller by a real shell command, is kept as its
last segments and stopped cleanly (rtgate.board.evidence.ConsoleCapture)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from rtgate.board import evidence


def test_a_long_console_keeps_its_last_segments_only(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(evidence, "CONSOLE_SEGMENT", 64 * 1024)
    log = tmp_path / "console.log"
    # ~1 MiB of lines, then the last one, then a serial line that stays open.
    capture = evidence.ConsoleCapture(
        "i=0; while [ $i -lt 16000 ]; do echo \"line $i of the boot log, padded ...........\";"
        " i=$((i+1)); done; echo 'Kernel panic - not syncing: last'; exec sleep 60", log)
    capture.start()
    deadline = time.monotonic() + 60
    while evidence.first_panic(evidence.console_files(log)) is None \
            and time.monotonic() < deadline:
        time.sleep(0.1)
    capture.stop()
    kept = evidence.console_files(log)
    assert kept == [log.with_name("console.log.1"), log]
    assert sum(p.stat().st_size for p in kept) <= 2 * 64 * 1024
    assert evidence.first_panic(kept) == "Kernel panic - not syncing: last"
    assert b"line 0 of" not in b"".join(p.read_bytes() for p in kept)


def test_stop_survives_a_console_that_ended_under_it(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    capture = evidence.ConsoleCapture("echo up; exec sleep 60", tmp_path / "console.log")
    capture.start()
    real = os.killpg

    def gone(pgid: int, sig: int) -> None:
        # The session ends between stop()'s poll and its signal.
        real(pgid, 9)
        raise ProcessLookupError(pgid)

    monkeypatch.setattr(evidence.os, "killpg", gone)
    capture.stop()
    assert capture.proc is None
