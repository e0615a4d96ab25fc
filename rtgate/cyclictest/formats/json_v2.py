"""rt-tests 2.x ``--json=FILE``: the final statistics of a run, written once at exit.

Quirks of the format that matter here: two keys end with a colon (``"cmdline:"``,
``"rt_test_version:"``); a thread's ``histogram`` lists only non-empty bins and never the
overflows, which are ``cycles - sum(histogram)`` when ``-h`` was given; the histogram limit is not
in the file, only in the command line. The document is small (one entry per non-empty bin), so
it is read whole; a file far larger than any cyclictest JSON is refused before reading.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError

from rtgate import jsonfile
from rtgate.cyclictest.formats.view import (
    KernelView,
    RunView,
    ThreadView,
    from_ns_bins,
    from_nsecs,
    says_nsecs,
)
from rtgate.errors import InputError
from rtgate.result import NSEC_US, RESOLUTION_US
from rtgate.stats.histogram import Sparse

MAX_JSON_BYTES = 256 << 20

Count = Annotated[int, Field(ge=0)]


class _Strict(BaseModel):
    # Unknown keys are ignored: later rt-tests releases add fields without changing these.
    model_config = ConfigDict(strict=True, extra="ignore", populate_by_name=True)


class _Sysinfo(_Strict):
    release: str | None = None
    version: str | None = None
    machine: str | None = None
    realtime: int | None = None


class _Thread(_Strict):
    histogram: dict[str, Count] = Field(default_factory=dict)
    cycles: Count
    min: Count
    max: Count
    avg: Annotated[float, Field(ge=0)]
    cpu: int | None = None


class _Document(_Strict):
    # rt-tests writes these two keys with a trailing colon; accept them without it as well.
    cmdline: str = Field(validation_alias=AliasChoices("cmdline:", "cmdline"))
    rt_test_version: str = Field(
        validation_alias=AliasChoices("rt_test_version:", "rt_test_version"))
    start_time: str | None = None
    end_time: str | None = None
    return_code: int = 0
    sysinfo: _Sysinfo = Field(default_factory=_Sysinfo)
    num_threads: Count
    # rt-tests 2.x writes use_nsecs here: 1 with -N (write_stats() in cyclictest.c).
    resolution_in_ns: Literal[0, 1] | None = None
    thread: dict[str, _Thread]


def read_json(path: Path) -> RunView:
    doc, sha = _load(path)
    view = RunView(path=path, format="json", sha256=sha, tool_version=doc.rt_test_version,
                   cmdline=doc.cmdline, start=_iso(doc.start_time, "start_time", path),
                   end=_iso(doc.end_time, "end_time", path))
    view.kernel = KernelView(release=doc.sysinfo.release, version=doc.sysinfo.version,
                             machine=doc.sysinfo.machine, realtime=doc.sysinfo.realtime)
    if doc.return_code != 0:
        view.partial_reasons.append(
            f"{path.name}: cyclictest return_code {doc.return_code}: the run did not finish")
    if len(doc.thread) != doc.num_threads:
        raise InputError(f"num_threads is {doc.num_threads} but {len(doc.thread)} threads "
                         "are listed", path=path)
    nsecs = (says_nsecs(doc.cmdline) if doc.resolution_in_ns is None
             else doc.resolution_in_ns == 1)
    view.resolution_us = NSEC_US if nsecs else RESOLUTION_US
    limit = histogram_limit(doc.cmdline)
    for key, entry in doc.thread.items():
        number = _index(key, "thread", path)
        view.threads[number] = _thread(number, entry, limit, path)
        view.threads[number].interval_us = thread_interval(doc.cmdline, number)
        if nsecs:
            from_nsecs(view.threads[number])
            from_ns_bins(view.threads[number], path)
    return view


def _load(path: Path) -> tuple[_Document, str]:
    try:
        if path.stat().st_size > MAX_JSON_BYTES:
            raise InputError("far too large for a cyclictest JSON file", path=path)
        data = path.read_bytes()
        raw = jsonfile.loads(data, path)
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=path) from exc
    except json.JSONDecodeError as exc:
        raise InputError(f"line {exc.lineno}: not valid JSON (truncated?): {exc.msg}",
                         path=path) from exc
    except UnicodeDecodeError as exc:
        raise InputError("not text: binary data in a JSON file", path=path) from exc
    if not isinstance(raw, dict):
        raise InputError(f"expected a cyclictest JSON object, got a {type(raw).__name__}",
                         path=path)
    try:
        return _Document.model_validate(raw), hashlib.sha256(data).hexdigest()
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        raise InputError(f"not cyclictest --json output: at {where}: {first['msg']}",
                         path=path) from exc


def _thread(number: int, entry: _Thread, limit: int | None, path: Path) -> ThreadView:
    view = ThreadView(thread=number, finality="final", samples=entry.cycles,
                      cpu=entry.cpu if entry.cpu is not None and entry.cpu >= 0 else None)
    if entry.cycles:
        view.min_us, view.max_us, view.avg_us = float(entry.min), float(entry.max), entry.avg
    pairs = [(_index(k, f"thread.{number}.histogram", path), c)
             for k, c in entry.histogram.items()]
    if limit is None and not pairs:
        return view  # no -h: the run kept no histogram
    hist = Sparse.from_pairs(pairs)
    overflows = entry.cycles - hist.total
    if overflows < 0:
        raise InputError(f"thread {number}: histogram holds {hist.total} samples but cycles "
                         f"is only {entry.cycles}", path=path)
    top = int(hist.values[-1]) + 1 if len(hist.values) else 1
    if limit is not None and top > limit:
        raise InputError(f"thread {number}: histogram bin {top - 1} is beyond the -h limit "
                         f"{limit} of the command line", path=path)
    # Without -h in the command line the limit is unknown; the highest bin + 1 is a lower bound
    # of it, which keeps every ">= limit" statement about overflows true.
    view.hist, view.limit, view.overflows = hist, limit or top, overflows
    return view


_HIST_FLAGS = ("-h", "-H", "--histogram", "--histofall")


_INTERVAL_FLAGS = ("-i", "--interval")
_DISTANCE_FLAGS = ("-d", "--distance")
# cyclictest's defaults: thread n samples every interval + n * distance µs; with a histogram
# (-h/-H) it sets the distance to 0 and ignores -d (captured: tests/data/cyclictest/quiet.txt
# has I:1000 and I:1500, overflow.stdout (-h 12) I:1000 for both threads).
_DEFAULT_INTERVAL_US, _DEFAULT_DISTANCE_US = 1000, 500


def histogram_limit(cmdline: str) -> int | None:
    """The ``-h``/``-H`` limit in a cyclictest command line, when given in a plain spelling."""
    return _option_int(cmdline, _HIST_FLAGS)


def thread_interval(cmdline: str, thread: int) -> int | None:
    """Thread ``thread``'s interval in µs as cyclictest sets it (the JSON does not record it;
    block maxima need it to say how long a block lasts); None when the line cannot tell."""
    try:
        words = shlex.split(cmdline)
    except ValueError:
        return None
    if any(len(w) > 2 and w[0] == "-" and w[1] != "-" and set(w[1:]) & {"i", "d"}
           and not w[2:].isdigit() for w in words):
        return None  # a bundle such as -vmi100: not read here
    interval = _option_int(cmdline, _INTERVAL_FLAGS)
    distance = 0 if histogram_limit(cmdline) else _option_int(cmdline, _DISTANCE_FLAGS)
    return ((_DEFAULT_INTERVAL_US if interval is None else interval)
            + thread * (_DEFAULT_DISTANCE_US if distance is None else distance))


def _option_int(cmdline: str, flags: tuple[str, ...]) -> int | None:
    """The last integer value given to one of ``flags`` (cyclictest keeps the last)."""
    try:
        words = shlex.split(cmdline)
    except ValueError:
        return None
    found = None
    for i, word in enumerate(words):
        for flag in flags:
            if word == flag and i + 1 < len(words) and words[i + 1].isdigit():
                found = int(words[i + 1])
            sep = "=" if flag.startswith("--") else ""
            value = word[len(flag) + len(sep):]
            if word.startswith(flag + sep) and value.isdigit():
                found = int(value)
    return found


def _index(key: str, where: str, path: Path) -> int:
    if not key.isdigit():
        raise InputError(f"{where}: key {key!r} is not a number", path=path)
    return int(key)


def _iso(stamp: str | None, field: str, path: Path) -> str | None:
    if stamp is None:
        return None
    try:
        return parsedate_to_datetime(stamp).isoformat()
    except (TypeError, ValueError) as exc:
        raise InputError(f"{field} {stamp!r} is not a date", path=path) from exc
