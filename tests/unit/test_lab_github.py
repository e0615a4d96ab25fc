"""The lab's GitHub client against the loopback fake of GitHub's REST endpoints
(tests/fakegithub.py, whose docstring cites what GitHub documents for each)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import jwt
import pytest
from fakegithub import SLOW, FakeGitHub, app_key

from rtgate.errors import InputError
from rtgate.lab.github import (
    JWT_LIFETIME_S,
    ApiError,
    GitHub,
    Scope,
    app_jwt,
    read_private_key,
    retry_after,
)

APP_ID = "Iv23liFAKE"
INSTALLATION = 7654321
REPO = Scope("lab", "rtgate")
ORG = Scope("lab-org", None)
KEYS = app_key()


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    github = FakeGitHub(app_id=APP_ID, public_key=KEYS[1], installation_id=INSTALLATION,
                        scopes=("/repos/lab/rtgate", "/orgs/lab-org"), groups=(1, 3),
                        slow_s=1.5)
    with github.running():
        yield github


def token(fake: FakeGitHub) -> str:
    return GitHub(fake.url, 5).installation_token(app_jwt(APP_ID, KEYS[0]), INSTALLATION).token


def test_the_apps_jwt_follows_githubs_rules() -> None:
    """RS256; iat 60 s back; exp at most 10 minutes after now; iss the App's ID."""
    now = 1_800_000_000
    claims = jwt.decode(app_jwt(APP_ID, KEYS[0], now=now), KEYS[1], algorithms=["RS256"],
                        options={"verify_exp": False, "verify_iat": False})
    assert jwt.get_unverified_header(app_jwt(APP_ID, KEYS[0]))["alg"] == "RS256"
    assert claims == {"iat": now - 60, "exp": now - 60 + JWT_LIFETIME_S, "iss": APP_ID}
    assert claims["exp"] - now <= 600


def test_an_installation_token_is_minted_from_the_key(fake: FakeGitHub) -> None:
    minted = GitHub(fake.url, 5).installation_token(app_jwt(APP_ID, KEYS[0]), INSTALLATION)
    assert minted.token.startswith("ghs_") and minted.expires_at.tzinfo is not None
    assert fake.count("POST", "/access_tokens", 201) == 1


def test_a_jwt_github_cannot_verify_is_401(fake: FakeGitHub) -> None:
    other = app_key()[0]
    with pytest.raises(ApiError, match="401: A JSON web token could not be decoded") as exc:
        GitHub(fake.url, 5).installation_token(app_jwt(APP_ID, other), INSTALLATION)
    assert exc.value.status == 401
    # A JWT made an hour ago has expired.
    with pytest.raises(ApiError, match="401"):
        GitHub(fake.url, 5).installation_token(
            app_jwt(APP_ID, KEYS[0], now=time.time() - 3600), INSTALLATION)


def test_a_jit_runner_is_registered_with_its_name_labels_and_group(fake: FakeGitHub) -> None:
    api = GitHub(fake.url, 5)
    jit = api.generate_jitconfig(token(fake), REPO, "rpi5-0badf00d",
                                 ["self-hosted", "rpi5", "board-rpi5"], 1)
    assert (jit.runner.name, jit.runner.status, jit.runner.busy) == ("rpi5-0badf00d", "offline",
                                                                     False)
    assert jit.encoded and fake.registered[0].labels == ["self-hosted", "rpi5", "board-rpi5"]
    # An organisation's runner goes to its runner group.
    api.generate_jitconfig(token(fake), ORG, "rpi5-0badf00e", ["rpi5"], 3)
    assert fake.registered[1].group_id == 3 and fake.registered[1].scope == "/orgs/lab-org"


def test_a_name_in_use_is_409_and_a_bad_body_422(fake: FakeGitHub) -> None:
    api, tok = GitHub(fake.url, 5), token(fake)
    api.generate_jitconfig(tok, REPO, "rpi5-0badf00d", ["rpi5"], 1)
    with pytest.raises(ApiError, match="409: Already exists - A runner with the name "
                       "rpi5-0badf00d already exists"):
        api.generate_jitconfig(tok, REPO, "rpi5-0badf00d", ["rpi5"], 1)
    with pytest.raises(ApiError, match="422"):
        api.generate_jitconfig(tok, REPO, "rpi5-1badf00d", [], 1)
    with pytest.raises(ApiError, match="404"):  # no such runner group
        api.generate_jitconfig(tok, ORG, "rpi5-1badf00d", ["rpi5"], 99)


def test_an_expired_token_is_401_bad_credentials(fake: FakeGitHub) -> None:
    api, tok = GitHub(fake.url, 5), token(fake)
    fake.expire_tokens()
    with pytest.raises(ApiError, match="401: Bad credentials") as exc:
        api.list_runners(tok, REPO)
    assert exc.value.status == 401


@pytest.mark.parametrize("status", [403, 500, 502, 503])
def test_server_errors_are_api_errors_with_their_status(fake: FakeGitHub, status: int) -> None:
    fake.answer_next("jitconfig", status)
    with pytest.raises(ApiError) as exc:
        GitHub(fake.url, 5).generate_jitconfig(token(fake), REPO, "rpi5-0badf00d", ["rpi5"], 1)
    assert exc.value.status == status


def test_a_slow_answer_is_no_answer_after_the_timeout(fake: FakeGitHub) -> None:
    fake.answer_next("token", SLOW)
    started = time.monotonic()
    with pytest.raises(ApiError, match="no answer") as exc:
        GitHub(fake.url, 0.5).installation_token(app_jwt(APP_ID, KEYS[0]), INSTALLATION)
    assert exc.value.status is None and time.monotonic() - started < 1.4


def test_nothing_listening_is_no_answer() -> None:
    with pytest.raises(ApiError, match="no answer"):
        GitHub("http://127.0.0.1:9", 2).list_runners("x", REPO)


def test_runners_are_listed_across_pages_and_deleted(fake: FakeGitHub) -> None:
    api, tok = GitHub(fake.url, 5), token(fake)
    for i in range(130):
        api.generate_jitconfig(tok, REPO, f"rpi5-{i:08x}", ["rpi5"], 1)
    runners = api.list_runners(tok, REPO)
    assert len(runners) == 130 and len({r.id for r in runners}) == 130
    assert fake.count("GET", "/actions/runners$") == 2
    assert api.delete_runner(tok, REPO, runners[0].id) is True
    assert api.delete_runner(tok, REPO, runners[0].id) is False  # 404: already gone
    assert len(api.list_runners(tok, REPO)) == 129


def test_the_private_key_must_be_private(tmp_path: Path) -> None:
    key = tmp_path / "app.pem"
    key.write_bytes(KEYS[0])
    key.chmod(0o644)
    with pytest.raises(InputError, match="readable by others"):
        read_private_key(key)
    key.chmod(0o600)
    assert read_private_key(key) == KEYS[0]
    key.write_text("not a key")
    with pytest.raises(InputError, match="not a PEM private key"):
        read_private_key(key)
    with pytest.raises(InputError, match="cannot read"):
        read_private_key(tmp_path / "missing.pem")


def test_a_rate_limit_says_how_long_to_wait(fake: FakeGitHub) -> None:
    """GitHub's rate limits: `retry-after` seconds, else `x-ratelimit-reset` once
    `x-ratelimit-remaining` is 0 (docs.github.com/en/rest/using-the-rest-api/
    rate-limits-for-the-rest-api)."""
    assert retry_after({"retry-after": "60"}, now=1000) == 60
    assert retry_after({"x-ratelimit-remaining": "0", "x-ratelimit-reset": "1600"},
                       now=1000) == 600
    assert retry_after({"x-ratelimit-remaining": "3", "x-ratelimit-reset": "1600"},
                       now=1000) is None
    assert retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, now=1000) is None
    fake.answer_next("list", 429)
    with pytest.raises(ApiError, match="429: You have exceeded a secondary rate limit") as exc:
        GitHub(fake.url, 5).list_runners(token(fake), REPO)
    assert exc.value.retry_after_s == 1
