"""Files rtgate is handed, opened so that a hostile one fails at once with a one-line input error
(exit 2) naming it: only a regular file is read, and no more of it than a file of its kind holds.

A FIFO, a device or a directory is refused before it is opened (``/dev/watchdog`` arms on open,
a FIFO's open blocks until a writer comes); the open itself is non-blocking and the descriptor
is checked again (``fstat``), so a file swapped for a FIFO in between is refused too, never
waited on. A capped read stops one byte past the cap, so a file that grows while read, or one
that claims no size (``/proc``), is still bounded. A streamed input (a cyclictest ``-v`` log of
gigabytes is legitimate) is only checked to be a regular file: its reader holds one block at a
time.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from rtgate.errors import InputError

MiB = 1 << 20


@dataclass(frozen=True)
class Kind:
    """What a file is (with its article, for messages), and how many bytes one may hold (None:
    streamed)."""

    what: str
    cap: int | None


# Each cap is far above any genuine file of the kind and far below what would exhaust memory:
# a thresholds file is hand-written (tens of lines); a result holds sparse histograms and
# block maxima (a day on 128 CPUs at one block a second is some 80 MB of text).
YAML = Kind("a YAML configuration file", 1 * MiB)
THRESHOLDS = Kind("a thresholds file", 1 * MiB)
SERIES = Kind("a patch series", 1 * MiB)
DOCUMENT = Kind("a JSON document", 16 * MiB)
RESULT = Kind("a result", 128 * MiB)
RTLA = Kind("an rtla output", 256 * MiB)
KCONFIG = Kind("a kernel .config", 16 * MiB)
HISTORY = Kind("a history index", 256 * MiB)
RAW = Kind("a measurement output", None)

_NOT_REGULAR = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
                (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                (stat.S_ISSOCK, "a socket"))


def _refuse_irregular(mode: int, path: Path, kind: Kind) -> None:
    if stat.S_ISREG(mode):
        return
    name = next((n for test, n in _NOT_REGULAR if test(mode)), "not a regular file")
    raise InputError(f"{name}, not a regular file: refused as {kind.what}", path=path)


def _refuse_large(size: int, path: Path, kind: Kind) -> None:
    if kind.cap is not None and size > kind.cap:
        raise InputError(f"more than {_size(kind.cap)}, larger than {kind.what} may be: "
                         "refused", path=path)


def _size(n: int) -> str:
    return f"{n // MiB} MiB" if n % MiB == 0 else f"{n} bytes"


def open_regular(path: Path, kind: Kind) -> BinaryIO:
    """``path`` opened for reading in binary, once it is known to be a regular file within its
    kind's cap; anything else is an InputError naming the file."""
    try:
        _refuse_irregular(os.stat(path).st_mode, path, kind)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=path) from exc
    try:
        st = os.fstat(fd)
        _refuse_irregular(st.st_mode, path, kind)
        _refuse_large(st.st_size, path, kind)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def check_regular(path: Path, kind: Kind = RAW) -> int:
    """The size of ``path`` once it is known to be a regular file within its kind's cap: for a
    reader that opens the file itself and streams it."""
    with open_regular(path, kind) as fh:
        return os.fstat(fh.fileno()).st_size


def read_bytes(path: Path, kind: Kind) -> bytes:
    """The whole of a regular file within its kind's cap."""
    with open_regular(path, kind) as fh:
        try:
            data = fh.read() if kind.cap is None else fh.read(kind.cap + 1)
        except OSError as exc:
            raise InputError(f"cannot read: {exc.strerror}", path=path) from exc
    _refuse_large(len(data), path, kind)
    return data


def read_text(path: Path, kind: Kind) -> str:
    """A regular file within its kind's cap, as UTF-8 text (anything else is refused)."""
    data = read_bytes(path, kind)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text: {exc.reason} at byte {exc.start}", path=path) from exc
