"""Splitting a one-machine scenario between the board and its network peer, and judging the
peer's loads: one that dies before the measurement ends is an early exit, one that dies with the
board's server afterwards is not."""

from __future__ import annotations

from rtgate.board.peer import split
from rtgate.board.spec import PeerOptions
from rtgate.harness.scenario import load_scenario


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
