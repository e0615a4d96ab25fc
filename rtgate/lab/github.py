"""GitHub's REST API as the lab uses it: a GitHub App's installation token, minted from the
App's private key, and the self-hosted runner endpoints (just-in-time registration, list,
delete).

The rules, from GitHub's documentation:
- the App's JWT is RS256 with `iat` 60 s in the past, `exp` at most 10 minutes ahead and `iss`
  the client ID or App ID ("Generating a JSON Web Token (JWT) for a GitHub App",
  docs.github.com/en/apps/creating-github-apps/authenticating-with-a-github-app/
  generating-a-json-web-token-jwt-for-a-github-app);
- `POST /app/installations/{id}/access_tokens` answers 201 with `token` and `expires_at`, one
  hour ahead ("Create an installation access token for an app", docs.github.com/en/rest/apps/
  apps#create-an-installation-access-token-for-an-app);
- `POST /repos/{owner}/{repo}/actions/runners/generate-jitconfig` (or `/orgs/{org}/…`) takes
  `name`, `runner_group_id`, `labels` (1 to 100) and `work_folder` and answers 201 with
  `runner` and `encoded_jit_config`, or 404, 409 (a runner of that name exists) or 422;
  `GET …/actions/runners` pages with `per_page` (at most 100) and `page` and answers
  `total_count` and `runners`; `DELETE …/actions/runners/{runner_id}` answers 204 or 422
  (docs.github.com/en/rest/actions/self-hosted-runners);
- an expired or revoked token is 401 "Bad credentials"; every request names a User-Agent
  (docs.github.com/en/rest/using-the-rest-api/getting-started-with-the-rest-api).
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from rtgate import __version__
from rtgate.errors import InputError

API_VERSION = "2022-11-28"
# GitHub's rules for the App's JWT (module docstring): backdated against clock drift, and an
# expiry below the 10-minute limit even with that drift.
JWT_BACKDATE_S = 60
JWT_LIFETIME_S = 540
PER_PAGE = 100
_ERROR_TEXT = 300  # of an error answer's body, in a log line


class ApiError(Exception):
    """A request that did not get the answer it needed: an HTTP status (None for no answer:
    refused, reset, timed out), what the API said, and what was asked."""

    def __init__(self, what: str, status: int | None, message: str,
                 retry_after_s: float | None = None) -> None:
        super().__init__(f"{what}: {status or 'no answer'}: {message}")
        self.status = status
        self.retry_after_s = retry_after_s
        """How long GitHub asked us to wait (a rate limit), if it did."""


def retry_after(headers: Mapping[str, str], now: float) -> float | None:
    """GitHub's rate limits: `retry-after` seconds (a secondary limit), else, with
    `x-ratelimit-remaining: 0`, until `x-ratelimit-reset` (epoch seconds) — "Rate limits for
    the REST API", docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api."""
    try:
        if headers.get("retry-after"):
            return max(0.0, float(headers["retry-after"]))
        if headers.get("x-ratelimit-remaining") == "0" and headers.get("x-ratelimit-reset"):
            return max(0.0, float(headers["x-ratelimit-reset"]) - now)
    except ValueError:
        return None
    return None


@dataclass(frozen=True)
class Scope:
    """Where runners register: a repository, or an organisation (repo None)."""

    owner: str
    repo: str | None

    @property
    def path(self) -> str:
        return f"/repos/{self.owner}/{self.repo}" if self.repo else f"/orgs/{self.owner}"


@dataclass(frozen=True)
class InstallationToken:
    token: str
    expires_at: datetime


@dataclass(frozen=True)
class Runner:
    id: int
    name: str
    status: str
    busy: bool


@dataclass(frozen=True)
class JitConfig:
    runner: Runner
    encoded: str


def read_private_key(path: Path) -> bytes:
    """The App's PEM key, refused when others may read it (it is the App's identity)."""
    try:
        st = path.stat()
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read the App's private key: {exc.strerror}", path=path) from exc
    if st.st_mode & 0o077:
        raise InputError(f"the App's private key is readable by others (mode "
                         f"{st.st_mode & 0o777:o}): chmod 600 it", path=path)
    if b"PRIVATE KEY-----" not in data:
        raise InputError("not a PEM private key (download it from the App's settings page)",
                         path=path)
    return data


def app_jwt(app_id: str, private_key: bytes, now: float | None = None) -> str:
    """The App's own credential for the token endpoint (GitHub's JWT rules, module docstring)."""
    try:
        import jwt  # PyJWT, the `runner` extra: only a lab controller needs it
    except ImportError as exc:
        raise InputError("PyJWT is not installed: pip install 'rtgate[runner]' "
                         "(docs/lab.md)") from exc
    issued = int(time.time() if now is None else now) - JWT_BACKDATE_S
    try:
        return jwt.encode({"iat": issued, "exp": issued + JWT_LIFETIME_S, "iss": app_id},
                          private_key, algorithm="RS256")
    except (ValueError, TypeError) as exc:
        raise InputError(f"the App's private key cannot sign: {exc}") from exc


def _parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


class GitHub:
    """The few REST calls the lab makes, each answered or raised as an ApiError."""

    def __init__(self, api: str, timeout_s: float) -> None:
        self.api = api.rstrip("/")
        self.timeout_s = timeout_s

    def _call(self, what: str, method: str, path: str, auth: str, body: object = None,
              expect: int = 200) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.api + path, data=data, method=method, headers={
            "Accept": "application/vnd.github+json", "X-GitHub-Api-Version": API_VERSION,
            "Authorization": f"Bearer {auth}", "User-Agent": f"rtgate-lab/{__version__}",
            **({"Content-Type": "application/json"} if data is not None else {})})
        wait = None
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as answer:
                status, raw = answer.status, answer.read()
        except urllib.error.HTTPError as exc:
            status, raw = exc.code, exc.read()
            wait = retry_after({k.lower(): v for k, v in exc.headers.items()}, time.time())
        except (OSError, ValueError) as exc:  # refused, reset, timed out, TLS, bad URL
            raise ApiError(what, None, str(getattr(exc, "reason", exc))) from exc
        if status != expect:
            try:
                message = str(json.loads(raw).get("message", ""))
            except (ValueError, AttributeError):
                message = raw.decode(errors="replace")
            raise ApiError(what, status, " ".join(message.split())[:_ERROR_TEXT] or "(no text)",
                           wait)
        if status == 204:
            return None
        try:
            return json.loads(raw)
        except ValueError as exc:
            raise ApiError(what, status, "the answer is not JSON") from exc

    def installation_token(self, app_jwt: str, installation_id: int) -> InstallationToken:
        what = f"installation token ({installation_id})"
        answer = self._call(what, "POST", f"/app/installations/{installation_id}/access_tokens",
                            app_jwt, body={}, expect=201)
        try:
            return InstallationToken(str(answer["token"]), _parse_time(answer["expires_at"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise ApiError(what, 201, f"no token in the answer ({exc})") from exc

    def generate_jitconfig(self, token: str, scope: Scope, name: str, labels: list[str],
                           runner_group_id: int, work_folder: str = "_work") -> JitConfig:
        what = f"generate-jitconfig {name}"
        answer = self._call(what, "POST", f"{scope.path}/actions/runners/generate-jitconfig",
                            token, body={"name": name, "runner_group_id": runner_group_id,
                                         "labels": labels, "work_folder": work_folder},
                            expect=201)
        try:
            return JitConfig(_runner(answer["runner"]), str(answer["encoded_jit_config"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise ApiError(what, 201, f"no runner or JIT config in the answer ({exc})") from exc

    def list_runners(self, token: str, scope: Scope) -> list[Runner]:
        runners: list[Runner] = []
        for page in range(1, 1000):
            answer = self._call("list runners", "GET", f"{scope.path}/actions/runners"
                                f"?per_page={PER_PAGE}&page={page}", token)
            try:
                batch = [_runner(r) for r in answer["runners"]]
                total = int(answer["total_count"])
            except (KeyError, TypeError, ValueError) as exc:
                raise ApiError("list runners", 200, f"unexpected answer ({exc})") from exc
            runners += batch
            if len(batch) < PER_PAGE or len(runners) >= total:
                break
        return runners

    def delete_runner(self, token: str, scope: Scope, runner_id: int) -> bool:
        """Deregister a runner; False when GitHub no longer has it (404)."""
        try:
            self._call(f"delete runner {runner_id}", "DELETE",
                       f"{scope.path}/actions/runners/{runner_id}", token, expect=204)
        except ApiError as exc:
            if exc.status == 404:
                return False
            raise
        return True


def _runner(item: Any) -> Runner:
    return Runner(int(item["id"]), str(item["name"]), str(item.get("status", "")),
                  bool(item.get("busy", False)))
