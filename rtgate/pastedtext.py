"""What a person's paste puts around a tool's output, for every tool's reader: the notes such
lines become, where a typed command ends, the marks an author uses to cut lines out, and how an
offending line is quoted in a one-line error. (Issue 38: shared helpers for pasted text, so that
no tool's reader reaches into another's.)"""

from __future__ import annotations

import re
from pathlib import Path

NOTE_CHARS = 200  # of a line kept as a note: enough to recognize it, never a whole log
# Where a typed command ends: a pipe, redirection or the next command.
SHELL_OPERATOR = re.compile(r"\s+(?:\d*[<>]|[|;&])")
# A line where a user's file elides rows or CPUs: "...", "More histogram entries ...", "[snip]".
ELISION = re.compile(r"(?i)\.\.\.|…|\b(more|omitted|snip(ped)?|skipped|truncated|elided)\b")


def quoted(line: str, width: int = 60) -> str:
    """A line for an error message: its start quoted from its first visible character, or what
    it is when it shows nothing. (The one-line error collapses runs of blanks, so a quoted
    ``'   '``, or the first 60 characters of a note indented under the column it points at,
    would read ``' '``.)"""
    if line and not line.strip():
        return f"a line of only {len(line)} blank character(s)"
    text = line.lstrip()
    indent = len(line) - len(text)
    return repr(text[:width]) + (f" (indented {indent} blank character(s))" if indent else "")


def note(path: Path, line_no: int, what: str, line: str) -> str:
    """A line kept aside as a note: ``file line N: what: 'text'``."""
    return f"{path.name} line {line_no}: {what}: {line[:NOTE_CHARS]!r}"
