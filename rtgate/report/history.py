"""The history store: an append-only JSON Lines index plus one directory per run.

    HISTORY/index.jsonl          one RunSummary per line, in publication order
    HISTORY/index.corrupt.jsonl  lines that could not be read, kept verbatim (never lost)
    HISTORY/runs/<run>/          result.json, raw/<tool outputs>
    HISTORY/index.lock           taken by every writer

Each index line carries the run's digest (summary.RunDigest): the budget and verdict as judged
when it was published, its kernel version, each thread's numbers and its histogram on log-spaced
bins, so that the site's long-term views read the index alone. Retention, per board × flavor ×
scenario: the index line of every run for ever; the raw tool outputs (``raw/``: cyclictest's dense
histogram text, the block maxima) of the newest KEEP_RAW runs; the ``result.json`` (1 µs
histograms, block maxima, environment) of the newest KEEP_RESULTS. docs/publishing.md has the
figures and what it means for the results branch.

Publishing re-merges the same runs again and again and several CI jobs may publish at once, so a
merge is idempotent by run id, serialised by an exclusive lock, and replaces the index by
write-then-rename: a reader or a crash never sees half an index, and no earlier run is dropped.

Runs are ordered by publication: each run added gets the next number of one sequence, under the
lock, with the provenance its publisher states. The ``start`` inside a result is whatever the
board's clock (or whoever wrote the file) said: it orders the runs of one publication only, and
a start in the future is refused, or one run dated 2099 would be every later page's "latest".
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pydantic import ValidationError

from rtgate import inputfile, paths
from rtgate.ciout import escape
from rtgate.errors import InputError
from rtgate.filelock import locked
from rtgate.jsonfile import write_atomic
from rtgate.layout import RAW, RESULT
from rtgate.report.digest import summarize
from rtgate.report.judge import Judge
from rtgate.report.provenance import Provenance, Publication
from rtgate.report.runs import RunFiles, collect, load_run
from rtgate.report.summary import RunSummary
from rtgate.result import Result, load_result

INDEX = "index.jsonl"
CORRUPT = "index.corrupt.jsonl"
LOCK = "index.lock"
RUNS = "runs"
# How far a board's clock may run ahead of the publisher's before its start counts as a lie:
# NTP-synchronised lab machines agree to well under a second, a board without a real-time clock
# falls behind (into the past) rather than ahead, and minutes cover a publisher lagging behind.
CLOCK_SKEW = timedelta(minutes=10)
# Raw outputs kept per board × flavor × scenario: more than the site shows in full
# (site.FULL_RUNS), so that a site with a larger window can be rebuilt from the store; results
# for about half a year of twice-daily runs, what an A/B baseline or a bisect looks back on.
KEEP_RAW = 100
KEEP_RESULTS = 400


def publication_order(runs: list[RunFiles], now: datetime) -> list[RunFiles]:
    """The runs of one publication in the order they are added: by start, then run id.

    A run whose start is more than CLOCK_SKEW after ``now`` refuses the whole publication (exit
    2, naming its file): nothing is merged or rendered until its result is fixed or left out.
    """
    for run in runs:
        started = run.summary.started
        if started is not None and started > now + CLOCK_SKEW:
            raise InputError(
                f"start {run.result.start} is in the future: later than now "
                f"({now:%Y-%m-%dT%H:%M:%SZ}) plus the clock skew allowed "
                f"({CLOCK_SKEW.total_seconds() / 60:g} min); not published (is the board's "
                "clock right?)", path=run.result_path)
    return sorted(runs, key=lambda r: r.summary.order)


def runs_of(paths: list[str | Path]) -> list[RunFiles]:
    """The runs named (``runs.collect``), a history's in publication order: a history root holds
    an index, and its runs carry their publication number (``compare`` then takes the last one
    published, never the one whose board claimed the latest start)."""
    runs: list[RunFiles] = []
    for given in map(Path, paths):
        if (given / INDEX).is_file():
            runs += History(given).runs()
        else:
            runs += collect([given])
    return runs


def _stored(path: Path) -> Result:
    """A result this store took in after load_result read it, read again by pydantic's own JSON
    parser (an hour's run in a tenth of the time); whatever that parser does not take (an older
    schema version, a file changed since) goes through load_result and its one-line errors."""
    try:
        return Result.model_validate_json(inputfile.read_bytes(path, inputfile.RESULT))
    except ValidationError:
        return load_result(path)


@dataclass
class MergeReport:
    added: list[str] = field(default_factory=list)
    already: list[str] = field(default_factory=list)
    corrupt: list[str] = field(default_factory=list)
    """One message per corrupt index line set aside: ``index.jsonl:LINE: problem``."""
    digested: list[str] = field(default_factory=list)
    """Runs from before digests whose digest was made now (judged by today's budgets)."""
    reduced: list[str] = field(default_factory=list)
    """Runs whose raw outputs were removed (older than the newest KEEP_RAW of their key)."""


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
        text = inputfile.read_bytes(self.index, inputfile.HISTORY).decode(
            "utf-8", errors="surrogateescape")
        return [_parse(line) for line in text.splitlines() if line.strip()]

    def entries(self) -> list[RunSummary]:
        """Every readable run in the index by publication sequence, oldest first (corrupt lines
        are skipped; lines from before the sequence keep their place at the front)."""
        summaries = [line.summary for line in self._lines() if line.summary is not None]
        return sorted(summaries, key=lambda s: s.publication.seq if s.publication else 0)

    def load(self, summary: RunSummary) -> RunFiles:
        run = load_run(self.run_dir(summary) / RESULT, _stored)
        return dataclasses.replace(run, publication=summary.publication)

    def load_or_say(self, summary: RunSummary) -> RunFiles | None:
        """The run; one whose stored result cannot be read is reported and left out (its
        index line still counts)."""
        try:
            run = self.load(summary)
        except InputError as exc:
            print(f"rtgate: {exc.oneline()} (run {escape(summary.run_id)} not published in "
                  "full)",
                  file=sys.stderr)
            return None
        for note in run.skipped:
            print(f"rtgate: {escape(note)}", file=sys.stderr)
        return run

    def runs(self) -> Iterator[RunFiles]:
        """Every run in the history that still has its result (the retention leaves only the
        index line of older ones), in publication order; one whose stored result cannot be
        read is reported and left where it is, so that one bad directory does not stop every
        later publication."""
        for summary in self.entries():
            if not self.run_dir(summary).exists() and summary.digest is not None:
                continue  # reduced to its index line by the retention
            try:
                run = self.load(summary)
            except InputError as exc:
                print(f"rtgate: {exc.oneline()} (run {escape(summary.run_id)} not published)",
                      file=sys.stderr)
                continue
            # A history checkout is a git tree, and git keeps symbolic links.
            for note in run.skipped:
                print(f"rtgate: {escape(note)}", file=sys.stderr)
            yield run

    def _store(self, run: RunFiles, summary: RunSummary) -> None:
        """Copy a run's files into its directory; a half-copied directory is never visible."""
        final = self.run_dir(summary)
        final.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=final.parent, prefix=f".{summary.dir}."))
        try:
            # The original bytes, not a re-serialisation: the history keeps what it was given.
            shutil.copyfile(run.result_path, staging / RESULT)
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

    def merge(self, runs: list[RunFiles], provenance: Provenance | None = None,
              judge: Judge | None = None, keep_raw: int = KEEP_RAW,
              keep_results: int = KEEP_RESULTS) -> MergeReport:
        """Add the runs not yet in the history, each with the next publication number,
        ``provenance`` and its digest judged by ``judge``; a start in the future refuses them
        all (InputError), adding none. Index lines without a digest get one; raw outputs beyond
        the newest ``keep_raw`` of a key are removed, results beyond ``keep_results``."""
        judge = judge or Judge(None, paths.BOARDS)
        report = MergeReport()
        with locked(self.root / LOCK):
            now = datetime.now(UTC)
            batch = publication_order(runs, now)
            lines = self._lines()
            bad = [(n, line) for n, line in enumerate(lines, 1) if line.summary is None]
            if bad:
                with open(self.corrupt, "a", encoding="utf-8", errors="surrogateescape") as fh:
                    fh.writelines(line.text + "\n" for _, line in bad)
                report.corrupt = [f"{self.index}:{n}: {line.problem} (moved to {CORRUPT})"
                                  for n, line in bad]
            summaries = [self._digested(line.summary, judge, report)
                         for line in lines if line.summary]
            known = {s.run_id for s in summaries}
            seq = max((s.publication.seq for s in summaries if s.publication), default=0)
            stated = (provenance or Provenance()).model_dump()
            for run in batch:
                if run.result.run_id in known:
                    report.already.append(run.result.run_id)
                    continue
                seq += 1
                published = dataclasses.replace(run, publication=Publication(
                    seq=seq, published_at=now.isoformat(timespec="seconds"), **stated))
                summary = summarize(published, judge)
                self._store(run, summary)
                summaries.append(summary)
                known.add(summary.run_id)
                report.added.append(summary.run_id)
            if report.added or report.corrupt or report.digested:
                write_atomic(self.index, "".join(
                    json.dumps(s.model_dump(mode="json"), ensure_ascii=False)
                    + "\n" for s in summaries))
            report.reduced = self._reduce(summaries, keep_raw, keep_results)
        for message in report.corrupt:
            print(f"rtgate: {message}", file=sys.stderr)
        return report

    def _digested(self, summary: RunSummary, judge: Judge, report: MergeReport) -> RunSummary:
        """The line as it is, or with the digest it lacks (an index from before digests)."""
        if summary.digest is not None:
            return summary
        try:
            run = self.load(summary)
        except InputError as exc:
            print(f"rtgate: {exc.oneline()} (run {escape(summary.run_id)}: no digest)",
                  file=sys.stderr)
            return summary
        report.digested.append(summary.run_id)
        return summarize(run, judge)

    def _reduce(self, summaries: list[RunSummary], keep_raw: int,
                keep_results: int) -> list[str]:
        """Remove the raw outputs of every run older than the newest ``keep_raw`` of its key,
        and the run's directory beyond ``keep_results`` (its index line stays)."""
        seen: dict[tuple[str, str, str], int] = {}
        reduced = []
        for summary in reversed(summaries):
            seen[summary.key] = seen.get(summary.key, 0) + 1
            home = self.run_dir(summary)
            if home.is_symlink() or not home.is_dir():
                continue
            if seen[summary.key] > keep_results and summary.digest is not None:
                shutil.rmtree(home)
                reduced.append(summary.run_id)
            elif seen[summary.key] > keep_raw and (home / RAW).is_dir() \
                    and not (home / RAW).is_symlink():
                shutil.rmtree(home / RAW)
                reduced.append(summary.run_id)
        return reduced
