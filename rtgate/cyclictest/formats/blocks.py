"""Reading a file as large blocks of whole lines, hashing it on the way.

Both text readers go through here: logs of ~10^8 lines are decoded a block at a time (never the
whole file in memory) and hashed in the same single pass.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO, Protocol

from rtgate.errors import InputError

BLOCK_BYTES = 8 << 20
MAX_LINE_BYTES = 1 << 20  # far beyond any cyclictest line: a file without newlines is no output


Progress = Callable[[int], None]
"""Told the number of bytes read after each block (a progress bar; silent by default)."""


def no_progress(_: int) -> None:
    pass


class Hash(Protocol):
    def update(self, data: bytes, /) -> None: ...


def line_blocks(fh: BinaryIO, path: Path, sha: Hash, size: int,
                progress: Progress = no_progress) -> Iterator[bytes]:
    """Yield blocks that end at a newline; only the last one may lack it (a cut file)."""
    rest = b""
    while chunk := fh.read(size):
        sha.update(chunk)
        progress(len(chunk))
        data = rest + chunk
        cut = data.rfind(b"\n") + 1
        rest = data[cut:]
        if len(rest) > MAX_LINE_BYTES:
            raise InputError(f"a line longer than {MAX_LINE_BYTES} bytes: not cyclictest output",
                             path=path)
        if cut:
            yield data[:cut]
    if rest:
        yield rest
