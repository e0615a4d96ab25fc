"""The local board through the board interface: no deploy, no reboot, the real local runner."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from clirun import RunProcess

from rtgate.result import load_result

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def test_board_run_on_local_measures_this_machine(rtgate_process: RunProcess,
                                                  tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = rtgate_process("board", "run", "--board", "local", "--scenario", "idle", "--duration",
                          "1", "--out", str(out), timeout=100)
    assert proc.returncode == 0, proc.stderr
    assert "rtgate board run: local: complete" in proc.stderr
    result = load_result(out / "result.json")
    assert result.board.name == "local" and result.kernel.release == os.uname().release
    assert (out / "raw" / "cyclictest.json").is_file()


def test_local_board_cannot_boot_another_kernel(rtgate_process: RunProcess, tmp_path: Path) -> None:
    kernel = tmp_path / "kernel"
    kernel.mkdir()
    (kernel / "Image").write_bytes(b"not booted")
    (kernel / "metadata.json").write_text(
        '{"kernel_release": "6.12.0-elsewhere", "plan": {"board": {"image_name": "Image"}}}')
    proc = rtgate_process("board", "run", "--board", "local", "--kernel", str(kernel),
                          "--scenario", "idle", "--duration", "1", "--out", str(tmp_path / "out"),
                          timeout=100)
    assert proc.returncode == 2
    assert "cannot boot another kernel" in proc.stderr
