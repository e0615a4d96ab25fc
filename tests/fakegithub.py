"""A local fake of the GitHub REST endpoints the lab's runner supervisor calls, on 127.0.0.1,
answering as GitHub documents them, plus the few calls the runner stand-in
(tests/fakerunner/) makes in place of the real runner's own protocol.

What GitHub documents, and this fake does:
- `POST /app/installations/{installation_id}/access_tokens`, authenticated by the App's JWT
  (RS256; `iat`, `exp` at most 10 minutes ahead, `iss` the App's ID): 201 with `token`,
  `expires_at`; 401 when the JWT cannot be verified; 404 for another installation.
  docs.github.com/en/rest/apps/apps#create-an-installation-access-token-for-an-app and
  docs.github.com/en/apps/creating-github-apps/authenticating-with-a-github-app/
  generating-a-json-web-token-jwt-for-a-github-app
- `POST /repos/{owner}/{repo}/actions/runners/generate-jitconfig` and
  `POST /orgs/{org}/actions/runners/generate-jitconfig` with `name`, `runner_group_id`,
  `labels` (1-100), `work_folder`: 201 with `runner` and `encoded_jit_config`; 404 (no such
  runner group); 409 when a runner of that name exists; 422 for a body that does not validate.
- `GET …/actions/runners?per_page=&page=`: 200 with `total_count` and `runners` (`id`, `name`,
  `os`, `status` online/offline, `busy`, `labels`).
- `DELETE …/actions/runners/{runner_id}`: 204; 404 for no such runner; 422 while it runs a job.
  docs.github.com/en/rest/actions/self-hosted-runners
- Any of them with an expired or unknown installation token: 401 "Bad credentials"
  (docs.github.com/en/rest/using-the-rest-api/troubleshooting-the-rest-api); over a secondary
  rate limit, 429 with `retry-after` (docs.github.com/en/rest/using-the-rest-api/
  rate-limits-for-the-rest-api).
- An ephemeral (JIT) runner is removed by GitHub once its one job is done; one killed while
  idle stays registered, offline (docs.github.com/en/actions/hosting-your-own-runners/
  managing-self-hosted-runners/autoscaling-with-self-hosted-runners#using-just-in-time-runners).

A test scripts failures with ``answer_next(endpoint, *answers)``: an HTTP status (the body
GitHub gives for it) or ``SLOW`` (the normal answer, after ``slow_s``); ``token_ttl_s`` makes
tokens expire early, as a token revoked or minted on a skewed clock does.
"""

from __future__ import annotations

import base64
import json
import re
import secrets
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

SLOW = "slow"
DOCS = "https://docs.github.com/rest"
_MESSAGES = {
    401: "Bad credentials", 403: "Resource not accessible by integration", 404: "Not Found",
    409: "Already exists - A runner with the name already exists.",
    429: "You have exceeded a secondary rate limit. Please wait a few minutes before you try "
         "again.",
    422: "Validation Failed", 500: "Server Error", 502: "Server Error",
    503: "Service Unavailable"}


def app_key() -> tuple[bytes, bytes]:
    """A fresh App key pair: the private PEM (the App's download) and the public PEM (GitHub's)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo)
    return private, public


@dataclass
class FakeRunner:
    id: int
    name: str
    labels: list[str]
    scope: str
    group_id: int
    credential: str
    status: str = "offline"
    busy: bool = False
    connected: bool = False  # its JIT config has been used (it is good for one session)

    def json(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "os": "Linux", "status": self.status,
                "busy": self.busy, "runner_group_id": self.group_id,
                "labels": [{"id": i + 1, "name": n, "type": "custom"}
                           for i, n in enumerate(self.labels)]}


@dataclass
class Job:
    label: str
    seconds: float
    escape: bool = False  # the job leaves a process running in a session of its own
    script: str = ""  # a `run:` step for the runner to run (else it waits `seconds`)
    id: int = 0
    runner: str = ""
    env: dict[str, str] = field(default_factory=dict)
    done: bool = False
    cancelled: bool = False
    returncode: int | None = None  # the script's exit status
    log: str = ""  # the end of the script's output


class FakeGitHub:
    def __init__(self, *, app_id: str, public_key: bytes, installation_id: int,
                 scopes: tuple[str, ...] = ("/repos/lab/rtgate",),
                 groups: tuple[int, ...] = (1,), token_ttl_s: float = 3600,
                 slow_s: float = 3.0, first_job_id: int = 1) -> None:
        self.app_id = app_id
        # A workflow run's id is GitHub's, never given twice in a repository (the gate's run
        # directory RUN-ATTEMPT must be new): fakes serving one lab one after the other start
        # where the last one stopped.
        self.first_job_id = first_job_id
        self.public_key = public_key
        self.installation_id = installation_id
        self.scopes = scopes
        self.groups = groups
        self.token_ttl_s = token_ttl_s
        self.slow_s = slow_s
        self.lock = threading.RLock()
        self.runners: dict[int, FakeRunner] = {}
        self.tokens: dict[str, float] = {}  # token -> when it stops working (monotonic)
        self.log: list[tuple[str, str, int]] = []  # method, path, status
        self.scripted: dict[str, deque[int | str]] = {}
        self.jobs: list[Job] = []
        self.registered: list[FakeRunner] = []  # every registration, in order
        self.retry_after_s = 1
        self.refuse_sessions = False  # the broker turns every runner away (an outage)
        self._next_id = 40
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    @contextmanager
    def running(self) -> Iterator[FakeGitHub]:
        thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self.server.shutdown()
            self.server.server_close()

    # -- what a test does ---------------------------------------------------------------

    def answer_next(self, endpoint: str, *answers: int | str) -> None:
        """The next requests to ``endpoint`` (token, jitconfig, list, delete) get these."""
        with self.lock:
            self.scripted.setdefault(endpoint, deque()).extend(answers)

    def queue_job(self, label: str, seconds: float, escape: bool = False,
                  script: str = "") -> Job:
        with self.lock:
            job = Job(label, seconds, escape, script, id=self.first_job_id + len(self.jobs))
            self.jobs.append(job)
            return job

    def expire_tokens(self) -> None:
        with self.lock:
            self.tokens = dict.fromkeys(self.tokens, 0.0)

    def count(self, method: str, pattern: str, status: int | None = None) -> int:
        with self.lock:
            return sum(1 for m, p, s in self.log if m == method and re.search(pattern, p)
                       and (status is None or s == status))

    def runners_named(self, name: str) -> FakeRunner:
        with self.lock:
            return next(r for r in self.runners.values() if r.name == name)

    def names(self) -> list[str]:
        with self.lock:
            return sorted(r.name for r in self.runners.values())

    # -- the server ---------------------------------------------------------------------

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                pass

            def _serve(self, method: str) -> None:
                url = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else {}
                except ValueError:
                    body = None
                status, answer = fake.answer(method, url.path, parse_qs(url.query),
                                             self.headers.get("Authorization", ""), body)
                with fake.lock:
                    fake.log.append((method, url.path, status))
                data = b"" if answer is None else json.dumps(answer).encode()
                try:
                    self.send_response(status)
                    if status == 429:  # a secondary rate limit says when to come back
                        self.send_header("Retry-After", str(fake.retry_after_s))
                    if data:
                        self.send_header("Content-Type", "application/json; charset=utf-8")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # a client that gave up on a slow answer

            def do_GET(self) -> None:
                self._serve("GET")

            def do_POST(self) -> None:
                self._serve("POST")

            def do_DELETE(self) -> None:
                self._serve("DELETE")

        return Handler

    def _scripted(self, endpoint: str) -> tuple[int, Any] | None:
        with self.lock:
            queue = self.scripted.get(endpoint)
            answer = queue.popleft() if queue else None
        if answer is None:
            return None
        if answer == SLOW:
            time.sleep(self.slow_s)
            return None
        assert isinstance(answer, int)
        return _error(answer)

    def answer(self, method: str, path: str, query: dict[str, list[str]], auth: str,
               body: Any) -> tuple[int, Any]:
        if path.startswith("/_runner/"):
            return self._runner_side(path.removeprefix("/_runner/"), body)
        m = re.fullmatch(r"/app/installations/(\d+)/access_tokens", path)
        if m and method == "POST":
            return self._scripted("token") or self._token(int(m.group(1)), auth)
        m = re.fullmatch(r"(/repos/[^/]+/[^/]+|/orgs/[^/]+)/actions/runners"
                         r"(/generate-jitconfig|/(\d+))?", path)
        if not m:
            return _error(404)
        scope, tail, runner_id = m.groups()
        endpoint = {("POST", "/generate-jitconfig"): "jitconfig", ("GET", None): "list"}.get(
            (method, tail), "delete" if method == "DELETE" and runner_id else "")
        if not endpoint:
            return _error(404)
        scripted = self._scripted(endpoint)
        if scripted:
            return scripted
        if not self._authorised(auth):
            return _error(401)
        if scope not in self.scopes:
            return _error(404)
        if endpoint == "jitconfig":
            return self._jitconfig(scope, body)
        if endpoint == "list":
            return self._list(scope, query)
        return self._delete(scope, int(runner_id))

    def _token(self, installation_id: int, auth: str) -> tuple[int, Any]:
        scheme, _, token = auth.partition(" ")
        if scheme != "Bearer":
            return _error(401, "A JSON web token could not be decoded")
        try:
            claims = jwt.decode(token, self.public_key, algorithms=["RS256"],
                                options={"require": ["iat", "exp", "iss"]})
        except jwt.PyJWTError as exc:
            return _error(401, f"A JSON web token could not be decoded ({exc})")
        if str(claims["iss"]) != self.app_id:
            return _error(401, "A JSON web token could not be decoded (unknown issuer)")
        if claims["exp"] - time.time() > 600:
            return _error(401, "'Expiration time' claim ('exp') is too far in the future")
        if installation_id != self.installation_id:
            return _error(404)
        token = "ghs_" + secrets.token_hex(18)
        with self.lock:
            self.tokens[token] = time.monotonic() + self.token_ttl_s
        expires = datetime.now(UTC) + timedelta(hours=1)
        return 201, {"token": token, "expires_at": expires.strftime("%Y-%m-%dT%H:%M:%SZ"),
                     "permissions": {"administration": "write"},
                     "repository_selection": "selected"}

    def _authorised(self, auth: str) -> bool:
        scheme, _, token = auth.partition(" ")
        with self.lock:
            return scheme in ("Bearer", "token") and self.tokens.get(token, 0) > time.monotonic()

    def _jitconfig(self, scope: str, body: Any) -> tuple[int, Any]:
        if not isinstance(body, dict):
            return _error(400, "Problems parsing JSON")
        name, group, labels = body.get("name"), body.get("runner_group_id"), body.get("labels")
        if not isinstance(name, str) or not name:
            return _error(422, "Invalid request.\n\n\"name\" wasn't supplied.")
        if not isinstance(group, int):
            return _error(422, "Invalid request.\n\n\"runner_group_id\" wasn't supplied.")
        if not (isinstance(labels, list) and 1 <= len(labels) <= 100
                and all(isinstance(x, str) and x for x in labels)):
            return _error(422, "Invalid request.\n\nFor 'properties/labels', 1 to 100 labels.")
        if group not in self.groups:
            return _error(404)
        with self.lock:
            if any(r.name == name and r.scope == scope for r in self.runners.values()):
                return _error(409, f"Already exists - A runner with the name {name} already "
                              "exists.")
            self._next_id += 1
            runner = FakeRunner(self._next_id, name, list(labels), scope, group,
                                secrets.token_hex(16))
            self.runners[runner.id] = runner
            self.registered.append(runner)
        files = {".runner": {"agentId": runner.id, "agentName": name, "poolId": group,
                             "serverUrl": self.url, "gitHubUrl": f"https://github.com{scope}",
                             "workFolder": body.get("work_folder", "_work"), "ephemeral": True},
                 ".credentials": {"scheme": "OAuthAccessToken",
                                  "data": {"token": runner.credential}}}
        encoded = {n: base64.b64encode(json.dumps(c).encode()).decode() for n, c in files.items()}
        return 201, {"runner": runner.json(),
                     "encoded_jit_config": base64.b64encode(json.dumps(encoded).encode()).decode()}

    def _list(self, scope: str, query: dict[str, list[str]]) -> tuple[int, Any]:
        per_page = min(int(query.get("per_page", ["30"])[0]), 100)
        page = int(query.get("page", ["1"])[0])
        with self.lock:
            mine = sorted((r for r in self.runners.values() if r.scope == scope),
                          key=lambda r: r.id)
            chunk = mine[(page - 1) * per_page: page * per_page]
            return 200, {"total_count": len(mine), "runners": [r.json() for r in chunk]}

    def _delete(self, scope: str, runner_id: int) -> tuple[int, Any]:
        with self.lock:
            runner = self.runners.get(runner_id)
            if runner is None or runner.scope != scope:
                return _error(404)
            if runner.busy:
                return _error(422, f"Bad request - Runner \"{runner.name}\" is still running a "
                              "job\"")
            del self.runners[runner_id]
            return 204, None

    def _runner_side(self, call: str, body: Any) -> tuple[int, Any]:
        """The stand-in's side of the runner protocol: session, job, completion."""
        with self.lock:
            runner = self.runners.get(int(body.get("runner_id", 0)))
            if runner is None or runner.credential != body.get("credential"):
                return 404, {"message": "runner not registered"}
            if call == "connect":
                if runner.connected or self.refuse_sessions:
                    return 409, {"message": "the JIT configuration was used already"}
                runner.connected, runner.status = True, "online"
                return 200, {}
            if call == "poll":
                job = next((j for j in self.jobs if not j.runner and j.label in runner.labels),
                           None)
                if job is None:
                    return 200, {}
                job.runner, runner.busy = runner.name, True
                return 200, {"job": {"id": job.id, "seconds": job.seconds,
                                     "escape": job.escape, "script": job.script}}
            if call == "done":
                job = self.jobs[int(body["job_id"]) - self.first_job_id]
                job.env, job.done = dict(body.get("env", {})), True
                job.cancelled = bool(body.get("cancelled"))
                job.returncode, job.log = body.get("returncode"), str(body.get("log", ""))
                del self.runners[runner.id]  # an ephemeral runner goes with its job
                return 200, {}
            if call == "disconnect":
                runner.status = "offline"
                return 200, {}
        return 404, {"message": "unknown call"}


def _error(status: int, message: str | None = None) -> tuple[int, Any]:
    return status, {"message": message or _MESSAGES.get(status, "Error"),
                    "documentation_url": DOCS, "status": str(status)}
