"""`rtgate pipeline` on the `local` board: measures this machine."""

from __future__ import annotations

from pathlib import Path

import pytest
from clirun import RunCli
from test_pipeline import cases_of

from rtgate.result import load_result


@pytest.mark.integration
def test_local_pipeline_measures_the_boards_own_scenarios_and_gates(rtgate_cli: RunCli,
                                                                    tmp_path: Path) -> None:
    # No --scenarios: the board file names them (local: cpu).
    proc = rtgate_cli("pipeline", "--board", "local", "--duration", "3s", "--out", tmp_path)
    assert proc.returncode == 0, proc.stderr
    result = load_result(next(tmp_path.glob("*/cpu/result.json")))
    assert result.status == "complete" and result.totals.samples > 1000
    cases = cases_of(tmp_path / "junit.xml")
    assert any(name.startswith("local/") and ": max_us <= " in name for name in cases)
    assert not any(cases.values()), "no failure or error expected on the smoke budgets"
    assert "### `local` / `cpu`" in (tmp_path / "comparison.md").read_text()


@pytest.mark.integration
def test_a_scenario_given_by_its_file_is_measured_under_its_name(rtgate_cli: RunCli,
                                                                 tmp_path: Path) -> None:
    scenario = tmp_path / "idle.yml"
    scenario.write_text((Path(__file__).parents[2] / "bench" / "scenarios" / "idle.yml")
                        .read_text())
    out = tmp_path / "out"
    proc = rtgate_cli("pipeline", "--board", "local", "--scenarios", scenario, "--duration",
                      "2s", "--out", out)
    assert proc.returncode == 0, proc.stderr
    (result,) = out.glob("*/idle/result.json")
    assert load_result(result).scenario == "idle"
    assert "### `local` / `idle`" in (out / "comparison.md").read_text()
