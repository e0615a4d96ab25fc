"""The series' patches as a bisect's document names them: file, subject and author."""

from __future__ import annotations

import email.parser
import re
from pathlib import Path

from rtgate.bisect.doc import SCHEMA_ID, BisectDoc, NamedPatch
from rtgate.bisect.search import Conclusion
from rtgate.kernel.patches import read_series


def patch_header(path: Path) -> dict[str, str]:
    """Subject and author of a `git format-patch` file; empty when the header has none."""
    with path.open(errors="replace") as f:
        head = email.parser.Parser().parse(f, headersonly=True)
    subject = re.sub(r"^\[PATCH[^\]]*\]\s*", "", " ".join(str(head["Subject"] or "").split()))
    return {"subject": subject, "author": " ".join(str(head["From"] or "").split())}


def describe(series: Path, board: str, flavor: str, found: Conclusion) -> BisectDoc:
    """The bisect's document: what the search found on the board, with the patches named."""
    names = [p.name for p in read_series(series)]
    patches = [NamedPatch(number=i, file=name, **patch_header(series.parent / name))
               for i, name in enumerate(names, start=1)]
    culprit = found.culprit
    return BisectDoc(schema=SCHEMA_ID, series=str(series), board=board, flavor=flavor,
                     outcome=found.outcome, why=found.why, exit=int(found.exit), culprit=culprit,
                     skipped=found.skipped, steps=found.steps, elapsed_s=found.elapsed_s,
                     measured_s=found.measured_s, patches=patches,
                     culprit_patch=patches[culprit - 1] if culprit else None)
