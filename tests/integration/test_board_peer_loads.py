"""A peer load (a real process) that dies before or during the measurement."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from rtgate.board.loadreport import LoadReport
from rtgate.board.peer import PeerLoads, peer_records
from rtgate.harness.plan import Params
from rtgate.harness.scenario import Scenario
from rtgate.result import load_result

DATA = Path(__file__).parents[1] / "data" / "results"


def _peer(tmp_path: Path, argv: list[str]) -> PeerLoads:
    scenario = Scenario.model_validate({"name": "p", "description": "d",
                                        "loads": [{"name": "client", "argv": argv}]})
    params = Params(cpus=1, port=1, tmpdir=str(tmp_path), scale=1.0, timeout_s=5)
    return PeerLoads(scenario, params, tmp_path, tmp_path)


def test_peer_load_dying_during_the_measurement_is_early(tmp_path: Path) -> None:
    peer = _peer(tmp_path, ["sh", "-c", "exit 7"])
    peer.start()
    time.sleep(0.5)
    peer.watch()
    peer.stop()
    later = datetime.now(UTC) + timedelta(seconds=5)
    [record] = peer_records(peer.ended(), measured_until=later)
    assert record.early_exit == 7 and record.where == "peer"
    result = LoadReport([record]).apply(load_result(DATA / "local-cpu.result.json"))
    assert result.status == "degraded"
    assert any("'client' (peer) exited early with status 7" in r for r in result.reasons)
    assert result.loads[-1].name == "client" and result.loads[-1].early_exit


def test_peer_load_dying_after_the_measurement_is_not_early(tmp_path: Path) -> None:
    measured_until = datetime.now(UTC)
    peer = _peer(tmp_path, ["sh", "-c", "exit 1"])
    peer.start()
    time.sleep(0.5)
    peer.stop()
    [record] = peer_records(peer.ended(), measured_until=measured_until)
    assert record.early_exit is None
    result = LoadReport([record]).apply(load_result(DATA / "local-cpu.result.json"))
    assert result.status == "complete" and result.loads[-1].early_exit is False
