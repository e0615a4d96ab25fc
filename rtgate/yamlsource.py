"""YAML documents that remember where each value came from, so errors can name the line.

pydantic reports *where* in the data a value is wrong (``("budgets", 3, "max_us")``); a
maintainer editing ``thresholds.yml`` needs the *line*. We compose the YAML node tree (which keeps
start marks), construct the plain data from it, and walk the tree along pydantic's location.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from rtgate.errors import InputError


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys: YAML silently keeps the last, hiding a typo."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, yaml.Node] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                line = seen[key].start_mark.line + 1
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r} (first at line {line})",
                    key_node.start_mark)
            seen[key] = key_node
        return super().construct_mapping(node, deep=deep)


@dataclass(frozen=True)
class YamlDocument:
    path: Path
    data: Any
    root: yaml.Node | None

    def line_of(self, loc: Sequence[str | int]) -> int:
        """1-based line of the deepest node on ``loc`` that exists (a missing key → its mapping).

        For a key that is present, the key's own line is used: that is where a typo is.
        """
        node = self.root
        line = 1 if node is None else node.start_mark.line + 1
        for part in loc:
            if isinstance(node, yaml.MappingNode):
                match = next((kv for kv in node.value
                              if isinstance(kv[0], yaml.ScalarNode) and kv[0].value == str(part)),
                             None)
                if match is None:
                    break
                line = match[0].start_mark.line + 1
                node = match[1]
            elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) \
                    and 0 <= part < len(node.value):
                node = node.value[part]
                line = node.start_mark.line + 1
            else:
                break
        return line

    def error(self, message: str, loc: Sequence[str | int] = ()) -> InputError:
        # FILE:LINE, the form editors and CI annotations turn into a link.
        return InputError(message, path=f"{self.path}:{self.line_of(loc)}")

    def validation_error(self, exc: ValidationError) -> InputError:
        """The first pydantic error as ``line N: a.b.c: message``."""
        first = exc.errors()[0]
        loc = [p for p in first["loc"] if isinstance(p, str | int)]
        where = ".".join(str(p) for p in loc)
        msg = first["msg"]
        if first["type"] == "extra_forbidden":
            msg = "unknown key (typo?)"
        elif "input" in first and first["type"] != "missing":
            msg = f"{msg} (got {first['input']!r})"
        return self.error(f"{where}: {msg}" if where else msg, loc)


def load_yaml(path: str | Path) -> YamlDocument:
    """Read one YAML document; unreadable or invalid YAML is a one-line InputError with the line."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=p) from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text: {exc.reason} at byte {exc.start}", path=p) from exc
    loader = _StrictLoader(text)
    try:
        root = loader.get_single_node()
        data = None if root is None else loader.construct_document(root)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{p}:{mark.line + 1}" if mark is not None else p
        problem = getattr(exc, "problem", None) or str(exc)
        raise InputError(f"not valid YAML: {problem}", path=where) from exc
    finally:
        loader.dispose()
    return YamlDocument(path=p, data=data, root=root)


N = TypeVar("N", bound=BaseModel)


def load_named(path: Path, model: type[N], what: str) -> N:
    """A document with a ``name:`` that must equal its file's stem (a board, a scenario): the
    name is how maintainers refer to it, the file is where rtgate finds it."""
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in path.parent.glob("*.yml"))) or "none"
        raise InputError(f"no such {what} {path.stem!r} (known: {known})", path=path)
    doc = load_yaml(path)
    try:
        obj = model.model_validate(doc.data)
    except ValidationError as exc:
        raise doc.validation_error(exc) from exc
    name = getattr(obj, "name", None)
    if name != path.stem:
        raise doc.error(f"name {name!r} does not match the file name", ["name"])
    return obj
