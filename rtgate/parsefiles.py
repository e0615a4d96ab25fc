"""``rtgate parse``'s engine: the output files of one run a user hands over, read by the reader
of the tool that wrote them (cyclictest; rtla timerlat hist or top; rtla osnoise hist or top),
into one result file. Files a user hands over are read leniently (prompts, indentation, rtla's
trailing lines and comments around the output become notes); rtgate's own raw files are not
read here but by the harness, strictly."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from rtgate import inputfile
from rtgate.cyclictest.formats import SNIFF_BYTES
from rtgate.cyclictest.formats.blocks import Progress, no_progress
from rtgate.cyclictest.parse import parse
from rtgate.errors import InputError
from rtgate.result import Result
from rtgate.timerlat import hist, osnoise, pasted, top

# A bar only for files that take seconds: about 100 MB of verbose log per second.
PROGRESS_BYTES = 256 << 20


@dataclass(frozen=True)
class ParseSettings:
    raw: tuple[Path, ...]
    output: Path
    board: str = "unknown"
    virtual: bool = False  # a VM or emulator: its numbers are no real-time claim
    scenario: str = "unknown"
    flavor: str | None = None  # None: rt or stock, from the kernel version string
    run_id: str | None = None  # None: derived from board, scenario, start and the files
    timerlat_limit_us: int | None = None  # None: the prompt's -E × -b, else unknown
    timerlat_bucket_us: int | None = None
    timerlat_bucket_ns: int | None = None  # rtla -n: its -b counts ns
    block_cycles: int | None = None  # None: one second's cycles, where a -v log tells them


def parse_files(settings: ParseSettings) -> Path:
    """Write the result of ``settings.raw``; an InputError (exit 2) writes nothing."""
    for path in settings.raw:
        # A regular file each before any reader opens one (a FIFO would block the first read);
        # cyclictest's readers stream a file or cap it themselves, rtla's read it whole: capped.
        inputfile.check_regular(path)
        if _rtla_kind(path):
            inputfile.check_regular(path, inputfile.RTLA)
    try:
        return _parse_files(settings)
    except ValidationError as exc:
        # A reader's numbers outside what a result may hold (a bin at 1e12 µs, a million
        # bins): the input's fault, said as one line naming the files.
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        raise InputError(f"holds what no result may: {where}: {first['msg']}",
                         path=", ".join(map(str, settings.raw))) from exc


def _parse_files(settings: ParseSettings) -> Path:
    s = settings
    if rtla := [(p, kind) for p in s.raw if (kind := _rtla_kind(p))]:
        if len(s.raw) > 1:
            raise InputError("rtla output is read alone, not with other files", path=rtla[0][0])
        path, kind = rtla[0]
        common = {"board": s.board, "virtual": s.virtual, "scenario": s.scenario,
                  "flavor": s.flavor, "run_id": s.run_id}
        if kind == "hist":
            result = hist.parse(path, limit_us=s.timerlat_limit_us,
                                bucket_us=s.timerlat_bucket_us,
                                bucket_ns=s.timerlat_bucket_ns, lenient=True, **common)
        else:
            result = (top if kind == "top" else osnoise).parse(path, lenient=True, **common)
        return result.write(s.output)

    def run_parse(progress: Progress = no_progress) -> Result:
        return parse(s.raw, board=s.board, virtual=s.virtual, scenario=s.scenario,
                     flavor=s.flavor, run_id=s.run_id, progress=progress, lenient=True,
                     block_cycles=s.block_cycles)

    size = sum(p.stat().st_size for p in s.raw if p.is_file())
    if size >= PROGRESS_BYTES and sys.stderr.isatty():
        # rich is only needed for a bar on a terminal, over files of hundreds of megabytes.
        from rich.console import Console
        from rich.progress import DownloadColumn
        from rich.progress import Progress as Bar

        # Transient: once done (or failed) the bar is gone and stderr holds at most the one
        # error line.
        with Bar(*Bar.get_default_columns(), DownloadColumn(), transient=True,
                 console=Console(stderr=True)) as bar:
            task = bar.add_task("parsing", total=size)
            result = run_parse(lambda n: bar.advance(task, n))
    else:
        result = run_parse()
    return result.write(s.output)


_RTLA_TITLES = {hist.TITLE: "hist", hist.OSNOISE_TITLE: "hist", top.TITLE: "top",
                osnoise.TITLE: "osnoise-top"}


def _rtla_kind(path: Path) -> str | None:
    """Which rtla output the file's start holds (its title line, after any prompt or
    indentation), or None; an unreadable file is left to its reader."""
    try:
        with path.open("rb") as fh:
            head = fh.read(SNIFF_BYTES)
    except OSError:
        return None
    lines = [pasted.strip_escapes(line).strip()
             for line in head.decode("utf-8", "replace").splitlines()]
    for line in lines:
        if kind := _RTLA_TITLES.get(line):
            return kind
    # A histogram pasted from its Index row on, a top screen without its title line.
    if any(hist.INDEX_HEADER.match(line) for line in lines):
        return "hist"
    return "top" if any(top.COLUMNS.match(line) for line in lines) else None
