"""Reading back what the gate wrote (a run's or an A/B round's result.json, laid out as
rtgate.layout says), safely, for the publisher and the A/B replay alike: a symbolic link on the
way is refused (an artifact's links point wherever its job chose), and a result is taken only
for the board, flavor and scenario it claims to be where the gate writes them."""

from __future__ import annotations

from pathlib import Path

from rtgate.gate.thresholds import flavor_of
from rtgate.layout import RUNNING
from rtgate.result import Result

LINKED = "a symbolic link where the gate writes a directory or a result: refused"


def linked(root: Path, path: Path) -> bool:
    """Whether ``path`` or a directory between ``root`` (which is the caller's) and it is a
    symbolic link."""
    chain = [path, *path.relative_to(root).parents]
    return any((root / p).is_symlink() for p in chain if p != Path("."))


def misplaced(result: Result, board: str, flavor: str | None, scenario: str) -> str | None:
    """Why ``result`` is not the one the gate wrote for ``board``/``flavor``/``scenario`` (a
    flavor of None: the board's running kernel, whichever flavor it has), None when it is."""
    claimed = (result.board.name, flavor_of(result), result.scenario)
    if claimed[0] != board or claimed[2] != scenario or (flavor and claimed[1] != flavor):
        return (f"the result claims {'/'.join(claimed)}, where the gate writes "
                f"{board}/{flavor or RUNNING}/{scenario}: refused")
    return None
