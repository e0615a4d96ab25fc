"""What ``rtgate report`` and ``rtgate compare`` make from their settings: the results site (and
its history), and the before/after table with the A/B decisions."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from rtgate import paths
from rtgate.ciout import escape
from rtgate.errors import Exit
from rtgate.gate import infrarecord
from rtgate.gate.verdict import worst
from rtgate.jsonfile import write_output
from rtgate.report import bisectpage, compare, site
from rtgate.report.digest import summarize
from rtgate.report.history import History, publication_order, runs_of
from rtgate.report.judge import Judge
from rtgate.report.provenance import stated
from rtgate.report.runs import RunFiles, collect
from rtgate.report.summary import RunSummary


@dataclass(frozen=True)
class SiteSettings:
    inputs: tuple[Path, ...]  # result files, or directories searched for them
    out: Path
    history: Path | None = None  # the history store to merge the runs into and publish
    thresholds: Path | None = None  # None: the repository's when present
    provenance: Mapping[str, str | None] = field(default_factory=dict)
    """By field of report.provenance.OPTIONS: what the publishing job states, None for unsaid."""
    full_runs: int = site.FULL_RUNS  # the newest runs of each key published in full
    calibration: Path = paths.CALIBRATION  # the boards' calibration records


def make_site(settings: SiteSettings) -> Exit:
    """Merge the runs into the history (with one), write the site, print its index page."""
    provenance = stated(settings.provenance, os.environ)
    judge = Judge.from_file(settings.thresholds, paths.BOARDS)
    inputs = list(settings.inputs)
    runs = collect(inputs) if inputs else []
    bisects = bisectpage.collect(inputs)
    for note in dict.fromkeys(n for item in (*runs, *bisects) for n in item.skipped):
        print(f"rtgate: {escape(note)}", file=sys.stderr)
    if settings.history:
        history = History(settings.history)
        merged = history.merge(runs, provenance, judge)
        print(f"history {history.root}: {len(merged.added)} added, "
              f"{len(merged.already)} already there, {len(merged.corrupt)} corrupt line(s) "
              f"set aside, {len(merged.digested)} digested, raw outputs of "
              f"{len(merged.reduced)} older run(s) removed", file=sys.stderr)
        summaries = history.entries()
        load = history.load_or_say
    else:
        ordered = publication_order(runs, datetime.now(UTC))
        summaries = [summarize(r, judge) for r in ordered]
        given = {r.result.run_id: r for r in ordered}

        def load(summary: RunSummary) -> RunFiles | None:
            return given.get(summary.run_id)
    full = {s.run_id for s in site.newest_per_key(summaries, settings.full_runs)}
    failures = [infra for _, infra in infrarecord.find(inputs)]
    index = site.build(summaries, full, load, settings.out, judge, failures, bisects,
                       settings.calibration)
    print(index)
    # A crash is its kernel's failure (1); a lab failure anywhere outranks it (3).
    return worst([f.exit for f in failures])


@dataclass(frozen=True)
class CompareSettings:
    baseline: Path  # result files or directories of them: one round each
    candidate: Path
    markdown: Path | None = None
    json: Path | None = None
    min_effect_pct: float | None = None  # None: the matching budget's ab.min_effect_pct
    alpha: float | None = None  # None: the matching budgets' smallest ab.alpha
    thresholds: Path | None = None  # None: the repository's when present


_SAID = {Exit.OK: "every key same or better", Exit.BUDGET: "worse: a regression",
         Exit.UNDECIDED: "undecided: measure more rounds"}


def make_comparison(settings: CompareSettings) -> Exit:
    """The A/B test of the candidate's rounds against the baseline's, written as asked."""
    judge = Judge.from_file(settings.thresholds, paths.BOARDS)
    baseline, candidate = runs_of([settings.baseline]), runs_of([settings.candidate])
    test = compare.ABTest(baseline, candidate, judge, settings.min_effect_pct, settings.alpha)
    outputs = {settings.markdown: lambda: compare.markdown(baseline, candidate, judge, test),
               settings.json: lambda: json.dumps(test.to_json(), indent=2) + "\n"}
    for path, render in outputs.items():
        if path is not None:
            write_output(path, render())
    outcome = test.exit
    print(f"rtgate compare: {_SAID[outcome]} (exit {int(outcome)})", file=sys.stderr)
    return outcome
