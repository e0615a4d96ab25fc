"""rtla's output as people paste it: the tool's lines found in a file a user hands over.

Around rtla's own lines a pasted file holds a prompt with the command (``[root@host ~]# rtla
timerlat hist -E 20``: its ``-E``/``-b`` say what the output cannot), a file name,
indentation (a documentation's literal block), rtla's own trailing lines (``rtla timerlat hit
stop tracing``, the auto-analysis, ``Saving trace to …``), a trailing prompt, comments in any
script. Only for such files (``lenient``) are they kept aside as notes; a raw file of rtgate's own
harness holds rtla's stdout and nothing else, and any other line there is an error.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from rtgate.errors import InputError
from rtgate.pastedtext import SHELL_OPERATOR, note

# The rtla command in a prompt line (also its `timerlat`/`osnoise` aliases), up to a pipe,
# redirection or next command.
_COMMAND = re.compile(r"(?:^|\s)((?:\S*/)?(?:rtla\S*\s+)?(?:timerlat|osnoise)(?:\s+(?:hist|top))?"
                      r"(?:\s.*)?)$")
_ESCAPE = re.compile(r"\x1b(?:\[[0-9;?]*[A-Za-z]|c)")


@dataclass(frozen=True)
class Typed:
    """What the command typed at the prompt says about the run."""

    cmdline: str
    entries: int | None = None
    bucket: int | None = None
    """-b: in µs, or in ns with -n (``nanoseconds``)."""
    nanoseconds: bool = False


@dataclass
class Output:
    """rtla's lines (1-based line numbers of the file, indentation removed) and what was
    around them."""

    path: Path
    lines: list[tuple[int, str]]
    notes: list[str] = field(default_factory=list)
    typed: Typed | None = None
    stopped: bool = False
    """rtla printed 'hit stop tracing': the run ended at a threshold (-a, -i, -T, -s)."""


def decode(path: Path, data: bytes, tool: str) -> list[str]:
    """The file's lines: UTF-8 text (comments in any script), never binary."""
    if b"\0" in data:
        raise InputError(f"binary data, not {tool} output", path=path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"byte {exc.start}: neither ASCII nor UTF-8 text, not {tool} output",
                         path=path) from None
    return [strip_escapes(line) for line in text.splitlines()]


def strip_escapes(line: str) -> str:
    """Without the terminal's colour and clear-screen codes rtla writes around its screens."""
    return _ESCAPE.sub("", line)


def split(path: Path, lines: list[str], is_start: Callable[[str], bool], *,
          lenient: bool, tool: str, centered: bool = False) -> Output:
    """The lines from rtla's title on, de-indented, with the lines before it as notes (and
    the prompt's command read). Strict: the title is the first line, indented only when rtla
    centres it (``centered``: a top screen's)."""
    start = next((i for i, line in enumerate(lines) if is_start(line.strip())), None)
    if start is None or (start and not lenient) or (
            not lenient and not centered and lines[0] != lines[0].strip()):
        first = lines[0].strip() if lines else ""
        raise InputError(f"line 1: not {tool} output: {first[:60]!r}", path=path)
    out = Output(path, [])
    for n, line in enumerate(lines[:start], start=1):
        if not line.strip():
            continue
        command = typed_command(line)
        out.typed = command or out.typed
        out.notes.append(note(path, n, "prompt, read as the command line" if command
                              else f"before {tool}'s output", line))
    indent = lines[start][:len(lines[start]) - len(lines[start].lstrip())]
    for n, line in enumerate(lines[start:], start=start + 1):
        out.lines.append((n, line[len(indent):] if line.startswith(indent) else line.lstrip()))
    return out


def last_screen(path: Path, title: str, *, lenient: bool, tool: str,
                missing: str) -> tuple[Output, bytes]:
    """A ``top`` display's last screen (it holds the whole run; the live display's earlier
    screens are skipped with a note), with line numbers of the file as it is, and the file's
    bytes. No screen with ``title``: an InputError saying ``missing``."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=path) from exc
    lines = decode(path, data, tool)
    titles = [i for i, line in enumerate(lines) if line.strip() == title]
    if not titles:
        raise InputError(f"not {tool} output: {missing}", path=path)
    out = split(path, lines[:titles[0]] + lines[titles[-1]:], lambda line: line == title,
                lenient=lenient, tool=tool, centered=True)
    if len(titles) > 1:
        shift = titles[-1] - titles[0]
        out.lines = [(n + shift, line) for n, line in out.lines]
        out.notes.append(f"{path.name}: {len(titles) - 1} earlier screen(s) of the live "
                         "display skipped: the last one holds the whole run")
    return out, data


def after(out: Output, rest: list[tuple[int, str]], *, lenient: bool, tool: str,
          looks_like_output: Callable[[str], bool]) -> None:
    """Lines after rtla's last summary line: notes in a user's file (never a second output),
    errors in a raw one."""
    for n, line in rest:
        text = line.strip()
        if not text:
            continue
        if not lenient or looks_like_output(text):
            raise InputError(f"line {n}: unexpected line after the {tool} output: "
                             f"{text[:80]!r}", path=out.path)
        if text.startswith("rtla ") and text.endswith("hit stop tracing"):
            out.stopped = True
        out.notes.append(note(out.path, n, f"after {tool}'s output", text))


def typed_command(line: str) -> Typed | None:
    """The rtla command typed at a prompt: its -E, -b and -n, as rtla's getopt reads them."""
    m = _COMMAND.search(line)
    if not m:
        return None
    cmdline = SHELL_OPERATOR.split(m[1], maxsplit=1)[0].strip()
    try:
        words = shlex.split(cmdline)
    except ValueError:
        words = cmdline.split()
    values: dict[str, str] = {}
    flags: set[str] = set()
    takes = {"-E": "entries", "--entries": "entries", "-b": "bucket", "--bucket-size": "bucket"}
    switches = {"-n": "ns", "--nano": "ns"}
    it = iter(words)
    for word in it:
        name, eq, value = word.partition("=")
        if name in takes:
            values[takes[name]] = value if eq else next(it, "")
        elif word[:2] in ("-E", "-b") and word[2:].isdigit():
            values[takes[word[:2]]] = word[2:]
        elif word in switches:
            flags.add(switches[word])
    return Typed(cmdline=cmdline,
                 entries=int(values["entries"]) if values.get("entries", "").isdigit() else None,
                 bucket=int(values["bucket"]) if values.get("bucket", "").isdigit() else None,
                 nanoseconds="ns" in flags)
