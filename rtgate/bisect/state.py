"""A bisect's state file: the measurements made, in order, so that an interrupted bisect resumes."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from rtgate.bisect.doc import SCHEMA_ID, Step
from rtgate.errors import InputError
from rtgate.jsonfile import write_atomic


@dataclass
class Log:
    """The measurements made, in order: the state file. Replayed first, then measured."""

    path: Path | None
    identity: dict[str, Any]
    steps: list[Step] = field(default_factory=list)
    replayed: int = 0

    @classmethod
    def open(cls, path: Path | None, identity: dict[str, Any]) -> Log:
        log = cls(path, identity)
        if path is None or not path.exists():
            return log
        try:
            data = json.loads(path.read_text())
            if data.get("identity") != identity:
                raise InputError("the state file is of another bisect (series, ends, board or "
                                 "settings differ): give another --out or remove it", path=path)
            log.steps = [Step.model_validate(s) for s in data["steps"]]
        except (json.JSONDecodeError, KeyError, TypeError, ValidationError) as exc:
            raise InputError(f"unreadable bisect state: {exc}", path=path) from exc
        return log

    def save(self) -> None:
        if self.path is not None:
            write_atomic(self.path, json.dumps(
                {"schema": SCHEMA_ID + "/state", "identity": self.identity,
                 "steps": [s.model_dump(mode="json") for s in self.steps]}, indent=2) + "\n")
