"""`rtgate bench` refuses a scenario file with a typo before it runs anything."""

from __future__ import annotations

from pathlib import Path

from clirun import RunCli
from test_bench_integration import bench


def test_scenario_typo_is_exit_2_with_file_and_line(rtgate_cli: RunCli, tmp_path: Path) -> None:
    scenario = tmp_path / "typo.yml"
    scenario.write_text("name: typo\ndescription: d\nlods: []\n")
    run = bench(rtgate_cli, scenario, tmp_path / "out")
    assert run.returncode == 2
    assert run.stderr.strip() == f"rtgate: {scenario}:3: lods: unknown key (typo?)"
