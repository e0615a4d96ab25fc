"""Reading back what the gate wrote (rtgate.gate.written), as the publisher and the A/B replay
both do: a link anywhere below the root is refused, and a result claiming another place is."""

from __future__ import annotations

from pathlib import Path

from rtgate.gate.written import linked, misplaced
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
