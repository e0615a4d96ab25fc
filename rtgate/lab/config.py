"""The controller's lab file (`/etc/rtgate/lab.yml`): the GitHub App, where runners register,
the runner install and user, and the board instances this controller serves.

Root-owned and read by root only (`rtgate lab setup`, `rtgate lab runner`): it names the App's
private key. Nothing in it comes from a repository checkout.
"""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from rtgate.errors import InputError
from rtgate.yamlsource import load_yaml

DEFAULT_CONFIG = Path("/etc/rtgate/lab.yml")
# A board instance is a file in bench/boards/ and a runner name's first part (the workflow's
# first step checks the same pattern); the registration adds "-" and 8 hex digits.
BOARD_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,54}")
_NAME = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$", max_length=100)]


class _LabModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class GitHubApp(_LabModel):
    api: str = "https://api.github.com"
    app_id: str = Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9.]+$")
    """The App's client ID (GitHub recommends it) or its numeric App ID: the JWT's `iss`."""
    installation_id: int = Field(gt=0)
    private_key: Path
    owner: _NAME
    repo: _NAME | None = None
    """The repository for repository runners; none for organisation runners."""
    runner_group_id: int | None = Field(default=None, gt=0)
    """The runner group: for an organisation the lab's own group (required), for a
    repository 1, the default group, unless said."""
    timeout_s: float = Field(default=30, gt=0, le=600)

    @field_validator("app_id", mode="before")
    @classmethod
    def _app_id_text(cls, value: object) -> object:
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value

    @field_validator("api")
    @classmethod
    def _https(cls, value: str) -> str:
        url = urlsplit(value)
        if url.scheme == "https" and url.hostname:
            return value.rstrip("/")
        try:
            loopback = url.hostname is not None and ipaddress.ip_address(url.hostname).is_loopback
        except ValueError:
            loopback = False
        if url.scheme == "http" and loopback:  # a local fake of the API, as the tests run
            return value.rstrip("/")
        raise ValueError("the API must be https:// (plain http only on a loopback address)")

    @property
    def group_id(self) -> int:
        if self.runner_group_id is not None:
            return self.runner_group_id
        if self.repo is None:
            raise InputError("github.runner_group_id: organisation runners need the lab's "
                             "runner group id")
        return 1


class RunnerSetup(_LabModel):
    install_dir: Path = Path("/opt/actions-runner")
    """The unpacked actions/runner release, root-owned: copied afresh for every job."""
    user: _NAME = "rtgate-runner"
    state_dir: Path = Path("/srv/rtgate")
    """Each board's jobs/, results/, cache-main/ and cache-pr/ are under state_dir/BOARD/."""
    env_dir: Path = Path("/etc/rtgate/runner")
    """`rtgate lab setup` writes BOARD.env here; every job's runner gets it as its `.env`."""
    python: Path = Path("/opt/rtgate/venv/bin/python")
    builder: str = "sudo -n /usr/local/sbin/rtgate-builder"
    labels: tuple[_NAME, ...] = ("self-hosted", "linux", "rtgate-lab")
    """Labels of every runner; the board's kind and `board-BOARD` are added."""
    backoff_s: float = Field(default=5, gt=0)
    backoff_cap_s: float = Field(default=600, gt=0)
    min_uptime_s: float = Field(default=30, ge=0)
    """A runner that ends sooner than this counts as a failure for the backoff: a runner that
    cannot start must not turn into a registration loop."""
    stop_grace_s: float = Field(default=60, gt=0)
    """After SIGTERM, how long the runner may take to end before it is killed."""
    cgroup: Literal["auto", "off"] | Path = "auto"
    """Where each runner gets a cgroup that is killed with its job (rtgate.lab.cgroup): auto,
    the unit's own (rtgate-runner@BOARD.service, Delegate=yes); off; or a cgroup v2 directory
    delegated to the supervisor."""


class BoardInstance(_LabModel):
    kind: _NAME
    user: _NAME | None = None
    """The board's own runner user, if it has one (else runner.user)."""


class LabConfig(_LabModel):
    github: GitHubApp
    runner: RunnerSetup = RunnerSetup()
    boards: dict[str, BoardInstance] = Field(min_length=1)

    @field_validator("boards")
    @classmethod
    def _board_names(cls, value: dict[str, BoardInstance]) -> dict[str, BoardInstance]:
        for name in value:
            if not BOARD_NAME.fullmatch(name):
                raise ValueError(f"board {name!r}: letters, digits, '.', '_', '-', at most "
                                 "55 characters, not starting with a punctuation mark")
        return value

    def board(self, name: str, path: Path) -> BoardInstance:
        if name not in self.boards:
            raise InputError(f"no board {name!r} here (boards: {', '.join(self.boards)})",
                             path=path)
        return self.boards[name]

    def user_of(self, name: str) -> str:
        return self.boards[name].user or self.runner.user

    def labels_of(self, name: str) -> list[str]:
        return list(dict.fromkeys([*self.runner.labels, self.boards[name].kind,
                                   f"board-{name}"]))


def load(path: Path) -> LabConfig:
    doc = load_yaml(path)
    try:
        config = LabConfig.model_validate(doc.data)
    except ValidationError as exc:
        raise doc.validation_error(exc) from exc
    try:
        config.github.group_id  # noqa: B018 - validates the scope now, not at the first call
    except InputError as exc:
        raise InputError(str(exc), path=path) from exc
    return config
