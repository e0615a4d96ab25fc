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

from rtgate import inputfile
from rtgate.errors import InputError


class _Refused(yaml.MarkedYAMLError):
    """Valid YAML that rtgate will not read: a construct hostile input uses, not config needs."""


# thresholds.yml nests four levels; anything far deeper is an attack on the composer's recursion.
MAX_DEPTH = 64


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader for files a pull request can edit: plain trees of scalars only.

    Anchors and aliases are refused as the parser reports them, before any node exists: a few
    hundred bytes of nested aliases (a "billion laughs") expand to gigabytes further on. Keys must
    be scalars, and duplicate keys are refused: YAML silently keeps the last, hiding a typo.
    """

    _depth = 0

    def compose_node(self, parent: yaml.Node | None, index: object) -> yaml.Node:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or event.anchor is not None:
            raise _Refused(None, None, f"anchors and aliases (&{event.anchor}, *{event.anchor}) "
                           "are not allowed: write the value out", event.start_mark)
        if self._depth >= MAX_DEPTH:
            raise _Refused(None, None, f"nested more than {MAX_DEPTH} levels deep",
                           event.start_mark)
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, TypeError, AttributeError) as exc:
            # PyYAML's scalar constructors raise these on values they match but cannot convert
            # (a 5000-digit int, month 13, "!!float nope"); the innermost node names the line.
            kind = node.tag.rsplit(":", 1)[-1]
            raise _Refused(None, None, f"cannot read {_excerpt(node)} as {kind}",
                           node.start_mark) from exc

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, yaml.Node] = {}
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                kind = "sequence" if isinstance(key_node, yaml.SequenceNode) else "mapping"
                raise _Refused(None, None, f"a {kind} used as a mapping key",
                               key_node.start_mark)
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                line = seen[key].start_mark.line + 1
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r} (first at line {line})",
                    key_node.start_mark)
            seen[key] = key_node
        return super().construct_mapping(node, deep=deep)


def _excerpt(node: yaml.Node) -> str:
    text = str(node.value) if isinstance(node, yaml.ScalarNode) else f"this {node.id}"
    return repr(text) if len(text) <= 40 else f"{text[:20]!r}... ({len(text)} characters)"


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


def load_yaml(path: str | Path, kind: inputfile.Kind = inputfile.YAML) -> YamlDocument:
    """Read one YAML document; a file that is not a regular one within its ``kind``'s cap,
    unreadable or invalid YAML is a one-line InputError with the line."""
    p = Path(path)
    text = inputfile.read_text(p, kind)
    try:
        # The loader checks every character as it is made: a NUL is a ReaderError here.
        loader = _StrictLoader(text)
        try:
            root = loader.get_single_node()
            data = None if root is None else loader.construct_document(root)
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{p}:{mark.line + 1}" if mark is not None else p
        problem = getattr(exc, "problem", None) or " ".join(str(exc).split())
        what = "refused" if isinstance(exc, _Refused) else "not valid YAML"
        raise InputError(f"{what}: {problem}", path=where) from exc
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
