"""The kernel under test has no route out (issue 23): QEMU's user network with restrict=on and
one forward, the host's iperf3 client to the guest's server. A listener of the test's own on the
host's loopback (10.0.2.2 from the guest) is unreachable from the guest, while the net
scenario's iperf3 still runs. All traffic stays on this machine's loopback.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from rtgate.board.base import KernelArtifacts
from rtgate.board.collect import collect
from rtgate.board.drivers import open_board
from rtgate.board.qemu.driver import QemuBoard
from rtgate.board.spec import load_board
from rtgate.kernel.build import BuildResult

pytestmark = [pytest.mark.integration, pytest.mark.kernel, pytest.mark.timeout(1800)]

# The guest first connects to a listener of its own (the probe works), then to the host's.
PROBE = """\
command -v nc >/dev/null || {{ echo "RTGATE-PROBE nc=missing"; exit 1; }}
(nc -l -p 7001 >/dev/null 2>&1 &)
sleep 1
if echo probe | nc -w 5 127.0.0.1 7001; then r=reached; else r=unreachable; fi
echo "RTGATE-PROBE guest=$r"
if echo probe | nc -w 5 10.0.2.2 {port}; then r=reached; else r=unreachable; fi
echo "RTGATE-PROBE host=$r"
"""


@pytest.fixture
def host_listener() -> Iterator[tuple[int, list[str]]]:
    """A TCP listener on the host's loopback and the peers it accepted."""
    accepted: list[str] = []
    stop = threading.Event()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.settimeout(0.2)

        def serve() -> None:
            while not stop.is_set():
                try:
                    conn, peer = server.accept()
                except TimeoutError:
                    continue
                accepted.append(f"{peer[0]}:{peer[1]}")
                conn.close()

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        yield server.getsockname()[1], accepted
        stop.set()
        thread.join()


def _probe(board: QemuBoard, port: int) -> dict[str, str]:
    assert board.console is not None
    deadline = time.monotonic() + 120
    board.console.send_script(PROBE.format(port=port))
    found = {}
    while len(found) < 2:
        key, _, value = board.console.expect("RTGATE-PROBE", deadline).split()[1].partition("=")
        assert key != "nc", "the guest's busybox has no nc"
        found[key] = value
    board.console.expect("RTGATE-READY", deadline)
    return found


def test_the_guest_reaches_no_host_listener_and_iperf3_still_runs(
        kernel_build: Callable[[str, str], BuildResult], tmp_path: Path,
        host_listener: tuple[int, list[str]]) -> None:
    port, accepted = host_listener
    # The listener answers on the host: what the guest cannot reach is there.
    socket.create_connection(("127.0.0.1", port), timeout=5).close()
    deadline = time.monotonic() + 5
    while not accepted and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(accepted) == 1
    kernel = KernelArtifacts.from_dir(kernel_build("qemu-arm64", "rt").out)
    with open_board(load_board("qemu-arm64"), tmp_path / "board") as board:
        assert isinstance(board, QemuBoard)
        board.deploy(kernel)
        board.boot()
        netdev = board.argv()[board.argv().index("-netdev") + 1]
        assert netdev.split(",")[:3] == ["user", "id=n0", "restrict=on"]
        assert netdev.count("hostfwd=") == 1 and "guestfwd" not in netdev

        raw = board.run("net", 3, tmp_path / "out", flavor="rt", scale=0.5)
        measured = collect(raw)
        assert measured.result.status == "complete"
        loads = {ld.name: ld for ld in measured.result.loads}
        assert set(loads) == {"iperf3-server", "iperf3-client"}
        assert not any(ld.early_exit for ld in loads.values())
        assert "receiver" in (raw.out / "raw" / "iperf3-client.stdout").read_text()

        probes = _probe(board, port)
    assert probes == {"guest": "reached", "host": "unreachable"}
    assert accepted == accepted[:1]
