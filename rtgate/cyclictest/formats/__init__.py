"""Readers for each cyclictest output format, chosen by sniffing the start of each file."""

from __future__ import annotations

import re
from pathlib import Path

from rtgate.cyclictest.formats.blocks import Progress, no_progress
from rtgate.cyclictest.formats.json_v2 import read_json
from rtgate.cyclictest.formats.maxima import looks_like_blocks, read_blocks
from rtgate.cyclictest.formats.text import read_text
from rtgate.cyclictest.formats.verbose import looks_verbose, read_verbose
from rtgate.cyclictest.formats.view import RunView
from rtgate.errors import InputError

SNIFF_BYTES = 4096
# A JSON document, not a shell prompt "[root@host ~]# cyclictest ..." that also starts with '['.
_JSON_START = re.compile(rb"\s*(?:\{|\[\s*(?:[\[{\]\"0-9-]|$))")


def read_views(path: Path, progress: Progress = no_progress, *,
               lenient: bool = False, block_cycles: int | None = None,
               unit: float | None = None) -> list[RunView]:
    """Read one file with the reader its first bytes call for: one view per section (a
    verbose log written with -h holds the samples and then the histogram). ``lenient``: see
    ``formats.text``; ``block_cycles``, ``unit``: see ``formats.verbose``."""
    try:
        with path.open("rb") as fh:
            head = fh.read(SNIFF_BYTES)
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=path) from exc
    if not head.strip():
        raise InputError("empty file: no cyclictest output in it", path=path)
    if b"\0" in head:
        raise InputError("binary data, not cyclictest output", path=path)
    if looks_like_blocks(head):
        views = [read_blocks(path)]
        progress(path.stat().st_size)
        return views
    if _JSON_START.match(head):
        views = [read_json(path)]
        progress(path.stat().st_size)
        return views
    if looks_verbose(head):
        return read_verbose(path, progress, lenient=lenient, block_cycles=block_cycles,
                            unit=unit)
    # Histogram and summary output share one line grammar: -h without -q prints both.
    return [read_text(path, progress=progress, lenient=lenient, unit=unit)]
