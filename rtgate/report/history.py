"""The history store: an append-only JSON Lines index plus one directory per run.

    HISTORY/index.jsonl          one RunSummary per line, oldest merge first
    HISTORY/index.corrupt.jsonl  lines that could not be read, kept verbatim (never lost)
    HISTORY/runs/<run>/          result.json, junit.xml, raw/<tool outputs>
    HISTORY/index.lock           taken by every writer

Publishing re-merges the same runs again and again and several CI jobs may publish at once, so a
merge is idempotent by run id, serialised by an exclusive lock, and replaces the index by
write-then-rename: a reader or a crash never sees half an index, and no earlier run is dropped.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from rtgate.filelock import locked
from rtgate.report.runs import RAW, RESULT_NAME, RunFiles, load_run
from rtgate.report.summary import RunSummary
from rtgate.result import write_atomic

INDEX = "index.jsonl"
CORRUPT = "index.corrupt.jsonl"
LOCK = "index.lock"
RUNS = "runs"


@dataclass
class MergeReport:
    added: list[str] = field(default_factory=list)
    already: list[str] = field(default_factory=list)
    corrupt: list[str] = field(default_factory=list)
    """One message per corrupt index line set aside: ``index.jsonl:LINE: problem``."""


@dataclass(frozen=True)
class _Line:
    text: str
    summary: RunSummary | None
    problem: str | None


def _parse(text: str) -> _Line:
    try:
        return _Line(text, RunSummary.model_validate_json(text), None)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        return _Line(text, None, f"{where}: {first['msg']}" if where else first["msg"])


class History:
    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.index = self.root / INDEX
        self.corrupt = self.root / CORRUPT

    def run_dir(self, summary: RunSummary) -> Path:
        return self.root / RUNS / summary.dir

    def _lines(self) -> list[_Line]:
        if not self.index.exists():
            return []
        text = self.index.read_text(encoding="utf-8", errors="surrogateescape")
        return [_parse(line) for line in text.splitlines() if line.strip()]

    def entries(self) -> list[RunSummary]:
        """Every readable run in the index, in merge order (corrupt lines are skipped)."""
        return [line.summary for line in self._lines() if line.summary is not None]

    def load(self, summary: RunSummary) -> RunFiles:
        return load_run(self.run_dir(summary) / RESULT_NAME)

    def _store(self, run: RunFiles, summary: RunSummary) -> None:
        """Copy a run's files into its directory; a half-copied directory is never visible."""
        final = self.run_dir(summary)
        final.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=final.parent, prefix=f".{summary.dir}."))
        try:
            # The original bytes, not a re-serialisation: the history keeps what it was given.
            shutil.copyfile(run.result_path, staging / RESULT_NAME)
            if run.junit:
                shutil.copyfile(run.junit, staging / run.junit.name)
            for raw in run.raw:
                (staging / RAW).mkdir(exist_ok=True)
                shutil.copyfile(raw, staging / RAW / raw.name)
            # Left over by a merge that died after copying but before indexing: not indexed, so
            # nothing refers to it yet.
            if final.exists():
                shutil.rmtree(final)
            staging.rename(final)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise

    def merge(self, runs: list[RunFiles]) -> MergeReport:
        report = MergeReport()
        with locked(self.root / LOCK):
            lines = self._lines()
            bad = [(n, line) for n, line in enumerate(lines, 1) if line.summary is None]
            if bad:
                with open(self.corrupt, "a", encoding="utf-8", errors="surrogateescape") as fh:
                    fh.writelines(line.text + "\n" for _, line in bad)
                report.corrupt = [f"{self.index}:{n}: {line.problem} (moved to {CORRUPT})"
                                  for n, line in bad]
            known = {line.summary.run_id for line in lines if line.summary}
            kept = [line.text for line in lines if line.summary]
            for run in runs:
                summary = run.summary
                if summary.run_id in known:
                    report.already.append(summary.run_id)
                    continue
                self._store(run, summary)
                kept.append(json.dumps(summary.model_dump(mode="json"), ensure_ascii=False))
                known.add(summary.run_id)
                report.added.append(summary.run_id)
            if report.added or report.corrupt:
                write_atomic(self.index, "".join(t + "\n" for t in kept))
        for message in report.corrupt:
            print(f"rtgate: {message}", file=sys.stderr)
        return report
