"""The network peer: scenario loads that run on the controller, not on the board under test.

Scenarios are written for one machine: iperf3's server and client both on ``127.0.0.1`` and a
``{port}`` chosen per run. On a remote board the paper's setup applies instead: the board runs the
server, the controller runs the client against the board's address. ``split`` rewrites one
scenario into the board's part and the peer's part; which loads are the peer's, and the
addresses, are board data (``options.peer`` in ``bench/boards/*.yml``).
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

from rtgate.board.loadreport import LoadRecord
from rtgate.board.rawrun import PeerLoad
from rtgate.board.spec import LOOPBACK, PeerOptions
from rtgate.harness import loads
from rtgate.harness.plan import Params, PlannedLoad, render
from rtgate.harness.scenario import LoadSpec, Scenario


def controller_cpus() -> int:
    """CPUs rtgate may use on the controller (its affinity, not the machine's count)."""
    return len(os.sched_getaffinity(0))


def _rewrite(load: LoadSpec, address: str, port: int) -> LoadSpec:
    def one(arg: str) -> str:
        return address if arg == LOOPBACK else arg.replace("{port}", str(port))

    listens = None if load.listens_on is None else one(load.listens_on)
    return load.model_copy(update={"argv": [one(a) for a in load.argv], "listens_on": listens})


def split(scenario: Scenario, peer: PeerOptions, peer_port: int) -> tuple[Scenario, Scenario]:
    """(what the board runs, what the controller runs); ``peer_port`` is the port the
    controller connects to (the board's own port, or QEMU's forwarded one)."""
    board = [_rewrite(ld, peer.board_listen, peer.board_port)
             for ld in scenario.loads if ld.name not in peer.loads]
    remote = [_rewrite(ld, peer.board_address, peer_port)
              for ld in scenario.loads if ld.name in peer.loads]
    return (scenario.model_copy(update={"loads": board}),
            scenario.model_copy(update={"loads": remote}))


class PeerLoads:
    """The controller's loads of one run: started once the board's servers listen."""

    def __init__(self, scenario: Scenario, params: Params, rawdir: Path, scratch: Path) -> None:
        self.planned = [PlannedLoad(ld.name, [render(a, params) for a in ld.argv], None)
                        for ld in scenario.loads]
        self.rawdir, self.scratch = rawdir, scratch
        self.running: list[loads.RunningLoad] = []
        self.died_at: dict[str, datetime] = {}

    def start(self) -> None:
        for spec in self.planned:
            self.running.append(loads.start(spec, self.rawdir, self.scratch))

    def watch(self) -> None:
        """Note the time of any load found dead since the last look."""
        for load in self.running:
            if load.check():
                self.died_at[load.spec.name] = datetime.now(UTC)

    def stop(self) -> None:
        """Note which died, then stop the rest (in reverse order, as the runner does)."""
        self.watch()
        for load in reversed(self.running):
            loads.stop(load)

    def ended(self) -> list[PeerLoad]:
        """Each load as it ended (after stop())."""
        return [PeerLoad(name=ld.spec.name, command=ld.spec.argv, early_exit=ld.early_exit,
                         early_after_s=ld.early_after_s, died_at=self.died_at.get(ld.spec.name))
                for ld in self.running]


def peer_records(loads: list[PeerLoad], measured_until: datetime | None) -> list[LoadRecord]:
    """The peer's loads for the result. One that died after the measurement ended is no early
    exit: the board stops its servers then, and a client dies with its server."""
    records = []
    for ld in loads:
        early = ld.early_exit is not None and (
            measured_until is None or ld.died_at is None or ld.died_at < measured_until)
        records.append(LoadRecord(ld.name, ld.command, ld.early_exit if early else None,
                                  ld.early_after_s if early else None, "peer"))
    return records
