"""The partial view of a run that one output file yields.

A reader turns one file into a :class:`RunView`: what that file says about the run, nothing
more. Files of the same run are combined afterwards (``rtgate.cyclictest.parse_merge``), so a
reader never guesses a value its format does not carry: unknown stays ``None``.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from rtgate.errors import InputError
from rtgate.pastedtext import SHELL_OPERATOR, note, quoted
from rtgate.result import NSEC_US, RESOLUTION_US, BlockMaxima, Format
from rtgate.stats.histogram import Sparse

# cyclictest's own messages besides its measurements, on stdout or (captured with 2>&1) stderr:
# skipped wherever they appear, and kept as notes.
MESSAGE = re.compile(r"^(WARN: .*|# /dev/cpu_dma_latency set to \d+us)$")
# A shell prompt: "root@imx8:~# ", "pi@raspberrypi:~ $ ", "[user@host rt]$ ", "(venv) $ ".
_PROMPT = re.compile(r"^(?:\([^()\s]+\) )?(?P<who>\[[^\]]+\]|[\w.-]+@[\w.-]+(?::\S*)?(?: \S+)?)?"
                     r" ?(?P<mark>[$#%>])(?: (?P<command>.*))?$")
# The cyclictest command in a prompt line, up to a pipe, redirection or next command.
_COMMAND = re.compile(r"(?:^|\s)((?:\S*/)?cyclictest(?:\s.*)?)$")
_AFTER = "after cyclictest's output"
_INSIDE = "an author's note between parts of cyclictest's output"
_CRASH = re.compile(r"(?i)segmentation fault|killed|aborted|core dumped|error|fail")


def around_output(line: str, *, before: bool) -> tuple[str, str | None] | None:
    """What a line that is not cyclictest's is, in a file a user hands over: before the output
    anything (a file name, the prompt that ran it: its cyclictest command is returned), after it
    only a shell prompt. ``(what, typed command)``, or None where no such line may be."""
    prompt = _PROMPT.match(line)
    if before:
        command = _typed_command(prompt["command"]) if prompt and prompt["command"] else None
        return ("shell prompt, read as the command line" if command
                else "before cyclictest's output", command)
    if prompt and (prompt["who"] or prompt["mark"] != "#"):
        # (A bare "#" line after the output may as well be a footer line cut short.)
        return "shell prompt after cyclictest's output", None
    return None


@dataclass
class Surroundings:
    """Lines around cyclictest's output, as a reader meets them: in a file a user hands over
    (``lenient``) they become notes (``around_output``), but only while the output they surround
    proves complete (``foreign`` is the error the first one would have been); in raw files of
    rtgate's own harness each is an error."""

    path: Path
    notes: list[str]
    lenient: bool = False
    seen_output: bool = False  # a line of cyclictest's has been read
    prompt_line: int | None = None  # a shell prompt after the output: only more may follow
    typed_cmdline: str | None = None
    foreign: InputError | None = None
    output_complete: bool = False
    """The reader has seen the end of a complete output (a histogram's whole footer): after it,
    a user's file may hold anything (comments in any script, the next prompt)."""

    def take(self, line: str, line_no: int, problem: InputError, *,
             between_sections: bool = False) -> None:
        """Keep ``line`` as a note, or raise ``problem`` (the reader's words for it).
        ``between_sections``: the reader is between two parts of the output (after the 'T:'
        lines, before '# Histogram'), where an author's note splits no stream of samples."""
        found = around_output(line, before=not self.seen_output) if self.lenient else None
        if (found is None and self.lenient and self.seen_output and self.prompt_line is None
                and (self.output_complete or between_sections) and not _CRASH.search(line)):
            # An author's note (in any script) after the output or between its parts: '^^^ hmm'
            # under the 'T:' lines, a line before '# Histogram'. Kept as a note, numbers
            # untouched, and only if the output proves complete (``foreign``). Among samples or
            # rows (two files spliced?), a crash report, or after the next prompt: refused.
            found = (_AFTER if self.output_complete else _INSIDE, None)
        if found is None:
            if self.prompt_line is not None:
                raise InputError(f"line {line_no}: not cyclictest output after the shell prompt "
                                 f"on line {self.prompt_line}: {quoted(line)}", path=self.path)
            raise problem
        what, command = found
        if self.seen_output and what not in (_AFTER, _INSIDE):
            self.prompt_line = self.prompt_line or line_no
        # The last command before the output ran it.
        self.typed_cmdline = command or self.typed_cmdline
        self.foreign = self.foreign or problem
        self.notes.append(note(self.path, line_no, what, line))


def _typed_command(typed: str) -> str | None:
    """The cyclictest command line typed at a prompt (after sudo, before a pipe or redirection)."""
    m = _COMMAND.search(typed)
    return SHELL_OPERATOR.split(m[1], maxsplit=1)[0] if m else None


def says_nsecs(cmdline: str | None) -> bool:
    """A cyclictest command line with -N/--nsecs: every latency it prints is in ns."""
    try:
        return cmdline is not None and any(w in ("-N", "--nsecs")
                                           for w in shlex.split(cmdline))
    except ValueError:
        return False


def from_nsecs(view: ThreadView) -> None:
    """A thread's min, avg and max read as printed with -N (integer ns) into µs, keeping every
    digit: the view says so with its resolution."""
    for name in ("min_us", "avg_us", "max_us"):
        value = getattr(view, name)
        if value is not None:
            setattr(view, name, value / 1000)
    view.resolution_us = NSEC_US


def from_ns_bins(view: ThreadView, path: Path) -> None:
    """A thread's -N histogram as read (rows of 1 ns bins, the -h limit in ns) in log-linear ns
    bins under a whole-µs limit: the rows from the last whole µs below cyclictest's limit up
    join the overflows, which stay true as "at or above the limit"."""
    if view.hist is None:
        return
    hist = Sparse.from_ns(view.hist.values, view.hist.counts)
    if view.limit is not None:
        if view.limit < 1000:
            raise InputError(f"a -N histogram of {view.limit} ns (-h {view.limit}): below "
                             "1 µs, no limit a result can state", path=path)
        view.limit //= 1000
        hist, above = hist.below(view.limit)
        view.overflows += above
    view.hist = hist


Finality = Literal["final", "snapshot"]
"""``final``: statistics written at the end of the run. ``snapshot``: a view taken while it ran
(a refreshed summary line, a verbose log missing the samples still buffered at exit)."""


@dataclass
class ReducedStream:
    """What the block-maxima reducer saw of one thread's -v stream (``formats.maxima``)."""

    block_cycles: int
    maxima: list[float]
    """Of each block of ``block_cycles`` samples in the order printed (µs, to the ns with -N);
    the last may be short."""
    seen: Sparse
    """Histogram of the samples seen: their count is the cycles the blocks account for."""
    gap: tuple[int, int] | None = None
    """The first cycle number that skipped: (expected, printed)."""


@dataclass
class ThreadView:
    thread: int
    finality: Finality
    cpu: int | None = None
    tid: int | None = None
    priority: int | None = None
    interval_us: int | None = None
    samples: int | None = None
    min_us: float | None = None
    avg_us: float | None = None
    avg_truncated: bool = False
    """avg_us is cyclictest's integer average, cut toward zero: the mean is in
    [avg, avg + resolution_us)."""
    max_us: float | None = None
    resolution_us: float = RESOLUTION_US
    """The unit min, avg and max were printed in (0.001: -N, its histogram's bins log-linear
    ns)."""
    hist: Sparse | None = None
    limit: int | None = None
    """Histogram limit: latencies >= limit are overflows. None: exact, unlimited (verbose)."""
    overflows: int = 0
    overflow_cycles: list[int] = field(default_factory=list)
    stream: ReducedStream | None = None
    """A blocks file's view: what the reducer saw."""
    blocks: BlockMaxima | None = None
    """The merged run's: the reducer's blocks checked against the histogram (``blockcheck``)."""


@dataclass
class KernelView:
    release: str | None = None
    version: str | None = None
    machine: str | None = None
    realtime: int | None = None


@dataclass
class RunView:
    path: Path
    format: Format
    threads: dict[int, ThreadView] = field(default_factory=dict)
    kernel: KernelView = field(default_factory=KernelView)
    tool_version: str | None = None
    cmdline: str | None = None
    typed_cmdline: str | None = None
    """The cyclictest command typed at a shell prompt in a user's file: what the user typed (quotes,
    variables, spacing), never checked against cyclictest's own ``cmdline``."""
    start: str | None = None
    end: str | None = None
    resolution_us: float | None = None
    """The unit the file prints latencies in (0.001: -N); None: the file does not tell."""
    sha256: str = ""
    """Of the bytes read, hashed while reading: a 10^8-line log is not read twice."""
    partial_reasons: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """Lines kept aside, not measurements: cyclictest's messages, lines around its output."""
