"""A bisect's state file: the measurements made, in order, so that an interrupted bisect resumes."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from rtgate.bisect.doc import SCHEMA_ID, Step
from rtgate.errors import InputError
from rtgate.jsonfile import read_model, write_atomic

STATE_ID = SCHEMA_ID + "/state"


class State(BaseModel):
    """The state file as read back: validated like every document rtgate is handed."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    schema_: Literal["rtgate/bisect/v1/state"] = Field(alias="schema")
    identity: dict[str, Any]
    steps: list[Step]


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
        state = read_model(path, State, STATE_ID, "bisect state")
        if state.identity != identity:
            raise InputError("the state file is of another bisect (series, ends, board or "
                             "settings differ): give another --out or remove it", path=path)
        log.steps = state.steps
        return log

    def save(self) -> None:
        if self.path is not None:
            write_atomic(self.path, json.dumps(
                {"schema": STATE_ID, "identity": self.identity,
                 "steps": [s.model_dump(mode="json") for s in self.steps]}, indent=2) + "\n")
