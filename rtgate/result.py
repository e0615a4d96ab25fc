"""The normalized result: the one data type that flows between the stages.

Every stage reads and writes ``result.json`` documents of this shape. The JSON Schema committed in
``rtgate/schemas/result-v1.schema.json`` is generated from these models (``python -m
rtgate.result --schema``) and a test keeps the two identical. All latencies are microseconds.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rtgate.errors import InputError
from rtgate.schemafile import schema_of

SCHEMA_ID = "rtgate/result/v1"
SCHEMA_FILE = Path(__file__).parent / "schemas" / "result-v1.schema.json"

Status = Literal["complete", "partial", "degraded"]
Format = Literal["json", "histogram", "verbose", "summary"]
Micros = Annotated[float, Field(ge=0)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Percentile(_Model):
    """A percentile of the latency distribution.

    ``relation`` is ``">="`` when the percentile falls among samples that overflowed the histogram:
    the true value is then only known to be at least ``value_us`` (the histogram limit).
    """

    value_us: Micros
    relation: Literal["=", ">="] = "="

    def __str__(self) -> str:
        prefix = "≥" if self.relation == ">=" else ""
        return f"{prefix}{self.value_us:g}"


class Histogram(_Model):
    """A 1 µs-bin histogram: sparse ``[latency_us, count]`` pairs, ascending, zero bins omitted."""

    limit_us: int = Field(ge=1, description="Latencies >= limit_us are counted as overflows.")
    buckets: list[tuple[int, int]] = Field(default_factory=list)
    overflows: int = Field(0, ge=0)
    overflow_cycles: list[int] = Field(
        default_factory=list,
        description="Cycle numbers of (the first reported) overflowing samples.")


class Thread(_Model):
    thread: int = Field(ge=0, description="cyclictest thread number")
    cpu: int | None = Field(None, description="CPU the thread ran on, when known")
    tid: int | None = None
    priority: int | None = None
    interval_us: int | None = None
    samples: int = Field(ge=0)
    min_us: Micros | None = None
    avg_us: Micros | None = None
    max_us: Micros | None = None
    histogram: Histogram | None = None


class Totals(_Model):
    samples: int = Field(ge=0)
    min_us: Micros | None = None
    avg_us: Micros | None = None
    max_us: Micros | None = None
    stddev_us: Micros | None = Field(
        None, description="Absent when no per-sample data or histogram exists.")
    p50: Percentile | None = None
    p99: Percentile | None = None
    p99_9: Percentile | None = None
    p99_99: Percentile | None = None


class Kernel(_Model):
    release: str | None = None
    version: str | None = Field(None, description="The kernel version string, as `uname -v`.")
    preempt_rt: bool | None = Field(None, description="Detected from the version string.")
    flavor: str | None = Field(None, description="Build flavor: stock, rt, none, voluntary, ...")
    machine: str | None = None


def is_preempt_rt(version: str | None, realtime: bool | None) -> bool:
    """PREEMPT_RT from the version string (``uname -v``: "#1 SMP PREEMPT_RT ..."). The flag
    /sys/kernel/realtime exists only with the out-of-tree patch: mainline 6.12+ has RT built in
    and no such file, so cyclictest reports ``realtime: 0`` on a real RT kernel."""
    return bool(realtime) or "PREEMPT_RT" in (version or "")


class Board(_Model):
    name: str
    virtual: bool = Field(
        False, description="True for VMs/emulators: their numbers are no real-time claim.")


class Tool(_Model):
    name: str = "cyclictest"
    version: str | None = None
    cmdline: str | None = None


class SourceFile(_Model):
    path: str
    sha256: str
    format: Format


class Load(_Model):
    """A load generator that ran during the measurement (stress-ng, iperf3 …)."""

    name: str
    command: list[str]
    exit_status: int | None = Field(
        None, description="None while running when measurement ended (the normal case).")
    early_exit: bool = False


class Result(_Model):
    schema_: Literal["rtgate/result/v1"] = Field(SCHEMA_ID, alias="schema")
    run_id: str
    board: Board
    kernel: Kernel
    scenario: str
    tool: Tool
    start: str | None = Field(None, description="ISO 8601 start of measurement")
    end: str | None = Field(None, description="ISO 8601 end of measurement")
    sources: list[SourceFile] = Field(default_factory=list)
    threads: list[Thread]
    totals: Totals
    status: Status
    reasons: list[str] = Field(default_factory=list)
    loads: list[Load] = Field(default_factory=list)
    environment: dict[str, Any] = Field(default_factory=dict)

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=True, indent=2, exclude_none=False) + "\n"

    def write(self, path: str | Path) -> Path:
        return write_atomic(Path(path), self.to_json())


def write_atomic(path: Path, text: str) -> Path:
    """Write-then-rename, so a reader never sees half a file and a crash never loses the old one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


# JSON can spell a lone surrogate ("\ud800"): no character, and nothing written as UTF-8 (the
# console, JUnit, Markdown, the site) can hold one.
_LONE_SURROGATES = dict.fromkeys(range(0xD800, 0xE000), "\ufffd")


def _unicode(value: Any) -> Any:
    """``value`` with every lone surrogate in its strings (keys too) replaced by U+FFFD."""
    if isinstance(value, str):
        return value.translate(_LONE_SURROGATES)
    if isinstance(value, list):
        return [_unicode(v) for v in value]
    if isinstance(value, dict):
        return {_unicode(k): _unicode(v) for k, v in value.items()}
    return value


def load_result(path: str | Path) -> Result:
    """Read and validate a result.json; any problem is a one-line InputError naming the file."""
    p = Path(path)
    try:
        data = _unicode(json.loads(p.read_text(encoding="utf-8")))
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=p) from exc
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"not a JSON document: {exc}", path=p) from exc
    except ValueError as exc:
        # json's one other ValueError: Python refuses to convert integers this long.
        raise InputError(f"holds an integer of more than {sys.get_int_max_str_digits()} digits, "
                         "not a measurement", path=p) from exc
    except RecursionError as exc:
        raise InputError("nested too deeply to be a result", path=p) from exc
    if not isinstance(data, dict) or data.get("schema") != SCHEMA_ID:
        got = data.get("schema") if isinstance(data, dict) else type(data).__name__
        raise InputError(f"not an rtgate result (schema {got!r}, expected {SCHEMA_ID!r})", path=p)
    try:
        return Result.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        raise InputError(f"invalid result at {where}: {first['msg']}", path=p) from exc


def json_schema() -> dict[str, Any]:
    return schema_of(Result, SCHEMA_ID)
