"""The loads of a run on a remote board, its own and the controller's (the peer's), added to
its result: an early exit of one degrades the measurement."""

from __future__ import annotations

from dataclasses import dataclass

from rtgate.harness.assemble import exit_text
from rtgate.result import Load, Result


@dataclass(frozen=True)
class LoadRecord:
    name: str
    command: list[str]
    early_exit: int | None
    early_after_s: float | None
    where: str


@dataclass(frozen=True)
class LoadReport:
    records: list[LoadRecord]

    def apply(self, result: Result) -> Result:
        """The result with these loads added to its record, degraded if one died."""
        degraded = [f"load {r.name!r} ({r.where}) exited early {exit_text(r.early_exit)}"
                    + (f" after {r.early_after_s:.1f} s" if r.early_after_s is not None else "")
                    + f" (see raw/{r.name}.stderr)"
                    for r in self.records if r.early_exit is not None]
        status = result.status
        if degraded and status == "complete":
            status = "degraded"
        updated = result.model_copy(update={
            "loads": [*result.loads, *(Load(name=r.name, command=r.command,
                                            exit_status=r.early_exit,
                                            early_exit=r.early_exit is not None)
                                       for r in self.records)],
            "status": status,
            "reasons": list(dict.fromkeys([*result.reasons, *degraded])),
        })
        return Result.model_validate(updated.model_dump(by_alias=True))
