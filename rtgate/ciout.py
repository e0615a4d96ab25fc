"""Text rtgate prints where a CI runner reads it: nothing a result holds becomes a workflow command.

GitHub's runner reads every line of a step's output, stdout and stderr, as a workflow command
when it starts with ``::`` once leading blanks are dropped (``::error::``, ``::add-mask::``,
``::stop-commands::``); a run id or a reason holding a newline would start such a line. Two
layers keep that from happening:

- ``escape``, for each value from a result (or any file rtgate was handed) printed on a line:
  GitHub's own escaping of command data (CR → ``%0D``, LF → ``%0A``, ``%`` → ``%25``), every
  other control or line-separator character the same way, and ``::`` → ``:%3A``. A ``%`` is
  escaped where it would read as one of GitHub's escapes (``%0A`` in a value prints as
  ``%250A``), so undoing GitHub's escaping gives the value back, while "20%" stays "20%". The
  value stays on its line, readable, and cannot forge a line of rtgate's own either.
- ``CommandGuard``, around the CLI's stdout and stderr (``rtgate.cli.main``): whatever a print
  missed, a line that would start with ``::`` has its first colon written ``%3A``. rtgate itself
  prints no workflow command; its workflows write their own.
"""

from __future__ import annotations

import re
from typing import Any, TextIO

_CONTROLS = {c: f"%{c:02X}" for c in (*range(0x20), 0x7F, 0x85, 0x2028, 0x2029)
             if c != ord("\t")}
# The runner's unescaping of command data and properties: %25, %0D, %0A, %3A, %2C.
_LOOKS_ESCAPED = re.compile(r"%(?=25|0D|0A|3A|2C)", re.IGNORECASE)


def escape(value: object) -> str:
    """``value`` as text that stays on its line and starts no workflow command."""
    text = _LOOKS_ESCAPED.sub("%25", str(value))
    return text.translate(_CONTROLS).replace("::", ":%3A")


_LINE_ENDS = re.compile(r"([\r\n])")


class CommandGuard:
    """A text stream writing through to ``inner``, except that no line it writes begins with
    ``::`` (after blanks): the start of each line is held back until it is known not to."""

    def __init__(self, inner: TextIO) -> None:
        self.inner = inner
        self._head = ""  # the start of the current line, not yet written: blanks, or one ':'
        self._at_start = True

    def write(self, text: str) -> int:
        out: list[str] = []
        for piece in _LINE_ENDS.split(text):
            if not piece:
                continue
            if piece in "\r\n":
                out += [self._release(), piece]
                self._at_start = True
            elif not self._at_start:
                out.append(piece)
            else:
                self._head += piece
                rest = self._head.lstrip(" \t")
                if len(rest) >= 2 or (rest and rest[0] != ":"):
                    out.append(self._release())
        self.inner.write("".join(out))
        return len(text)

    def _release(self, *, lone_colon: bool = False) -> str:
        """The held line start, defused when it opens a command (``lone_colon``: or could still
        open one); blanks alone keep the line open."""
        head, self._head = self._head, ""
        rest = head.lstrip(" \t")
        if not rest:
            return head
        self._at_start = False
        if rest.startswith("::") or (lone_colon and rest == ":"):
            return head[:len(head) - len(rest)] + "%3A" + rest[1:]
        return head

    def flush(self) -> None:
        # A ':' held at a flush is written defused: the next write could make it "::".
        self.inner.write(self._release(lone_colon=True))
        self.inner.flush()

    def __getattr__(self, name: str) -> Any:
        # isatty, fileno, encoding, ...: the stream's own (rich asks them).
        return getattr(self.inner, name)
