"""`rtgate bisect` resolves the series and its ends, every scenario, every step's plan
(scenarios, tools, budgets, margins) and the flavor's config fragment before the first build
(rtgate.bisect.plan.validate): every problem named at once, exit 2, no kernel built, no step
measured, OUT not made; `--dry-run` prints the plan."""

from __future__ import annotations

from pathlib import Path

import pytest
from clirun import RunCli

DATA = Path(__file__).parents[1] / "data"
SERIES = DATA / "bisect" / "series"
PLANS = DATA / "plans"


@pytest.mark.parametrize(("flavor", "scenario", "said"), [
    ("stock", "nosuch", "no such scenario 'nosuch'"),
    ("nope", "idle", "unknown flavor 'nope'"),
])
def test_a_usage_error_costs_no_build(rtgate_cli: RunCli, tmp_path: Path, flavor: str,
                                      scenario: str, said: str) -> None:
    out = tmp_path / "b"
    proc = rtgate_cli("bisect", "--board", "qemu-arm64", "--flavor", flavor, "--series", SERIES,
                      "--scenarios", scenario, "--round-duration", "10s", "--step-time", "5m",
                      "--planned-rounds", "8", "--out", out)
    assert proc.returncode == 2, proc.stderr
    assert said in proc.stderr
    assert not out.exists()  # no state, no variants, no steps


def test_every_problem_is_named_before_any_build(rtgate_cli: RunCli, tmp_path: Path) -> None:
    """Each problem on a line of its own, then their count: wrong ends and a replay without its
    plan; measuring, wrong ends, an unknown flavor and a missing scenario."""
    out = tmp_path / "b"
    proc = rtgate_cli("bisect", "--board", "qemu-arm64", "--flavor", "nope", "--series", SERIES,
                      "--good", "9", "--scenarios", "idle,nosuch", "--round-duration", "10s",
                      "--step-time", "5m", "--replay", tmp_path / "r", "--out", out)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert any("--good 9 --bad 8: need 0 <= good < bad <= 8" in line for line in lines), lines
    assert any("--replay needs --planned-rounds" in line for line in lines), lines
    assert lines[-1] == ("rtgate: 2 problems found before any build or boot (above): nothing "
                         "was run")
    # A replay re-makes each step's plan from its rounds: the flavor and scenarios are not
    # resolved from this checkout's files, so those two are not among its problems.
    proc = rtgate_cli("bisect", "--board", "qemu-arm64", "--flavor", "nope", "--series", SERIES,
                      "--good", "9", "--scenarios", "idle,nosuch", "--round-duration", "10s",
                      "--step-time", "5m", "--out", out)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 4, lines
    assert any("unknown flavor 'nope'" in line for line in lines), lines
    assert any("no such scenario 'nosuch'" in line for line in lines), lines
    assert not out.exists()


def test_missing_budgets_are_named_for_every_scenario(rtgate_cli: RunCli, tmp_path: Path) -> None:
    thresholds = tmp_path / "thresholds.yml"
    thresholds.write_text("schema: rtgate/thresholds/v2\nbudgets:\n"
                          "  - {board: qemu-arm64, flavor: '*', scenario: cpu, max_us: 900,\n"
                          "     reason: only cpu}\n")
    proc = rtgate_cli("bisect", "--board", "qemu-arm64", "--flavor", "rt", "--series", SERIES,
                      "--scenarios", "idle,net", "--round-duration", "10s", "--step-time", "5m",
                      "--thresholds", thresholds, "--out", tmp_path / "b")
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert any("no budget matches qemu-arm64/rt/idle" in line for line in lines), lines
    assert any("no budget matches qemu-arm64/rt/net" in line for line in lines), lines


def test_the_plan_is_printed_without_a_device(rtgate_cli: RunCli, tmp_path: Path) -> None:
    """`--dry-run`: the board, the series and its ends, the builds' target, runtime and cache
    trust, and every step's A/B plan (the keys' budgets with file:line, margins, metrics, the
    planned rounds and where they come from), as the reference file says; nothing built, OUT
    not made. Regenerate the reference with the same command when a scenario's warm-up or the
    test budgets move."""
    out = tmp_path / "b"
    proc = rtgate_cli("bisect", "--board", "qemu-arm64", "--flavor", "rt", "--series", SERIES,
                      "--scenarios", "idle,net", "--round-duration", "10s", "--step-time", "10m",
                      "--min-effect-pct", "900", "--thresholds", DATA / "bisect" / "thresholds.yml",
                      "--cache-trust", "untrusted", "--bad", "6", "--out", out, "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (PLANS / "bisect-qemu-arm64.yml").read_text()
    assert not out.exists()
