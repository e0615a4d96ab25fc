"""`rtgate calibrate --rounds 0` on a kernel board: the committed qemu-arm64 bank replayed
through the real CLI with no --kernels (nothing is booted), to a record that validates."""

from __future__ import annotations

import shutil
import tarfile
from pathlib import Path

import pytest
from clirun import RunCli

from rtgate import calibration

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.integration
def test_a_kernel_boards_bank_replays_without_kernels(rtgate_cli: RunCli, tmp_path: Path) -> None:
    """Three rounds a side of the 2026-11-25 bank's stock/net (the least a look needs; about a
    minute of replay at 100 resamples on the 2-core VM)."""
    with tarfile.open(ROOT / "benchmarks" / "records" / "banks" / "qemu-arm64.tar.xz") as tar:
        tar.extractall(tmp_path / "full")  # the repository's own bank
    out = tmp_path / "bank"
    for side in "AB":
        for n in (1, 2, 3):
            home = Path(side, f"round-{n}", "stock", "net")
            shutil.copytree(tmp_path / "full" / "qemu-arm64" / home, out / home)
    record = tmp_path / "qemu-arm64.json"
    proc = rtgate_cli("calibrate", "--board", "qemu-arm64", "--flavors", "stock", "--scenarios",
                      "net", "--rounds", "0", "--round-duration", "20s", "--replays", "100",
                      "--out", out, "--record", record)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = calibration.load(record)
    (key,) = got.keys
    assert (got.kind, key.flavor, key.scenario, key.rounds_banked) == ("qemu-arm64", "stock",
                                                                       "net", 6)
    # The bank's rounds were measured in whole µs (before -N), and the record says so.
    assert key.resolution_us == 1.0
    assert "qemu-arm64/stock/net: primary" in proc.stdout
