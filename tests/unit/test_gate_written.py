"""Reading back what the gate wrote (rtgate.gate.written), as the publisher and the A/B replay
both do: a link anywhere below the root is refused, and a result claiming another place is."""

from __future__ import annotations

from pathlib import Path

from rtgate.gate import infrarecord
from rtgate.gate.verdict import Crash, Infra
from rtgate.gate.written import LINKED, linked, misplaced, read_back, results
from rtgate.result import load_result

RT = Path(__file__).parents[1] / "data" / "results" / "paper-rpi5-rt-all-in.result.json"


def test_a_link_anywhere_below_the_root_is_seen(tmp_path: Path) -> None:
    root = tmp_path / "gate-rpi5"
    home = root / "A" / "round-1" / "rt" / "all-in"
    home.mkdir(parents=True)
    path = home / "result.json"
    path.write_text("{}")
    assert not linked(root, path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (root / "A" / "round-1" / "rt").rename(elsewhere / "rt")
    (root / "A" / "round-1" / "rt").symlink_to(elsewhere / "rt")
    assert linked(root, path)
    # The root itself is the caller's: a link there is not this check's.
    assert not linked(root / "A" / "round-1" / "rt", path)


def test_a_result_is_taken_only_where_it_claims_to_be() -> None:
    result = load_result(RT)
    board, flavor, scenario = result.board.name, "rt", result.scenario
    assert misplaced(result, board, flavor, scenario) is None
    assert misplaced(result, board, None, scenario) is None  # the running kernel: any flavor
    assert misplaced(result, board, "stock", scenario) == (
        f"the result claims {board}/rt/{scenario}, where the gate writes "
        f"{board}/stock/{scenario}: refused")
    assert misplaced(result, "rpi5-b", None, scenario) == (
        f"the result claims {board}/rt/{scenario}, where the gate writes "
        f"rpi5-b/running/{scenario}: refused")


def _place(root: Path, flavor: str = "rt") -> Path:
    result = load_result(RT)
    home = root / flavor / result.scenario
    home.mkdir(parents=True)
    (home / "result.json").write_bytes(RT.read_bytes())
    return home


def test_read_back_takes_a_result_where_it_claims_to_be(tmp_path: Path) -> None:
    result = load_result(RT)
    home = _place(tmp_path)
    read = read_back(tmp_path, home, result.board.name, "rt", result.scenario)
    assert read.result == result and read.refused is None and read.path == home / "result.json"
    # The same file read as another board's run is refused, in the words the publisher rules.
    other = read_back(tmp_path, home, "rpi5-b", "rt", result.scenario)
    assert other.result is None and other.refused is not None
    assert other.said == (f"{home / 'result.json'}: the result claims {result.board.name}/rt/"
                          f"{result.scenario}, where the gate writes rpi5-b/rt/"
                          f"{result.scenario}: refused")
    assert other.refused.oneline() == other.said


def test_read_back_refuses_a_link_and_a_file_that_does_not_load(tmp_path: Path) -> None:
    result = load_result(RT)
    home = _place(tmp_path / "real")
    (tmp_path / "gate").mkdir()
    (tmp_path / "gate" / "rt").symlink_to(home.parent)
    read = read_back(tmp_path / "gate", tmp_path / "gate" / "rt" / result.scenario,
                     result.board.name, "rt", result.scenario)
    assert read.result is None and read.said.endswith(f": {LINKED}")
    (home / "result.json").write_text("{", encoding="utf-8")
    broken = read_back(tmp_path / "real", home, result.board.name, "rt", result.scenario)
    assert broken.result is None and broken.refused is not None
    assert broken.said == broken.refused.oneline()


def test_read_back_of_a_missing_result_reads_the_record_beside_it(tmp_path: Path) -> None:
    home = tmp_path / "rt" / "idle"
    home.mkdir(parents=True)
    read = read_back(tmp_path, home, "local", "rt", "idle")
    assert (read.result, read.refused, read.failed, read.record_error) == (None, None, None, None)
    infrarecord.save(Infra("local", "rt", "idle", home / "console.log", "no boot"), home)
    assert read_back(tmp_path, home, "local", "rt", "idle").failed == Infra(
        "local", "rt", "idle", home / "console.log", "no boot")
    # A crash its evidence does not show is not believed: an infrastructure failure.
    infrarecord.save(Crash("local", "rt", "idle", home / "console.log", "panic",
                           said="Kernel panic - not syncing", evidence=home / "console.log"),
                     home)
    (home / "console.log").write_text("booted fine\n", encoding="utf-8")
    failed = read_back(tmp_path, home, "local", "rt", "idle").failed
    assert isinstance(failed, Infra) and not isinstance(failed, Crash)
    (home / "infra.json").write_text("[", encoding="utf-8")
    assert read_back(tmp_path, home, "local", "rt", "idle").record_error is not None


def test_results_lists_the_layouts_files_and_never_through_a_link(tmp_path: Path) -> None:
    root = tmp_path / "gate-local"
    run = _place(root)
    ab_round = _place(root / "B" / "round-1")
    elsewhere = _place(tmp_path / "elsewhere", "stock")
    (root / "stock").symlink_to(elsewhere.parent)
    assert list(results(root)) == [run / "result.json", ab_round / "result.json"]
