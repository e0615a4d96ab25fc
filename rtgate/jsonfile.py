"""``loads``: json.loads for files rtgate is handed, where hostile input is expected; ``read``:
such a file read whole, with the schema it claims; ``write_atomic``: how rtgate writes every
file (atomically, with the umask's mode; a device or FIFO written to, never replaced);
``write_output``: a file the user named.

Besides syntax errors (json.JSONDecodeError, which callers word themselves), Python's json fails
in two ways a crafted file can trigger: an integer too long to convert (ValueError) and nesting
deeper than the recursion limit (RecursionError). Both become one-line input errors (exit 2)
naming the file, never a crash reported as an infrastructure failure. It also accepts what is
no measurement: ``NaN`` and ``Infinity``, and a number too large for a float (``1e400``), which
it reads as infinity (a latency of "inf µs", judged as a regression): refused the same way.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
import sys
import tempfile
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from rtgate import inputfile
from rtgate.errors import InputError

M = TypeVar("M", bound=BaseModel)


def loads(data: str | bytes, path: Path) -> Any:
    def finite(text: str) -> float:
        value = float(text)
        if not math.isfinite(value):
            raise InputError(f"holds the number {text[:40]}, not a finite number",
                             path=path)
        return value

    try:
        return json.loads(data, parse_float=finite, parse_constant=finite)
    except json.JSONDecodeError:
        raise
    except ValueError as exc:
        raise InputError(f"holds an integer of more than {sys.get_int_max_str_digits()} digits, "
                         "not a measurement", path=path) from exc
    except RecursionError as exc:
        raise InputError("nested too deeply for a measurement", path=path) from exc


# JSON can spell a lone surrogate ("\ud800"): no character, and nothing written as UTF-8 (the
# console, JUnit, Markdown, the site) can hold one.
_LONE_SURROGATES = dict.fromkeys(range(0xD800, 0xE000), "\ufffd")
_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")


def _unicode(value: Any) -> Any:
    """``value`` with every lone surrogate in its strings (keys too) replaced by U+FFFD."""
    if isinstance(value, str):
        return value.translate(_LONE_SURROGATES)
    if isinstance(value, list):
        return [_unicode(v) for v in value]
    if isinstance(value, dict):
        return {_unicode(k): _unicode(v) for k, v in value.items()}
    return value


def read(path: Path, kind: inputfile.Kind = inputfile.DOCUMENT) -> tuple[Any, Any]:
    """The JSON document in ``path`` (lone surrogates replaced) and the schema it claims: its
    "schema" member, or its type's name when it is no object. Not a regular file within the
    cap of its ``kind``, unreadable or no JSON: a one-line InputError naming the file."""
    text = inputfile.read_text(path, kind)
    try:
        data = loads(text, path)
        # Text decoded from UTF-8 holds no surrogate: only a \u escape can spell one, and
        # walking a result's every number to look for it costs seconds on an hour's run.
        if _ESCAPED_SURROGATE.search(text):
            data = _unicode(data)
    except json.JSONDecodeError as exc:
        raise InputError(f"not a JSON document: {exc}", path=path) from exc
    return data, data.get("schema") if isinstance(data, dict) else type(data).__name__


def read_model(path: Path, model: type[M], schema_id: str | tuple[str, ...], what: str,
               kind: inputfile.Kind = inputfile.DOCUMENT) -> M:
    """The document in ``path`` as ``model``, when it claims ``schema_id`` (or one of them:
    the versions the model still reads); any problem is a one-line InputError naming the file
    (``what`` names the kind of document)."""
    data, got = read(path, kind)
    ids = (schema_id,) if isinstance(schema_id, str) else schema_id
    if got not in ids:
        raise InputError(f"not an rtgate {what} (schema {got!r}, expected "
                         f"{' or '.join(repr(i) for i in ids)})", path=path)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        at = f" at {where}" if where else ""
        raise InputError(f"invalid {what}{at}: {first['msg']}", path=path) from exc


def _umask() -> int:
    """The process's umask, read without changing it where Linux says it (4.7 and later)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_atomic(path: Path, text: str) -> Path:
    """Write a file the way a Unix tool does. A regular file (new, or one to replace) is written
    beside it and renamed over it, so a reader never sees half a file and a crash never loses
    the old one; a new file gets the umask's mode (0666 less the umask), an old one keeps its
    own. A character device or a FIFO (/dev/null, /dev/stdout, a pipe) is written to, never
    replaced; anything else that is not a regular file is refused (exit 2)."""
    data = text.encode("utf-8")
    try:
        st: os.stat_result | None = os.stat(path)
    except FileNotFoundError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        if not (stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
            raise InputError("not a regular file, a character device or a FIFO: refused",
                             path=path)
        # No O_CREAT: should the device be swapped for something else meanwhile, fail.
        fd = os.open(path, os.O_WRONLY)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = stat.S_IMODE(st.st_mode) if st is not None else 0o666 & ~_umask()
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_output(path: Path, text: str) -> Path:
    """An output the user named, written atomically: a failure is their input error (exit 2)."""
    try:
        return write_atomic(path, text)
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror}", path=path) from exc
