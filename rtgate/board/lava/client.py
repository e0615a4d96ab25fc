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
                data: bytes = resp.read()
                return data
        except urllib.error.HTTPError as exc:
            detail = " ".join(exc.read().decode("utf-8", "replace").split())[:400]
            raise LavaError(f"LAVA {method} {path}: HTTP {exc.code}: {detail}") from exc
        except (urllib.error.URLError, OSError) as exc:
            raise LavaError(f"LAVA server {self.base} unreachable: {exc}") from exc

    def submit(self, definition: str) -> int:
        answer = json.loads(self.call("POST", "jobs/", {"definition": definition}))
        return int(answer["job_ids"][0])

    def job(self, job_id: int) -> dict[str, Any]:
        job: dict[str, Any] = json.loads(self.call("GET", f"jobs/{job_id}/"))
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
        entries = yaml.load(text, Loader=yaml.CSafeLoader) if text.strip() else []
        return entries if isinstance(entries, list) else []

    def cancel(self, job_id: int) -> None:
        self.call("GET", f"jobs/{job_id}/cancel/")

    def listing(self, what: str, **filters: str) -> list[dict[str, Any]]:
        """Every entry of an API listing (devices, tags), through all of its pages."""
        found: list[dict[str, Any]] = []
        while True:
            query = urlencode({**filters, "limit": 100, "offset": len(found)})
            page = json.loads(self.call("GET", f"{what}/?{query}"))
            found += page["results"]
            if not page.get("next") or not page["results"]:
                return found

    def devices(self, device_type: str) -> dict[str, set[str]]:
        """The type's devices that take jobs (not retired): hostname → its tags' names."""
        tags = {t["id"]: t["name"] for t in self.listing("tags")}
        return {d["hostname"]: {tags.get(t, str(t)) for t in d["tags"]}
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
