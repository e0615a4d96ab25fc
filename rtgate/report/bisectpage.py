"""A bisect's page on the results site: what `rtgate bisect` recorded, shown as it recorded it.

    SITE/bisect/<name>/index.html                 outcome, culprit, evidence per step, timing
    SITE/bisect/<name>/bisect.json                the downloads: the bisect's document (validated),
    SITE/bisect/<name>/bisect.md.txt              its Markdown, as text,
    SITE/bisect/<name>/steps/NN/ab.{json,md}.txt  and each step's A/B output, as text

A bisect.json is found below the directories given to `rtgate report`, or given itself. It is
untrusted data (a pull request's bisect ran the PR's series): read through its model
(rtgate.bisect.doc), escaped by the templates, and its verdict is the file's claim, labelled so.
A step's A/B files are published only from below the bisect's directory, reached through no
symbolic link, whatever path the file records.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rtgate.bisect import doc as bisect_doc
from rtgate.bisect.doc import label, prefix
from rtgate.errors import InputError
from rtgate.layout import AB_JSON, AB_MARKDOWN
from rtgate.outcome import BisectOutcome
from rtgate.report.runs import SYMLINK, source_path
from rtgate.report.summary import safe_name

AB_FILES = (AB_JSON, AB_MARKDOWN)
"""A step's outputs, beside each other in its directory (bisect.json records the first)."""

# How each outcome reads at the top of the page, and its colour (the verdict badges').
HEADLINE = {
    BisectOutcome.CONFIRMED: ("culprit found and confirmed", "fail"),
    BisectOutcome.NOTHING: ("nothing to bisect: the whole series is good", "pass"),
    BisectOutcome.SPREAD: ("not confirmed: the regression may be spread", "incomplete"),
    BisectOutcome.UNCONFIRMED: ("not confirmed", "incomplete"),
    BisectOutcome.AMBIGUOUS: ("not confirmed: skipped patches leave several", "incomplete"),
    BisectOutcome.ENDS: ("the ends are wrong", "incomplete"),
    BisectOutcome.UNMEASURED: ("no verdict: the ends could not be measured", "incomplete"),
}
PURPOSE = {
    "ends": "the bad end against the good end",
    "search": "a prefix against the good end",
    "parent": "the culprit against its parent",
    "revert": "the bad end without the culprit against the good end",
}


@dataclass(frozen=True)
class StepFiles:
    ab: dict[str, Path] = field(default_factory=dict)
    """Of AB_FILES, those found: name → file."""
    recorded: str | None = None
    """Where the bisect recorded the step's ab.json."""


@dataclass(frozen=True)
class BisectFiles:
    doc: bisect_doc.BisectDoc
    path: Path
    markdown: Path | None
    steps: list[StepFiles]
    skipped: list[str]
    """One note per file not taken: ``PATH: why``."""


def load(path: Path) -> BisectFiles:
    if path.is_symlink():
        raise InputError(SYMLINK, path=path)
    doc = bisect_doc.load_bisect(path)
    skipped: list[str] = []
    steps = []
    for step in doc.steps:
        recorded = step.measurement.detail.ab
        found: dict[str, Path] = {}
        if recorded:
            # The recorded path is the running machine's; a copied bisect directory keeps its
            # steps/<step>/ layout.
            where = Path(recorded).parent
            for name in AB_FILES:
                hit = source_path(path, str(where / name), skipped,
                                  elsewhere=Path("steps", where.name, name))
                if hit is not None:
                    found[name] = hit
        steps.append(StepFiles(found, recorded))
    markdown = source_path(path, bisect_doc.MARKDOWN, skipped)
    return BisectFiles(doc, path, markdown, steps, list(dict.fromkeys(skipped)))


def collect(inputs: Sequence[Path]) -> list[BisectFiles]:
    """Every bisect.json given, or found below a directory given, in path order; one given
    twice (itself and its directory) once."""
    found: dict[Path, Path] = {}
    for given in inputs:
        if given.is_dir():
            hits = sorted(given.rglob(bisect_doc.NAME))
        elif given.name == bisect_doc.NAME:
            hits = [given]
        else:
            continue
        for hit in hits:
            found.setdefault(hit.resolve(), hit)
    return [load(p) for p in sorted(found.values())]


@dataclass(frozen=True)
class Download:
    src: Path
    dest: Path
    """Relative to the page's directory."""
    name: str
    what: str

    @property
    def href(self) -> str:
        return self.dest.as_posix()


def page_names(bisects: Sequence[BisectFiles]) -> list[str]:
    """A directory name per bisect: board, flavor and the bisect's own directory, numbered when
    two would be the same."""
    names: list[str] = []
    for b in bisects:
        base = safe_name(f"{b.doc.board}-{b.doc.flavor}-{b.path.parent.name}")
        name, k = base, 1
        while name in names:
            k += 1
            name = f"{base}-{k}"
        names.append(name)
    return names


def context(b: BisectFiles) -> tuple[dict[str, Any], list[Download]]:
    """The page's template context, and the files it offers for download."""
    doc = b.doc
    n = len(doc.patches)
    downloads = [Download(b.path, Path(bisect_doc.NAME), bisect_doc.NAME,
                          "the bisect's result (schema rtgate/bisect/v1)")]
    if b.markdown is not None:
        downloads.append(Download(b.markdown, Path(bisect_doc.MARKDOWN + ".txt"),
                                  bisect_doc.MARKDOWN, "the bisect's Markdown report, as text"))
    rows = []
    for i, (step, files) in enumerate(zip(doc.steps, b.steps, strict=True), start=1):
        offered = {name: Download(src, Path("steps", f"{i:02d}", f"{name}.txt"),
                                  f"step-{i:02d}-{name}", f"step {i}'s A/B {name}, as text")
                   for name, src in files.ab.items()}
        downloads += offered.values()
        m = step.measurement
        notes = []
        if not m.base_ok:
            notes.append("the base's own rounds exceeded their budget")
        if not m.applies:
            notes.append("a patch did not apply")
        rows.append({
            "index": i, "purpose": step.purpose, "purpose_text": PURPOSE[step.purpose],
            "cand": label(step.cand, n), "base": label(step.base, n),
            "outcome": m.outcome, "summary": m.summary, "notes": notes,
            "pairs": m.detail.pairs, "seconds": step.seconds, "files": list(offered.items()),
            "missing": files.recorded is not None and not files.ab})
    headline, tone = HEADLINE[doc.outcome]
    return {
        "b": doc, "headline": headline, "tone": tone, "steps": rows,
        "series_name": Path(doc.series).name, "directory": b.path.parent.name,
        "skipped_prefixes": [label(prefix(k), n) for k in doc.skipped],
        "downloads": downloads,
    }, downloads
