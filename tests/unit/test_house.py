"""The package's structure holds: no import circles between modules or rooms, every room on a
floor and no import running back up one, no private names taken from another module, one meaning
per class name, and every import placed inside a function says why."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("house", ROOT / "scripts" / "house.py")
assert _spec and _spec.loader
house_script = importlib.util.module_from_spec(_spec)
sys.modules["house"] = house_script
_spec.loader.exec_module(house_script)
HOUSE = house_script.read(ROOT)


def test_no_import_circles_counting_imports_inside_functions() -> None:
    assert HOUSE.circles() == []


def test_no_circles_between_rooms() -> None:
    assert HOUSE.circles(rooms=True) == []


def test_every_room_stands_on_a_floor() -> None:
    assert HOUSE.unplaced() == [], "place each in FLOORS, scripts/house.py (docs/code.md)"


def test_no_import_runs_back_up_a_floor() -> None:
    assert HOUSE.back_up() == []


def test_the_floor_checks_can_fail(tmp_path: Path) -> None:
    """A harness module that imports the board (the circle before the harness moved) is caught
    twice: a room circle, and an arrow running back up; an unplaced room is named."""
    for name, text in {"__init__.py": "", "board/__init__.py": "",
                       "board/spec.py": "from rtgate.harness import plan\n",
                       "harness/__init__.py": "",
                       "harness/plan.py": "from rtgate.board import spec\n",
                       "attic/__init__.py": ""}.items():
        path = tmp_path / "rtgate" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    built = house_script.read(tmp_path)
    assert built.circles(rooms=True) == [["rtgate.board", "rtgate.harness"]]
    assert built.back_up() == [("rtgate.harness", "rtgate.board")]
    assert built.unplaced() == ["rtgate.attic"]


def test_no_module_takes_another_modules_private_name() -> None:
    assert [f"{i.source}:{i.line} -> {i.target}.{i.private}"
            for i in HOUSE.imports if i.private] == []


def test_public_class_names_are_unique() -> None:
    # Module-private classes (_Model, _Reader) are never imported, so they cannot be confused.
    twice = {name: modules for name, modules in HOUSE.classes.items()
             if len(modules) > 1 and not name.startswith("_")}
    assert twice == {}


def test_every_import_inside_a_function_says_why() -> None:
    """Such an import is for a heavy, rarely needed module (a comment says so), never a way
    around a circle (the circle test counts it)."""
    silent = []
    for i in HOUSE.imports:
        if not i.nested:
            continue
        lines = HOUSE.modules[i.source].read_text(encoding="utf-8").splitlines()
        said = "#" in lines[i.line - 1] or lines[i.line - 2].strip().startswith("#")
        if not said:
            silent.append(f"{i.source}:{i.line} -> {i.target}")
    assert silent == []
