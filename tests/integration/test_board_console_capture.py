"""A board's serial console, captured on the controller by a real shell command, is kept as its
last segments and stopped cleanly (rtgate.board.evidence.ConsoleCapture)."""

from __future__ import annotations

import os
import pty
import shutil
import subprocess
import time
import tty
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


def test_picocom_as_the_guide_starts_it_captures_the_serial_line(tmp_path: Path) -> None:
    """docs/rpi5.md's console_command, the real picocom (scripts/deps.sh lab), on a pseudo-
    terminal standing for the debug probe's UART. picocom is a terminal program: it reads the
    keyboard from its stdin and, with stdin at /dev/null, exits at once (0) having captured
    nothing — checked here first, so the test fails if the capture ever loses its terminal."""
    picocom = shutil.which("picocom")
    assert picocom, "picocom is missing: scripts/deps.sh lab installs it"
    uart, line = pty.openpty()
    tty.setraw(uart)
    command = f"{picocom} -q -b 115200 --noreset -r {os.ttyname(line)}"
    alone = subprocess.run(command, shell=True, stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=30, check=False)
    assert (alone.returncode, alone.stdout) == (0, b""), alone
    log = tmp_path / "console.log"
    capture = evidence.ConsoleCapture(command, log)
    capture.start()
    try:
        deadline = time.monotonic() + 30
        while evidence.first_panic([log]) is None and time.monotonic() < deadline:
            os.write(uart, b"[    2.345678] Kernel panic - not syncing: on the UART\r\n")
            time.sleep(0.3)
        assert capture.proc is not None and capture.proc.poll() is None, log.read_bytes()
    finally:
        capture.stop()
        os.close(uart)
        os.close(line)
    assert evidence.first_panic([log]) == "Kernel panic - not syncing: on the UART"
