"""`rtgate calibrate` resolves its A/B run (board, main's kernels, every key's budget and margin),
its bank and where the record goes before the first round (rtgate.ab.calibrateplan.validate):
every problem named at once, exit 2, nothing measured or written; `--dry-run` prints the plan."""

from __future__ import annotations

import tarfile
from pathlib import Path

import yaml
from clirun import RunCli
from fakekernel import built_kernel

ROOT = Path(__file__).parents[2]
PLANS = ROOT / "tests" / "data" / "plans"


def test_the_plan_is_printed_without_a_device(rtgate_cli: RunCli, tmp_path: Path) -> None:
    """`--dry-run`: the kernels, the bank (rounds to record, results already there), the
    replays and effects, where the record goes and every key's budget (file:line), margin and
    primary metric (the kind's record's), as the reference file says (the temporary directory
    written TMP); nothing measured, nothing written. Regenerate the reference with the same
    command when thresholds.yml's lines or the qemu-arm64 record move."""
    kernels, out = tmp_path / "kernels", tmp_path / "bank"
    for flavor in ("stock", "rt"):
        built_kernel(kernels / flavor)
    proc = rtgate_cli("calibrate", "--board", "qemu-arm64", "--kernels", kernels, "--scenarios",
                      "idle", "--rounds", "12", "--round-duration", "20s", "--out", out,
                      "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.replace(str(tmp_path), "TMP") == (
        PLANS / "calibrate-qemu-arm64.yml").read_text()
    assert not out.exists()


def test_every_problem_is_named_before_the_first_round(rtgate_cli: RunCli,
                                                      tmp_path: Path) -> None:
    """No kernels for a kernel board that records a bank, a missing scenario and nowhere to put
    the record: three problems, each on its line, then their count; OUT not made."""
    out = tmp_path / "bank"
    proc = rtgate_cli("calibrate", "--board", "qemu-arm64", "--scenarios", "idle,nosuch",
                      "--rounds", "3", "--round-duration", "20s", "--out", out, "--record",
                      tmp_path / "nowhere" / "qemu-arm64.json")
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert any("boots the kernels it measures: give --kernels (" in line for line in lines), lines
    assert any("no such scenario 'nosuch'" in line for line in lines), lines
    assert any(f"{tmp_path / 'nowhere'}: no such directory for the record" in line
               for line in lines), lines
    assert lines[-1] == ("rtgate: 3 problems found before the first round (above): nothing "
                         "was run")
    assert not out.exists()


def test_a_replay_with_nothing_to_replay_is_refused(rtgate_cli: RunCli, tmp_path: Path) -> None:
    out = tmp_path / "bank"
    proc = rtgate_cli("calibrate", "--board", "qemu-arm64", "--scenarios", "net", "--rounds",
                      "0", "--round-duration", "20s", "--out", out, "--record",
                      tmp_path / "qemu-arm64.json")
    assert proc.returncode == 2, proc.stderr
    assert "--rounds 0 replays the bank" in proc.stderr and "--kernels" not in proc.stderr


def test_a_replay_of_a_kernel_boards_bank_needs_no_kernels(rtgate_cli: RunCli,
                                                           tmp_path: Path) -> None:
    """`--rounds 0` replays the bank already in OUT and boots nothing: before 2026-11-28 it
    still demanded --kernels on a kernel board (`make calibration-qemu-arm64-replay` built both
    kernels only to name them). The committed qemu-arm64 bank, unpacked, no --kernels."""
    with tarfile.open(ROOT / "benchmarks" / "records" / "banks" / "qemu-arm64.tar.xz") as tar:
        tar.extractall(tmp_path)  # the repository's own bank
    out = tmp_path / "qemu-arm64"
    proc = rtgate_cli("calibrate", "--board", "qemu-arm64", "--flavors", "stock,rt",
                      "--scenarios", "net", "--rounds", "0", "--round-duration", "20s",
                      "--out", out, "--record", tmp_path / "qemu-arm64.json", "--dry-run")
    assert proc.returncode == 0, proc.stderr
    plan = yaml.safe_load(proc.stdout)
    assert plan["kernels"] == {"none": "the bank in out is replayed, nothing booted"}
    assert plan["bank"]["record_rounds"] == "none: the bank in out is replayed"
    assert plan["bank"]["results_in_out"] == 56
    assert [k["key"] for k in plan["keys"]] == ["qemu-arm64/stock/net", "qemu-arm64/rt/net"]
    assert not (tmp_path / "qemu-arm64.json").exists()


def test_missing_minimum_effects_are_named_for_every_key(rtgate_cli: RunCli,
                                                        tmp_path: Path) -> None:
    """The local board's budgets carry no A/B minimum effect: each scenario's keys say so."""
    proc = rtgate_cli("calibrate", "--board", "local", "--scenarios", "idle,cpu", "--rounds", "3",
                      "--round-duration", "5s", "--out", tmp_path / "bank", "--dry-run")
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert any("local/stock/idle: no minimum effect" in line for line in lines), lines
    assert any("local/stock/cpu: no minimum effect" in line for line in lines), lines


def test_the_record_may_go_into_the_bank_the_run_makes(rtgate_cli: RunCli,
                                                       tmp_path: Path) -> None:
    """docs/lab.md's recipe writes the record into OUT (`--out calibration-rpi5 --record
    calibration-rpi5/rpi5.json`), which the run makes: not a missing directory."""
    kernels, out = tmp_path / "kernels", tmp_path / "bank"
    for flavor in ("stock", "rt"):
        built_kernel(kernels / flavor)
    proc = rtgate_cli("calibrate", "--board", "qemu-arm64", "--kernels", kernels, "--scenarios",
                      "idle", "--rounds", "3", "--round-duration", "20s", "--out", out,
                      "--record", out / "qemu-arm64.json", "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert "no such directory" not in proc.stderr
    assert not out.exists()
