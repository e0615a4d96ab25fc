"""From a scenario's cyclictest settings to a command line the installed cyclictest accepts.

Pure: no process is started here, so the same builder serves the local board and a guest where a
shell script runs the command (paths are strings valid where cyclictest runs).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from rtgate.cyclictest.version import Capabilities, Option
from rtgate.errors import InfraError, InputError

PAPER_ARGS = ["-m", "-p99", "-i100", "-t"]
"""The Pi 5 paper's `-vmn -i100 -p99 -t` without -n (gone); rtgate adds -v itself."""

REDUCER = Path(__file__).parent / "blockmaxima.awk"
"""The awk program that reduces the -v stream to block maxima as cyclictest prints it."""
DEFAULT_INTERVAL_US = 1000  # cyclictest's own default for -i


def one_second_of_cycles(interval_us: int) -> int:
    """The default block of the block maxima: one second's cycles of a thread at this interval,
    for the reducer behind `rtgate bench` and for `rtgate parse` of a -v log alike."""
    return max(1, 1_000_000 // interval_us)

# Options rt-tests dropped, with why dropping them keeps the scenario's meaning.
RETIRED: dict[str, tuple[Option, str]] = {
    name: (Option({"-n", "--nanosleep"}, "none"),
           "-n dropped: clock_nanosleep is the default since rt-tests 2.0, which removed -n")
    for name in ("-n", "--nanosleep")
}
VERBOSE = {"-v", "--verbose"}  # rtgate adds it, feeding the reducer: never twice
INTERVAL = {"-i", "--interval"}
# rtgate owns these: a scenario setting them would contradict `rtgate bench` flags or outputs.
OWNED = {
    "-D": "the duration comes from `rtgate bench --duration`",
    "--duration": "the duration comes from `rtgate bench --duration`",
    "-h": "set cyclictest.histogram_us instead",
    "--histogram": "set cyclictest.histogram_us instead",
    "-H": "set cyclictest.histogram_us instead",
    "--histofall": "set cyclictest.histogram_us instead",
    "--histfile": "rtgate chooses the output files",
    "--json": "rtgate chooses the output files",
    "-o": "rtgate reduces the -v output to block maxima itself (cyclictest.block_cycles)",
    "--oscope": "rtgate reduces the -v output to block maxima itself (cyclictest.block_cycles)",
    "-N": "set cyclictest.nsecs instead",
    "--nsecs": "set cyclictest.nsecs instead",
}
NSECS_HISTOGRAM_US = 1000
"""cyclictest's own histogram with -N counts 1 ns rows, every one allocated (8 bytes a thread)
and printed: its limit is cut to 1 ms (8 MB a thread) and only the --json keeps it (non-empty
bins only). Its rows, a million lines, go to /dev/null (without --histfile cyclictest prints
them on stdout); cyclictest fopen()s that path "w" and never renames over it (rt-tests v2.4
src/cyclictest/cyclictest.c:1420; tests/integration/test_cyclictest_histfile.py). The
histogram only places the few samples the -v stream missed at exit: percentiles come from the
reducer's log-linear bins, which have no limit."""
QUIET = {"-q", "--quiet"}


class CyclictestSpec(BaseModel):
    """The ``cyclictest:`` block of a scenario."""

    model_config = ConfigDict(extra="forbid")

    args: list[str] = Field(
        default_factory=lambda: list(PAPER_ARGS),
        description="cyclictest options, as on its command line (bundles like -vmn allowed).")
    histogram_us: int = Field(
        20000, ge=1, le=1_000_000,
        description="Histogram limit: latencies at or above it count as overflows. The default "
                    "covers a stock kernel under load (the paper saw 36.8 ms on one).")
    block_cycles: int | None = Field(
        None, ge=1,
        description="Cycles per block of the per-thread block maxima; default one second's "
                    "worth (10^6 / the interval in us).")
    nsecs: bool = Field(
        True, description="Measure in nanoseconds (-N): a Pi 5's single-digit-µs tail steps by "
                          "more than a 10 % margin in whole µs. False: whole µs, as cyclictest "
                          "prints by default. A cyclictest without -N, --json or --histfile "
                          "measures in µs (a note says so).")


@dataclass(frozen=True)
class Flag:
    option: Option
    spelling: str
    value: str | None = None

    def argv(self) -> list[str]:
        if self.value is None:
            return [self.spelling]
        if self.spelling.startswith("--"):
            return [f"{self.spelling}={self.value}"]
        return [f"{self.spelling}{self.value}"]


@dataclass
class CyclictestCommand:
    argv: list[str]
    json_path: str | None
    histfile: str | None
    notes: list[str] = field(default_factory=list)
    blocks: str | None = None
    """Where the reducer writes the block maxima of cyclictest's -v stream (its stdout)."""
    block_cycles: int = 1
    nsecs: bool = False
    """cyclictest measures in ns (-N): the reducer bins the stream log-linearly."""

    def reducer(self, program: str = str(REDUCER), awk: str = "awk") -> list[str]:
        """The awk command that reads this command's stdout: samples become block maxima in
        ``blocks``, every other line goes to its own stdout. ``program``: the path of
        blockmaxima.awk where it runs (a guest gets a copy)."""
        assert self.blocks is not None
        return [awk, "-v", f"block={self.block_cycles}", "-v", f"out={self.blocks}",
                *(["-v", "ns=1"] if self.nsecs else []), "-f", program]


def _lookup(name: str, caps: Capabilities, source: Path) -> Option:
    found = caps.option(name) or (RETIRED[name][0] if name in RETIRED else None)
    if found is None:
        raise InputError(f"cyclictest.args: cyclictest {caps.version} installed here has no "
                         f"option {name}", path=source)
    return found


def split_args(args: list[str], caps: Capabilities, source: Path) -> list[Flag]:
    """getopt's reading of ``args``: bundles (-vmn), attached values (-p99), --name=value."""
    flags: list[Flag] = []
    i = 0
    while i < len(args):
        token = args[i]
        i += 1
        if token.startswith("--"):
            name, eq, value = token.partition("=")
            opt = _lookup(name, caps, source)
            if not eq and opt.arg == "required":
                if i >= len(args):
                    raise InputError(f"cyclictest.args: {name} needs a value", path=source)
                value, eq = args[i], "="
                i += 1
            if eq and opt.arg == "none":
                raise InputError(f"cyclictest.args: {name} takes no value", path=source)
            flags.append(Flag(opt, name, value if eq else None))
        elif token.startswith("-") and len(token) > 1:
            for pos, letter in enumerate(token[1:], start=1):
                name = f"-{letter}"
                opt = _lookup(name, caps, source)
                if opt.arg == "none":
                    flags.append(Flag(opt, name))
                    continue
                value: str | None = token[pos + 1:] or None
                if value is None and opt.arg == "required":
                    if i >= len(args):
                        raise InputError(f"cyclictest.args: {name} needs a value", path=source)
                    value = args[i]
                    i += 1
                flags.append(Flag(opt, name, value))
                break
        else:
            raise InputError(f"cyclictest.args: unexpected argument {token!r}", path=source)
    return flags


def _spelling(caps: Capabilities, *names: str) -> str:
    for name in names:
        if caps.supports(name):
            return name
    raise InfraError(f"cyclictest {caps.version} lacks {' / '.join(names)}, which rtgate needs")


def build(spec: CyclictestSpec, caps: Capabilities, *, duration_s: int, outdir: str,
          source: Path, executable: str = "cyclictest") -> CyclictestCommand:
    """The argv for ``spec`` on ``caps``, writing its outputs under ``outdir``.

    rtgate adds a histogram (percentiles need it), ``-v`` (one line per sample on stdout, which
    the reducer turns into block maxima as it runs: see :meth:`CyclictestCommand.reducer`),
    ``-q``, the duration and, where supported, ``--json`` and ``--histfile`` so the raw data
    survives in files (and stdout holds only the samples and cyclictest's messages).
    """
    notes: list[str] = []
    argv = [executable]
    interval_us = DEFAULT_INTERVAL_US
    for flag in split_args(spec.args, caps, source):
        names = flag.option.names
        if names & set(OWNED):
            raise InputError(f"cyclictest.args: {flag.spelling} is set by rtgate: "
                             f"{OWNED[flag.spelling]}", path=source)
        if names & INTERVAL:
            interval_us = _interval(flag, source)
        if names & VERBOSE:
            continue
        if names & set(RETIRED) and not caps.supports(flag.spelling):
            notes.append(RETIRED[flag.spelling][1])
        elif not names & QUIET:
            argv += flag.argv()
    nsecs = spec.nsecs and all(caps.supports(o) for o in ("-N", "--json", "--histfile"))
    if spec.nsecs and not nsecs:
        notes.append(f"cyclictest {caps.version} lacks -N, --json or --histfile: measured in "
                     "whole µs")
    argv.append(_spelling(caps, "-v", "--verbose"))
    argv.append(_spelling(caps, "-q", "--quiet"))
    if nsecs:
        argv.append("-N")
    limit = min(spec.histogram_us, NSECS_HISTOGRAM_US) * 1000 if nsecs else spec.histogram_us
    argv.append(f"{_spelling(caps, '-h', '--histogram')}{limit}")
    histfile = json_path = None
    if nsecs:
        argv.append("--histfile=/dev/null")
    elif caps.supports("--histfile"):
        histfile = f"{outdir}/cyclictest.hist"
        argv.append(f"--histfile={histfile}")
    if caps.supports("--json"):
        json_path = f"{outdir}/cyclictest.json"
        argv.append(f"--json={json_path}")
    else:
        notes.append(f"cyclictest {caps.version} has no --json: the result comes from its "
                     "histogram")
    duration = _spelling(caps, "--duration", "-D")
    argv.append(f"{duration}={duration_s}" if duration.startswith("--") else f"-D{duration_s}")
    block_cycles = spec.block_cycles or one_second_of_cycles(interval_us)
    return CyclictestCommand(argv, json_path, histfile, list(dict.fromkeys(notes)),
                             blocks=f"{outdir}/blocks.txt", block_cycles=block_cycles,
                             nsecs=nsecs)


def _interval(flag: Flag, source: Path) -> int:
    try:
        value = int(flag.value or "")
    except ValueError:
        value = 0
    if value < 1:
        raise InputError(f"cyclictest.args: {flag.spelling} needs a whole number of "
                         f"microseconds >= 1, got {flag.value!r}", path=source)
    return value
