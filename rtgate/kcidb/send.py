"""Sending a report to a KCIDB-NG endpoint: submit, then poll its status.

The protocol is kernelci/kcidb-ng's REST daemon (``kcidb-restd-rs/src/main.rs``, README
"Sending Data to the API" and "Checking Status"):

- ``POST {url}/submit`` with ``Authorization: Bearer <token>`` and the JSON report: 200 and
  ``{"id": ID, "status": "ok"}`` once spooled; 400 ``{"status": "error", "message": ...}`` when
  the body is no JSON; 401 when the token is refused; 500 when the spool could not be written.
- ``GET {url}/status?id=ID``: 200 with ``inprogress`` (still uploading), ``ready`` (waiting for
  the ingester), ``processed`` (validated and archived) or ``failed`` (the ingester refused it:
  "File failed to pass validation"); 404 ``notfound``.

What is retried: a connection that fails, a timeout, 429 and 5xx (the daemon's own 500 is a full
or unwritable spool), with growing pauses. What fails: a document the endpoint refuses (400 at
submit, ``failed`` at status) — the only outcome that fails the publishing step. A token refused
(401, 403) or retries run out is "not delivered": said, never a rejection of the report. A
report still ``ready`` when the status wait ends was accepted into the spool and is left to the
ingester. The token goes in a header only; any text printed has it masked.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

MAX_BODY = 64 * 1024
"""An endpoint's answer is a small JSON object: read no more of it."""
RETRYABLE = {429, 500, 502, 503, 504}


class SendOutcome(StrEnum):
    ACCEPTED = "accepted"
    """Processed: validated and archived by the ingester."""
    QUEUED = "queued"
    """Spooled, not yet processed when the status wait ended."""
    REJECTED = "rejected"
    """The endpoint refused the document."""
    UNDELIVERED = "undelivered"
    """Not sent: the token refused, or the endpoint unreachable after the retries."""


@dataclass(frozen=True)
class Endpoint:
    url: str
    token: str
    attempts: int = 5
    """Tries of each request when the answer is retryable."""
    pause_s: float = 2.0
    """The first pause between tries; it doubles each time."""
    timeout_s: float = 60.0
    status_wait_s: float = 300.0
    poll_s: float = 5.0


@dataclass(frozen=True)
class Sent:
    delivery: SendOutcome
    submission: str | None
    message: str


@dataclass(frozen=True)
class _Answer:
    status: int | None  # None: no HTTP answer (connection, timeout)
    body: dict[str, object]
    text: str


class _Client:
    def __init__(self, endpoint: Endpoint, sleep: Callable[[float], None],
                 clock: Callable[[], float]) -> None:
        self.e = endpoint
        self.sleep = sleep
        self.clock = clock

    def mask(self, text: str) -> str:
        return text.replace(self.e.token, "***") if self.e.token else text

    def request(self, method: str, path: str, data: bytes | None = None) -> _Answer:
        req = urllib.request.Request(
            self.e.url.rstrip("/") + path, data=data, method=method,
            headers={"Authorization": f"Bearer {self.e.token}",
                     "Content-Type": "application/json", "Accept": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.e.timeout_s) as resp:  # noqa: S310
                return self._answer(resp.status, resp.read(MAX_BODY))
        except urllib.error.HTTPError as exc:
            return self._answer(exc.code, exc.read(MAX_BODY))
        except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            return _Answer(None, {}, self.mask(f"no answer: {reason}"))

    def _answer(self, status: int, raw: bytes) -> _Answer:
        text = self.mask(raw.decode("utf-8", "replace"))
        try:
            body = json.loads(text)
        except json.JSONDecodeError:
            body = {}
        return _Answer(status, body if isinstance(body, dict) else {}, " ".join(text.split())[:500])

    def retried(self, method: str, path: str, data: bytes | None = None) -> _Answer:
        pause = self.e.pause_s
        for attempt in range(1, self.e.attempts + 1):
            answer = self.request(method, path, data)
            if answer.status is not None and answer.status not in RETRYABLE:
                return answer
            if attempt < self.e.attempts:
                self.sleep(pause)
                pause *= 2
        return answer


def send(report: bytes, endpoint: Endpoint, *, sleep: Callable[[float], None] = time.sleep,
         clock: Callable[[], float] = time.monotonic) -> Sent:
    """Submit the report and wait for its status; see the module docstring."""
    if not endpoint.url.startswith(("https://", "http://")):
        raise ValueError("the KCIDB endpoint URL must be http(s)://")
    client = _Client(endpoint, sleep, clock)
    answer = client.retried("POST", "/submit", report)
    submission = answer.body.get("id")
    if answer.status == 200 and isinstance(submission, str) and submission.isalnum():
        return _poll(client, submission)
    if answer.status in (401, 403):
        return Sent(SendOutcome.UNDELIVERED, None, f"the endpoint refused the token (HTTP "
                                                f"{answer.status}): {answer.text}")
    if answer.status is None or answer.status in RETRYABLE:
        return Sent(SendOutcome.UNDELIVERED, None, f"no submission after {endpoint.attempts} "
                                                f"tries: {_said(answer)}")
    return Sent(SendOutcome.REJECTED, None, f"the endpoint refused the report: {_said(answer)}")


def _poll(client: _Client, submission: str) -> Sent:
    path = "/status?" + urllib.parse.urlencode({"id": submission})
    end = client.clock() + client.e.status_wait_s
    state = "ready"
    while True:
        answer = client.retried("GET", path)
        state = str(answer.body.get("status", "")) or state
        if answer.status == 200 and state == "processed":
            return Sent(SendOutcome.ACCEPTED, submission, f"submission {submission} processed")
        if answer.status == 200 and state == "failed":
            return Sent(SendOutcome.REJECTED, submission,
                        f"submission {submission} failed the ingester's validation: "
                        f"{_said(answer)}")
        if client.clock() >= end:
            return Sent(SendOutcome.QUEUED, submission,
                        f"submission {submission} still {state} after "
                        f"{client.e.status_wait_s:g} s: accepted into the spool, left to the "
                        "ingester")
        client.sleep(client.e.poll_s)


def _said(answer: _Answer) -> str:
    where = f"HTTP {answer.status}" if answer.status is not None else "no HTTP answer"
    message = answer.body.get("message")
    return f"{where}: {message if isinstance(message, str) else answer.text}"[:500]
