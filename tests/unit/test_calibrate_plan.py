"""`rtgate calibrate` resolves its A/B run (board, main's kernels, every key's budget and margin),
its bank and where the record goes before the first round (rtgate.ab.calibrateplan.validate):
every problem named at once, exit 2, nothing measured or written; `--dry-run` prints the plan."""

from __future__ import annotations

from pathlib import Path

from clirun import RunCli
from fakekernel import built_kernel

PLANS = Path(__file__).parents[1] / "data" / "plans"


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
    """No kernels for a kernel board, a missing scenario, nothing to replay and nowhere to put
    the record: four problems, each on its line, then their count; OUT not made."""
    out = tmp_path / "bank"
    proc = rtgate_cli("calibrate", "--board", "qemu-arm64", "--scenarios", "idle,nosuch",
                      "--rounds", "0", "--round-duration", "20s", "--out", out, "--record",
                      tmp_path / "nowhere" / "qemu-arm64.json")
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert any("boots the kernels it measures: give --kernels (" in line for line in lines), lines
    assert any("no such scenario 'nosuch'" in line for line in lines), lines
    assert any("--rounds 0 replays the bank" in line for line in lines), lines
    assert any(f"{tmp_path / 'nowhere'}: no such directory for the record" in line
               for line in lines), lines
    assert lines[-1] == ("rtgate: 4 problems found before the first round (above): nothing "
                         "was run")
    assert not out.exists()


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
