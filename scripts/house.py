#!/usr/bin/env python3
"""The structure of the rtgate package in figures, read from its own imports (ast, nothing run).

    python scripts/house.py [ROOT]

prints modules and lines, import arrows between rtgate modules, import circles (of modules, and
of rooms: subpackages and top-level modules), the floors the rooms stand on and the arrows that
run back up them, imports placed inside functions, imports of another module's private name, and
class names defined twice. tests/unit/test_house.py holds the package to zero circles of modules
and of rooms, zero arrows running back up, every room on a floor, no private imports and no
duplicate class names.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Import:
    source: str  # the importing module
    target: str  # the rtgate module imported
    line: int
    nested: bool  # inside a function
    private: str | None  # a private name taken from the target


@dataclass
class House:
    modules: dict[str, Path] = field(default_factory=dict)
    lines: int = 0
    imports: list[Import] = field(default_factory=list)
    classes: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))

    def arrows(self) -> set[tuple[str, str]]:
        return {(i.source, i.target) for i in self.imports if i.source != i.target}

    def room_arrows(self) -> set[tuple[str, str]]:
        """The arrows between rooms: rtgate's subpackages and top-level modules."""
        return {(a, b) for a, b in ((_room(a), _room(b)) for a, b in self.arrows()) if a != b}

    def unplaced(self) -> list[str]:
        """Rooms on no floor of FLOORS."""
        return sorted({r for r in map(_room, self.modules) if floor(r) is None})

    def back_up(self) -> list[tuple[str, str]]:
        """Arrows from a room to a room on a higher floor."""
        return sorted((a, b) for a, b in self.room_arrows()
                      if (fa := floor(a)) is not None and (fb := floor(b)) is not None
                      and fa < fb)

    def circles(self, rooms: bool = False) -> list[list[str]]:
        """Strongly connected components of more than one module, or room (Tarjan)."""
        graph: dict[str, set[str]] = defaultdict(set)
        for a, b in self.room_arrows() if rooms else self.arrows():
            graph[a].add(b)
        index: dict[str, int] = {}
        low: dict[str, int] = {}
        stack: list[str] = []
        on: set[str] = set()
        found: list[list[str]] = []

        def visit(v: str) -> None:
            index[v] = low[v] = len(index)
            stack.append(v)
            on.add(v)
            for w in sorted(graph[v]):
                if w not in index:
                    visit(w)
                    low[v] = min(low[v], low[w])
                elif w in on:
                    low[v] = min(low[v], index[w])
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    component.append(w)
                    if w == v:
                        break
                if len(component) > 1:
                    found.append(sorted(component))

        sys.setrecursionlimit(10_000)
        for v in sorted({_room(m) for m in self.modules} if rooms else self.modules):
            if v not in index:
                visit(v)
        return sorted(found)


FLOORS: tuple[tuple[str, ...], ...] = (
    ("cli", "__main__"),
    ("publish", "kcidb", "pipeline", "report", "ab", "bisect", "breach", "documents",
     "lab"),
    ("gate",),
    ("board",),
    ("trace",),
    ("kernel",),
    ("harness",),
    ("parsefiles", "tools", "cyclictest", "timerlat"),
    ("stats",),
    ("result", "calibration"),
    ("", "errors", "paths", "inputfile", "jsonfile", "layout", "outcome", "textfmt", "ciout",
     "yamlsource", "filelock", "schemafile", "pastedtext"),
)
"""The rooms (rtgate's subpackages and top-level modules; "" is the package itself) from the top
floor down, as docs/code.md draws them: a room imports rooms on its own floor or below, never one
above. A new room is placed here."""


def floor(room: str) -> int | None:
    """The floor ``room`` stands on (1: the ground), None when it is on none."""
    name = room.removeprefix("rtgate").removeprefix(".")
    for i, rooms in enumerate(FLOORS):
        if name in rooms:
            return len(FLOORS) - i
    return None


def _room(module: str) -> str:
    return ".".join(module.split(".")[:2])


def _module(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def read(root: Path) -> House:
    house = House()
    package = root / "rtgate"
    for path in sorted(package.rglob("*.py")):
        house.modules[_module(root, path)] = path
    for name, path in house.modules.items():
        text = path.read_text(encoding="utf-8")
        house.lines += text.count("\n")
        tree = ast.parse(text, filename=str(path))
        is_package = path.name == "__init__.py"
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                house.classes[node.name].append(name)
        _imports(house, name, is_package, tree, nested=False)
    return house


def _resolve(house: House, name: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = name.split(".") if is_package else name.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(house: House, name: str, is_package: bool, node: ast.AST, *, nested: bool) -> None:
    for child in ast.iter_child_nodes(node):
        inner = nested or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
        if isinstance(child, ast.Import):
            for alias in child.names:
                if alias.name.split(".")[0] == "rtgate" and alias.name in house.modules:
                    house.imports.append(Import(name, alias.name, child.lineno, nested, None))
        elif isinstance(child, ast.ImportFrom):
            target = _resolve(house, name, is_package, child)
            if target.split(".")[0] != "rtgate":
                continue
            for alias in child.names:
                sub = f"{target}.{alias.name}"
                if sub in house.modules:
                    house.imports.append(Import(name, sub, child.lineno, nested, None))
                elif target in house.modules:
                    private = (alias.name if alias.name.startswith("_")
                               and not alias.name.endswith("__") else None)
                    house.imports.append(Import(name, target, child.lineno, nested, private))
        _imports(house, name, is_package, child, nested=inner)


def main() -> None:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1]
    house = read(root)
    nested = [i for i in house.imports if i.nested]
    private = [i for i in house.imports if i.private]
    twice = {c: m for c, m in house.classes.items() if len(m) > 1}
    circles = house.circles()
    print(f"modules: {len(house.modules)}, lines: {house.lines}")
    print(f"import arrows between rtgate modules: {len(house.arrows())}")
    print(f"import circles: {len(circles)}")
    for c in circles:
        print(f"  {' ↔ '.join(c)}")
    rooms = {_room(m) for m in house.modules}
    print(f"rooms (subpackages and top-level modules): {len(rooms)}, "
          f"arrows between them: {len(house.room_arrows())}")
    tangled = house.circles(rooms=True)
    print(f"rooms that import each other in a circle: {sum(map(len, tangled))}")
    for c in tangled:
        print(f"  {' ↔ '.join(c)}")
    print(f"floors: {len(FLOORS)}; rooms on none: {len(house.unplaced())}")
    for r in house.unplaced():
        print(f"  {r} (place it in FLOORS, scripts/house.py)")
    print(f"arrows that run back up a floor: {len(house.back_up())}")
    for a, b in house.back_up():
        print(f"  {a} (floor {floor(a)}) -> {b} (floor {floor(b)})")
    print(f"rtgate imports inside functions: {len(nested)}")
    for i in nested:
        print(f"  {i.source}:{i.line} -> {i.target}")
    print(f"imports of another module's private name: {len(private)}")
    for i in private:
        print(f"  {i.source}:{i.line} -> {i.target}.{i.private}")
    print(f"class names defined in more than one module: {len(twice)}")
    for c, mods in sorted(twice.items()):
        print(f"  {c}: {', '.join(mods)}")


if __name__ == "__main__":
    main()
