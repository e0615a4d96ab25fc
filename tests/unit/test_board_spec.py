"""Boards as data: the shipped board files, `rtgate board list`, one-line errors for bad ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clirun import RunCli

from rtgate import paths
from rtgate.board.spec import (
    LocalOptions,
    QemuOptions,
    SshOptions,
    board_kind,
    kind_of,
    list_boards,
)
from rtgate.errors import InputError
from rtgate.gate.thresholds import Thresholds


def test_shipped_boards_and_their_driver_options() -> None:
    boards = {b.name: b for b in list_boards()}
    assert set(boards) >= {"local", "qemu-arm64", "rpi5"}
    assert isinstance(boards["local"].options, LocalOptions)
    qemu, pi = boards["qemu-arm64"], boards["rpi5"]
    assert isinstance(qemu.options, QemuOptions) and qemu.virtual is True
    assert qemu.options.smp <= 2 and qemu.options.cpu == "cortex-a76"
    assert isinstance(pi.options, SshOptions) and pi.virtual is False
    assert pi.options.kernel_image == "kernel_2712.img"
    assert pi.options.reboot_tryboot == "reboot '0 tryboot'"
    # Nothing pinned for a lab we have not seen: the driver says so on every run.
    assert pi.options.tools == {}
    assert qemu.kernel_target == "qemu-arm64" and pi.kernel_target == "rpi5"


def test_board_list_prints_name_driver_virtual_description(rtgate_cli: RunCli) -> None:
    proc = rtgate_cli("board", "list", "--plain")
    assert proc.returncode == 0, proc.stderr
    rows = {line.split("\t")[0]: line.split("\t") for line in proc.stdout.splitlines()}
    assert rows["local"][1:3] == ["local", "auto"]
    assert rows["qemu-arm64"][1:3] == ["qemu", "yes"]
    assert rows["rpi5"][1:3] == ["ssh", "no"]
    assert "tryboot" in rows["rpi5"][3]
    table = rtgate_cli("board", "list")
    assert table.returncode == 0 and "qemu-arm64" in table.stdout


def test_board_list_json_is_what_the_gate_workflow_routes_by(rtgate_cli: RunCli) -> None:
    """Every board file as load_board reads it: the workflow's jq never parses YAML."""
    proc = rtgate_cli("board", "list", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == [
        {"name": b.name, "kind": kind_of(b), "driver": b.driver,
         "kernel_target": b.kernel_target} for b in list_boards()]
    assert {"name": "lava-qemu", "kind": "lava-qemu", "driver": "lava",
            "kernel_target": "qemu-arm64"} in json.loads(proc.stdout)


@pytest.mark.parametrize(("body", "message"), [
    ("name: lab\ndescription: d\ndriver: qemu\nvirtual: true\noptions:\n  smp: 2\n  spm: 4\n",
     "lab.yml:7: options.spm: unknown key"),
    ("name: lab\ndescription: d\ndriver: ssh\nvirtual: false\noptions:\n  port: 22\n",
     "lab.yml:5: options.host: Field required"),
    ("name: lab\ndescription: d\ndriver: ssh\nvirtual: false\noptions:\n  host: pi\n"
     "  slot: ../..\n", "lab.yml:7: options.slot: String should match pattern"),
    ("name: lab\ndescription: d\ndriver: ssh\nvirtual: false\noptions:\n  host: pi\n"
     "  tools:\n    cyclictest: 8b5bf41f\n",
     "lab.yml:8: options.tools.cyclictest: String should match pattern '^[0-9a-f]{64}$'"),
    ("name: lab\ndescription: d\ndriver: ssh\nvirtual: false\noptions:\n  host: pi\n"
     "  tools:\n    ../cyclictest: " + "0" * 64 + "\n",
     "lab.yml:8: options.tools.../cyclictest.[key]: String should match pattern"),
    ("name: lab\ndescription: d\ndriver: serial\nvirtual: false\n",
     "lab.yml:3: driver: Input should be 'local', 'qemu', 'ssh' or 'lava'"),
    ("name: other\ndescription: d\ndriver: local\nvirtual: auto\n",
     "lab.yml:1: name 'other' does not match the file name"),

    ("name: lab\ndescription: d\ndriver: qemu\nvirtual: true\nkernel_board: qemu-arm64\n",
     "kernel_board is now kernel_target"),
])
def test_bad_board_file_is_a_one_line_input_error(rtgate_cli: RunCli, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch, body: str,
                                                  message: str) -> None:
    (tmp_path / "boards").mkdir()
    (tmp_path / "boards" / "lab.yml").write_text(body)
    # Board files are read from the data root's bench/boards when listed (rtgate.paths).
    monkeypatch.setattr(paths, "BOARDS", tmp_path / "boards")
    proc = rtgate_cli("board", "list")
    assert proc.returncode == 2
    assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_unknown_board_names_the_known_ones(rtgate_cli: RunCli) -> None:
    proc = rtgate_cli("board", "run", "--board", "nope", "--scenario", "idle", "--duration", "1",
                   "--out", "/nonexistent")
    assert proc.returncode == 2
    assert "no such board 'nope'" in proc.stderr and "qemu-arm64" in proc.stderr


def test_a_board_names_its_kind_and_is_judged_as_it(tmp_path: Path) -> None:
    """rpi5-b (kind: rpi5): its budgets are rpi5's; a board without `kind:` is its own kind,
    and a name with no board file (another lab's result) stays itself."""
    shipped = (paths.BOARDS / "rpi5.yml").read_text()
    (tmp_path / "rpi5.yml").write_text(shipped)
    (tmp_path / "rpi5-b.yml").write_text(
        shipped.replace("name: rpi5\n", "name: rpi5-b\nkind: rpi5\n"))
    assert board_kind("rpi5-b", tmp_path) == "rpi5"
    assert board_kind("rpi5", tmp_path) == "rpi5"
    assert board_kind("elsewhere", tmp_path) == "elsewhere"
    budgets = Thresholds.model_validate({"schema": "rtgate/thresholds/v2", "budgets": [
        {"board": "rpi5", "flavor": "rt", "scenario": "all-in", "max_us": 100, "avg_us": 10,
         "reason": "the kind's"}]})
    assert budgets.select(board_kind("rpi5-b", tmp_path), "rt", "all-in") is not None
    (tmp_path / "bad.yml").write_text(shipped.replace("name: rpi5\n", "name: bad\nkind: ../x\n"))
    with pytest.raises(InputError, match="kind"):
        board_kind("bad", tmp_path)
