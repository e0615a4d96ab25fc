"""bisect.json, bisect.md, the state file and the progress lines, byte for byte as the bisect
wrote them before it became a package (tests/data/bisect/golden/, written by the code of commit
6ef23dc from the same deterministic bisect): the files a publisher, a resumed bisect and a
reviewer read stay what they were."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from rtgate.bisect.doc import Detail, StepMeasurement, Variant
from rtgate.bisect.patches import describe
from rtgate.bisect.render import markdown, refused_markdown
from rtgate.bisect.search import Search
from rtgate.bisect.state import Log
from rtgate.errors import InputError
from rtgate.outcome import StepOutcome

ROOT = Path(__file__).parents[2]
SERIES = Path("tests/data/bisect/series")  # relative, as the golden files record it
GOLDEN = ROOT / "tests" / "data" / "bisect" / "golden"
EFFECT = {(1, 2, 3, 4, 5, 6, 7, 8): ("worse", "stock/idle worse: Δ p99 +1001 µs [+990, +1010]"),
          (1, 2, 3, 4): ("same", "stock/idle same: Δ p99 +3 µs [-12, +18]"),
          (1, 2, 3, 4, 5): ("worse", "stock/idle worse: Δ p99 +998 µs [+985, +1011]"),
          (1, 2, 3, 4, 6, 7, 8): ("same", "stock/idle same: Δ p99.9 -4 µs [-20, +12]")}
BROKEN = (1, 2, 3, 4, 5, 6)


def test_the_documents_are_byte_for_byte_what_they_were(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    made = 0

    def measure(base: Variant, cand: Variant) -> StepMeasurement:
        nonlocal made
        made += 1
        if cand == BROKEN:
            return StepMeasurement(outcome=StepOutcome.SKIP,
                                   summary="does not build: make | error <x> `y`")
        outcome, summary = EFFECT[cand]
        return StepMeasurement(outcome=outcome, summary=summary, detail=Detail(
            ab=f"/tmp/out/steps/{made:02d}/ab.json", elapsed_s=61.5,
            ab_outcome="budget" if outcome == "worse" else outcome, pairs=3))

    ticks = itertools.count(0.0, 7.25)
    lines: list[str] = []
    log = Log(tmp_path / "confirmed.state.json", {"series": str(SERIES), "good": 0, "bad": 8})
    found = Search(8, 0, 8, measure, log, progress=lines.append,
                   clock=lambda: next(ticks)).run()
    doc = describe(SERIES, "qemu-arm64", "stock", found)
    written = {
        "confirmed.state.json": (tmp_path / "confirmed.state.json").read_text(),
        "confirmed.bisect.json": json.dumps(doc.to_json(), indent=2) + "\n",
        "confirmed.bisect.md": markdown(doc),
        "confirmed.replayed.md": markdown(doc, replayed=True),
        "confirmed.progress.txt": "\n".join(lines) + "\n",
        "refused.md": refused_markdown(
            InputError("03_1-6_vs_none is not step 3 <b>|</b>", path="steps"), log.steps[:2], 8),
    }
    for name, text in written.items():
        assert text == (GOLDEN / name).read_text(), name
    # A bisect interrupted before the change resumes from its state file after it.
    assert Log.open(GOLDEN / "confirmed.state.json", log.identity).steps == log.steps
