"""LAVA's REST API v0.2: the few calls rtgate makes, and what it reads in a job's log."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlencode

import yaml

from rtgate.board.spec import LavaOptions
from rtgate.errors import InfraError, InputError

HTTP_TIMEOUT_S = 30
# The largest reply rtgate reads from the server: LAVA pages a job's log, and a page of a
# measurement's log is a few MiB; a reply beyond this is refused, never held whole.
REPLY_CAP = 64 << 20
# The most entries a listing (devices, tags) may have: a lab has tens; a server that pages on
# forever, or repeats its pages, is refused instead of followed.
LISTING_CAP = 10_000


def _field(doc: Any, name: str, kind: type | tuple[type, ...], where: str) -> Any:
    """``doc[name]`` when ``doc`` is an object whose ``name`` is of ``kind``; else a LavaError
    (exit 3) naming the field."""
    value = doc.get(name) if isinstance(doc, dict) else None
    if not isinstance(value, kind):
        got = type(doc).__name__ if not isinstance(doc, dict) else type(value).__name__
        raise LavaError(f"LAVA {where}: field {name!r} is {got}, not what the API returns")
    return value


class LavaError(InfraError):
    pass


class Lava:
    """The few REST API v0.2 calls rtgate needs, with the token from the environment."""

    def __init__(self, opts: LavaOptions, token: str) -> None:
        self.base = opts.server.rstrip("/")
        self.token = token

    def job_url(self, job_id: int) -> str:
        return f"{self.base}/scheduler/job/{job_id}"

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> bytes:
        req = urllib.request.Request(
            f"{self.base}/api/v0.2/{path}", method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"Token {self.token}", "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=HTTP_TIMEOUT_S) as resp:
                data: bytes = resp.read(REPLY_CAP + 1)
        except urllib.error.HTTPError as exc:
            detail = " ".join(exc.read(4096).decode("utf-8", "replace").split())[:400]
            raise LavaError(f"LAVA {method} {path}: HTTP {exc.code}: {detail}") from exc
        except (urllib.error.URLError, OSError) as exc:
            raise LavaError(f"LAVA server {self.base} unreachable: {exc}") from exc
        if len(data) > REPLY_CAP:
            raise LavaError(f"LAVA {method} {path}: a reply of more than {REPLY_CAP >> 20} MiB: "
                            "refused")
        return data

    def _json(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        try:
            return json.loads(self.call(method, path, body))
        except (ValueError, RecursionError) as exc:  # JSON syntax, encoding, a huge integer
            raise LavaError(f"LAVA {method} {path}: not a JSON reply: "
                            f"{' '.join(str(exc).split())[:200]}") from exc

    def submit(self, definition: str) -> int:
        answer = self._json("POST", "jobs/", {"definition": definition})
        ids = _field(answer, "job_ids", list, "job submission")
        if not ids or not isinstance(ids[0], int) or isinstance(ids[0], bool):
            raise LavaError(f"LAVA job submission: field 'job_ids' is {ids[:3]!r}, not a job id")
        return ids[0]

    def job(self, job_id: int) -> dict[str, Any]:
        job: dict[str, Any] = self._json("GET", f"jobs/{job_id}/")
        where = f"job {job_id}"
        for name in ("state", "health"):
            _field(job, name, str, where)
        _field(job, "actual_device", (str, type(None)), where)
        return job

    def log(self, job_id: int, start: int = 0) -> list[dict[str, Any]]:
        """The job's log entries (dt, lvl, msg) from line ``start`` (none yet: none)."""
        try:
            text = self.call("GET", f"jobs/{job_id}/logs/?start={start}").decode("utf-8",
                                                                                 "replace")
        except LavaError as exc:
            if "HTTP 404" in str(exc):
                return []
            raise
        try:
            entries = yaml.load(text, Loader=yaml.CSafeLoader) if text.strip() else []
        except (yaml.YAMLError, ValueError, RecursionError) as exc:
            raise LavaError(f"LAVA job {job_id}'s log from line {start} is not YAML: "
                            f"{' '.join(str(exc).split())[:200]}") from exc
        if entries is None:
            return []
        if not isinstance(entries, list):
            raise LavaError(f"LAVA job {job_id}'s log from line {start} is a "
                            f"{type(entries).__name__}, not a list of entries")
        for n, entry in enumerate(entries, start=start):
            where = f"job {job_id}'s log entry {n}"
            if not isinstance(entry, dict):
                raise LavaError(f"LAVA {where} is a {type(entry).__name__}, not an object "
                                "with dt, lvl and msg")
            _field(entry, "lvl", str, where)
        return entries

    def cancel(self, job_id: int) -> None:
        self.call("GET", f"jobs/{job_id}/cancel/")

    def listing(self, what: str, **filters: str) -> list[dict[str, Any]]:
        """Every entry of an API listing (devices, tags), through all of its pages."""
        found: list[dict[str, Any]] = []
        while True:
            query = urlencode({**filters, "limit": 100, "offset": len(found)})
            page = self._json("GET", f"{what}/?{query}")
            results = _field(page, "results", list, f"{what} listing")
            if not all(isinstance(r, dict) for r in results):
                raise LavaError(f"LAVA {what} listing: field 'results' holds a non-object")
            found += results
            if not page.get("next") or not results:
                return found
            if len(found) >= LISTING_CAP:
                raise LavaError(f"LAVA {what} listing: more than {LISTING_CAP} entries (or a "
                                "server paging without end); refused")

    def devices(self, device_type: str) -> dict[str, set[str]]:
        """The type's devices that take jobs (not retired): hostname → its tags' names."""
        tags = {_field(t, "id", int, "tag"): _field(t, "name", str, "tag")
                for t in self.listing("tags")}
        return {_field(d, "hostname", str, "device"): {
                    tags.get(t, str(t)) for t in _field(d, "tags", list, "device")}
                for d in self.listing("devices", device_type=device_type)
                if d.get("health") != "Retired"}


def target_lines(entries: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(timestamp, line) of what the device printed, protocol lines from where they start."""
    out = []
    for entry in entries:
        if entry.get("lvl") != "target" or not isinstance(entry.get("msg"), str):
            continue
        line = entry["msg"].replace("\r", "")
        at = line.find("RTGATE-")
        out.append((str(entry.get("dt", "")), line[at:] if at >= 0 else line))
    return out


def lava_error(entries: list[dict[str, Any]]) -> str:
    """LAVA's own account of a failed job: its error results and error lines."""
    said = []
    for entry in entries:
        msg = entry.get("msg")
        if entry.get("lvl") == "results" and isinstance(msg, dict) and msg.get("error_msg"):
            said.append(f"{msg.get('error_type', 'Error')}: {msg['error_msg']}")
        elif entry.get("lvl") == "error" and isinstance(msg, str):
            said.append(msg)
    return "; ".join(dict.fromkeys(said)) or "no error recorded"


def token(name: str, what: str) -> str:
    """A secret from the environment variable ``name`` (an InputError naming ``what`` without)."""
    value = os.environ.get(name, "").strip()
    if not value:
        raise InputError(f"no {what}: set the environment variable {name}")
    return value
