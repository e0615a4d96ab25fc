"""``rtla osnoise top``'s final screen -> a result of its own tool, ``osnoise``.

rtla prints, refreshed (behind ``ESC c``) or once with ``-q``::

                                              Operating System Noise
    duration:   0 00:00:06 | time is in us
    CPU Period       Runtime        Noise  % CPU Aval   Max Noise   Max Single          HW          NMI          IRQ      Softirq       Thread
      0 #4           4000316      3442445    13.94567      874639        21178       10355            0         1007            0          137

osnoise measures noise — time a busy-looping thread lost to anything else — not the wake-up
latency cyclictest and timerlat measure: each CPU's line goes to ``Result.noise`` as printed,
``threads`` and ``totals`` stay empty, and the result's tool is ``osnoise``, which no cyclictest
or timerlat budget matches and no A/B compares with them. (``rtla osnoise hist`` is read by
``hist``: a histogram of single noise durations, context ``noise``.)
"""  # noqa: E501

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from rtgate.errors import InputError
from rtgate.result import (
    Board,
    Kernel,
    Noise,
    Result,
    SourceFile,
    Tool,
    Totals,
    default_run_id,
)
from rtgate.timerlat import pasted

TOOL = "osnoise"
TITLE = "Operating System Noise"
_DURATION = re.compile(r"^duration:\s+(\d+) (\d\d):(\d\d):(\d\d) \| time is in (us|ns)$")
_COLUMNS = ("CPU Period Runtime Noise % CPU Aval Max Noise Max Single HW NMI IRQ Softirq "
            "Thread")
_CPU = re.compile(r"^(\d+) #(\d{1,20})\s+(\d{1,20})\s+(\d{1,20})\s+(\d{1,3}\.\d{5})"
                  + r"\s+(\d{1,20})" * 7 + "$")


@dataclass(frozen=True)
class Screen:
    """The result and the time the screen says rtla measured for (``duration:``, whole
    seconds), which a run's plan checks against its own duration."""

    result: Result
    duration_s: int


def parse(path: Path, *, board: str = "unknown", virtual: bool = False,
          scenario: str = "unknown", flavor: str | None = None, run_id: str | None = None,
          lenient: bool = True) -> Result:
    """Normalize the last screen of an ``rtla osnoise top`` output file."""
    return read(path, board=board, virtual=virtual, scenario=scenario, flavor=flavor,
                run_id=run_id, lenient=lenient).result


def read(path: Path, *, board: str = "unknown", virtual: bool = False,
         scenario: str = "unknown", flavor: str | None = None, run_id: str | None = None,
         lenient: bool = True) -> Screen:
    """The last screen of an ``rtla osnoise top`` output file, with its duration."""
    out, data = pasted.last_screen(path, TITLE, lenient=lenient, tool="rtla osnoise top",
                                   missing="no 'Operating System Noise' screen")
    body = out.lines
    if len(body) < 3:
        raise InputError(f"line {body[-1][0]}: the output ends inside the screen's header "
                         "(cut short?)", path=path)
    (n, duration), (m, columns) = body[1], body[2]
    unit = _DURATION.match(duration.strip())
    if not unit:
        raise InputError(f"line {n}: expected 'duration: D HH:MM:SS | time is in us'", path=path)
    if unit[5] == "ns":
        raise InputError(f"line {n}: rtla osnoise top -n (nanoseconds) output is not read",
                         path=path)
    if " ".join(columns.split()) != _COLUMNS:
        raise InputError(f"line {m}: expected the header {_COLUMNS!r}", path=path)
    noise: list[Noise] = []
    i = 3
    while i < len(body) and (cpu := _CPU.match(body[i][1].strip())):
        values = [int(v) for v in cpu.groups()[:4]] + [int(v) for v in cpu.groups()[5:]]
        noise.append(Noise(cpu=values[0], periods=values[1], runtime_us=values[2],
                           noise_us=values[3], cpu_available_pct=float(cpu[5]),
                           max_noise_us=values[4], max_single_us=values[5], hw=values[6],
                           nmi=values[7], irq=values[8], softirq=values[9], thread=values[10]))
        if noise[-1].max_single_us > noise[-1].max_noise_us or (
                noise[-1].noise_us > noise[-1].runtime_us):
            raise InputError(f"line {body[i][0]}: CPU {values[0]}: more noise than it allows",
                             path=path)
        i += 1
    if not noise:
        raise InputError(f"line {m}: no CPU line on the screen (cut short?)", path=path)
    pasted.after(out, body[i:], lenient=lenient, tool="rtla osnoise top",
                 looks_like_output=lambda line: line == TITLE or bool(_CPU.match(line)))
    sources = [SourceFile(path=str(path), sha256=hashlib.sha256(data).hexdigest(),
                          format="osnoise-top")]
    days, hours, minutes, seconds = (int(v) for v in unit.groups()[:4])
    return Screen(Result(
        run_id=run_id or default_run_id(board, scenario, None, sources),
        board=Board(name=board, virtual=virtual), kernel=Kernel(flavor=flavor),
        scenario=scenario,
        tool=Tool(name=TOOL, cmdline=out.typed.cmdline if out.typed else None),
        sources=sources, threads=[], totals=Totals(samples=0), noise=noise,
        status="complete", notes=out.notes),
        duration_s=((days * 24 + hours) * 60 + minutes) * 60 + seconds)
