"""Splitting a one-machine scenario between the board and its network peer, and judging the
peer's loads: one that dies before the measurement ends is an early exit, one that dies with the
board's server afterwards is not."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from rtgate.bench.plan import Params
from rtgate.bench.scenario import Scenario, load_scenario
from rtgate.board.guestenv import LoadReport
from rtgate.board.peer import PeerLoads, split
from rtgate.board.spec import PeerOptions
from rtgate.result import load_result

DATA = Path(__file__).parent / "data" / "results"


def test_all_in_split_server_on_board_client_on_peer() -> None:
    scenario, _ = load_scenario("all-in")
    peer = PeerOptions(board_address="rpi5-lab", board_port=5201)
    on_board, on_peer = split(scenario, peer, peer_port=5201)
    assert [ld.name for ld in on_board.loads] == ["stress-all", "iperf3-server"]
    server = on_board.loads[1]
    assert server.argv == ["iperf3", "--server", "--bind", "0.0.0.0", "--port", "5201"]
    assert server.listens_on == "5201"
    assert [ld.name for ld in on_peer.loads] == ["iperf3-client"]
    client = on_peer.loads[0].argv
    assert client[:5] == ["iperf3", "--client", "rpi5-lab", "--port", "5201"]
    # Everything else stays a template, rendered where it runs.
    assert "{scaled:100}" in client and "{tmpdir}" in on_board.loads[0].argv


def test_qemu_peer_reaches_the_forwarded_port() -> None:
    scenario, _ = load_scenario("net")
    _, on_peer = split(scenario, PeerOptions(), peer_port=40123)
    assert on_peer.loads[0].argv[2:5] == ["127.0.0.1", "--port", "40123"]


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
    [record] = peer.records(measured_until=later)
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
    [record] = peer.records(measured_until=measured_until)
    assert record.early_exit is None
    result = LoadReport([record]).apply(load_result(DATA / "local-cpu.result.json"))
    assert result.status == "complete" and result.loads[-1].early_exit is False
