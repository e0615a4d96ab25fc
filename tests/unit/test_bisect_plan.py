"""`rtgate bisect` resolves every step's plan (scenarios, tools, budgets, margins) and the
flavor's config fragment before the first build: a usage error is exit 2 with no kernel built
and no step measured."""

from __future__ import annotations

from pathlib import Path

import pytest
from clirun import RunCli

SERIES = Path(__file__).parents[1] / "data" / "bisect" / "series"


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
    assert sorted(p.name for p in out.iterdir()) == []  # no state, no variants, no steps
