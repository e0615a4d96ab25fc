"""Text rtgate prints where a CI runner reads it: nothing a result holds becomes a workflow command.

GitHub's runner (actions/runner, ``ActionCommandManager.TryProcessCommand``) reads every line
of a step's output, stdout and stderr, as a workflow command in either of two syntaxes:

- V2, ``ActionCommand.TryParseV2``: the line starts with ``::`` once ``TrimStart()`` dropped its
  leading white space (any Unicode white space, not only blanks): ``::error::``,
  ``::add-mask::``, ``::stop-commands::``;
- V1, ``ActionCommand.TryParse``: ``##[`` *anywhere* in the line (``IndexOf("##[")``), then a
  command name up to ``]``: ``##[error]``, ``##[add-mask]``, ``##[group]``.

Both comparisons are .NET's culture-sensitive ones (ICU on Linux), which skip "ignorable" code
points: ``#\\u00ad#[`` or ``:\\u200b:`` still match. Two layers keep a value from matching:

- ``escape``, for each value from a result (or any file rtgate was handed) printed on a line:
  GitHub's own escaping of command data (CR → ``%0D``, LF → ``%0A``, ``%`` → ``%25``), every
  other control, line-separator or default-ignorable character the same way, ``::`` →
  ``:%3A`` and ``##[`` → ``##%5B``. A ``%`` is escaped where it would read as one of these
  escapes (``%0A`` in a value prints as ``%250A``), so undoing the escaping gives the value
  back, while "20%" stays "20%". The value stays on its line, readable, and cannot forge a line
  of rtgate's own either.
- ``CommandGuard``, around the CLI's stdout and stderr (``rtgate.cli.main``): whatever a print
  missed, a line that would start with ``::`` has its second colon written ``%3A``, and a ``[``
  after ``##`` anywhere is written ``%5B``, also when the pieces come in separate writes.
  rtgate itself prints no workflow command; its workflows write their own.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any, TextIO

# Unicode's Default_Ignorable_Code_Point outside the format characters (Cf), which ICU's
# collation gives no weight: Hangul fillers, Mongolian variation selectors, variation selectors.
_IGNORABLE_OTHER = re.compile(
    "[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u3164\ufe00-\ufe0f\uffa0"
    "\U000e0100-\U000e01ef]")


def _ignorable(char: str) -> bool:
    """Skipped by the runner's culture-sensitive comparisons: controls and ignorables."""
    return (char not in "\t\r\n" and unicodedata.category(char) in ("Cc", "Cf")
            or bool(_IGNORABLE_OTHER.match(char)))


# Escaped in a value: what stays off the line (controls, line separators) and what a
# comparison would skip (ignorables); the tab is kept, it is white space and readable.
_ESCAPED = re.compile(r"[^\t\x20-\x7e]")
# The runner's unescaping (%25, %0D, %0A, %3A, %2C) plus this module's own %5B.
_LOOKS_ESCAPED = re.compile(r"%(?=25|0D|0A|3A|2C|5B)", re.IGNORECASE)


def _percent(m: re.Match[str]) -> str:
    char = m.group()
    if char in "\r\n\u0085\u2028\u2029" or _ignorable(char):
        return f"%{ord(char):02X}"
    return char


def escape(value: object) -> str:
    """``value`` as text that stays on its line and starts no workflow command."""
    text = _ESCAPED.sub(_percent, _LOOKS_ESCAPED.sub("%25", str(value)))
    return text.replace("::", ":%3A").replace("##[", "##%5B")


class CommandGuard:
    """A text stream writing through to ``inner``, except that no line it writes begins with
    ``::`` (after white space) or holds ``##[``. Character by character, so nothing is held
    back: the second colon and the ``[`` are the characters that decide, and they are the ones
    rewritten."""

    def __init__(self, inner: TextIO) -> None:
        self.inner = inner
        self._start = 0   # the line so far: 0 white space only, 1 then one ':', 2 anything else
        self._hashes = 0  # '#' ending the line so far, ignorables skipped

    def write(self, text: str) -> int:
        out: list[str] = []
        for char in text:
            if char in "\r\n":
                self._start = self._hashes = 0
                out.append(char)
                continue
            if _ignorable(char):
                out.append(char)
                continue
            if char == ":" and self._start < 2:
                out.append("%3A" if self._start == 1 else char)
                self._start += 1
            elif char == "[" and self._hashes >= 2:
                out.append("%5B")
            else:
                out.append(char)
            if not (char.isspace() and self._start == 0) and char != ":":
                self._start = 2
            self._hashes = self._hashes + 1 if char == "#" else 0
        self.inner.write("".join(out))
        return len(text)

    def flush(self) -> None:
        self.inner.flush()

    def __getattr__(self, name: str) -> Any:
        # isatty, fileno, encoding, ...: the stream's own (rich asks them).
        return getattr(self.inner, name)


def printable(value: object) -> str:
    """``value`` for a terminal, a log line or a table cell: every character that is not
    printable (controls such as ESC, which start colour, title and OSC 52 clipboard sequences;
    line separators; format and ignorable characters) written as its Python escape, ``\\x1b``,
    ``\\u200b``. Board and kernel strings (``uname -r``, a build's release) pass through this."""
    return "".join(c if c == " " or (c.isprintable() and not _ignorable(c))
                   else c.encode("unicode_escape").decode("ascii") for c in str(value))
