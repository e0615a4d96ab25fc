"""A bisect's page on the results site, through the real `rtgate report` CLI.

The bisect output is the real search and report code (rtgate.bisect: the search, describe, markdown)
over the 8-patch test series, with test_bisect's deterministic model of the series standing in
for board time; each step writes its A/B files where `rtgate bisect` puts them (OUT/steps/NN_…/).
"""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urldefrag

import jsonschema
import pytest
from clirun import RunCli
from test_bisect import DATA as SERIES_DIR
from test_bisect import Model
from test_bisect import bisect as search
from test_bisect_replay import recorded

from rtgate.bisect import doc as bisect_doc
from rtgate.bisect.doc import BisectDoc, Detail, StepMeasurement, Variant, label, prefix
from rtgate.bisect.patches import describe
from rtgate.bisect.render import HEADLINE, markdown
from rtgate.outcome import BisectOutcome

HOSTILE = "<script>alert('bisect')</script> & <img src=x onerror=alert(1)>"
N = 8


def write_bisect(out: Path, model: Model, **culprit_fields: str) -> dict[str, Any]:
    """OUT as `rtgate bisect` leaves it: steps/NN_…/ab.json and ab.md, bisect.json, bisect.md.
    ``culprit_fields`` replace fields of the culprit's header (a hostile subject)."""
    made = 0

    def measure(base: Variant, cand: Variant) -> StepMeasurement:
        nonlocal made
        made += 1
        m = model(base, cand)
        step = out / "steps" / f"{made:02d} {label(cand, N)} vs {label(base, N)}".replace(" ", "_")
        step.mkdir(parents=True)
        (step / "ab.json").write_text(json.dumps({"outcome": m.outcome, "why": m.summary}))
        (step / "ab.md").write_text(f"## rtgate ab: {m.outcome}\n\n{m.summary}\n")
        return m.model_copy(update={"detail": Detail(ab=str(step / "ab.json"), pairs=3)})

    result = search(measure, N)  # type: ignore[arg-type]  # any measure(base, cand) will do
    doc = describe(SERIES_DIR / "series", "qemu-arm64", "stock", result).to_json()
    if doc["culprit_patch"] is not None:
        doc["culprit_patch"].update(culprit_fields)
        doc["patches"][doc["culprit"] - 1].update(culprit_fields)
    out.mkdir(parents=True, exist_ok=True)
    (out / "bisect.json").write_text(json.dumps(doc, indent=2) + "\n")
    (out / "bisect.md").write_text(markdown(BisectDoc.model_validate(doc)))
    return doc


class Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.targets: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.targets += [v for k, v in attrs if k in ("href", "src") and v]


def broken_links(page: Path) -> list[str]:
    """The page's links (href, src) to no file of the site."""
    links = Links()
    links.feed(page.read_text())
    return [t for t in links.targets
            if not (page.parent / unquote(urldefrag(t).url)).resolve().is_file()]


def page_of(site: Path) -> Path:
    pages = sorted((site / "bisect").glob("*/index.html"))
    assert len(pages) == 1, pages
    return pages[0]


def test_a_bisect_alone_gets_a_page_linked_from_the_index(rtgate_cli: RunCli,
                                                          tmp_path: Path) -> None:
    out, site = tmp_path / "bisect", tmp_path / "site"
    doc = write_bisect(out, Model({5: 500.0}, broken={prefix(6)}), subject=HOSTILE)
    # The directory and its bisect.json: one bisect, one page.
    proc = rtgate_cli("report", out, out / "bisect.json", "--out", site)
    assert proc.returncode == 0, proc.stderr
    page = page_of(site)
    index = (site / "index.html").read_text()
    assert f'href="{page.relative_to(site).as_posix()}"' in index

    html = page.read_text()
    assert "As recorded by the bisect run" in html
    assert "culprit found and confirmed" in html and "culprit found and confirmed" in index
    p = doc["culprit_patch"]
    assert p["number"] == 5 and "0005-rtgate-planted-latency-on.patch" in html
    assert "rtgate &lt;rtgate@localhost&gt;" in html
    # The subject is data: escaped wherever it is shown, never markup.
    escaped = ("&lt;script&gt;alert(&#39;bisect&#39;)&lt;/script&gt; &amp; "
               "&lt;img src=x onerror=alert(1)&gt;")
    for text in (html, index):
        assert escaped in text
        assert "<script" not in text.lower() and "<img" not in text.lower()

    # How it knows: a row per step with its outcome, and its A/B files as text downloads.
    assert html.count('class="step-row"') == len(doc["steps"])
    assert html.count('data-outcome="skip"') == 1 and "the kernel did not boot" in html
    assert "prefixes skipped" in html.lower() and "1-6" in html
    home = page.parent
    for i in range(1, len(doc["steps"]) + 1):
        for name in ("ab.json", "ab.md"):
            assert f'href="steps/{i:02d}/{name}.txt"' in html
            assert (home / "steps" / f"{i:02d}" / f"{name}.txt").is_file()
    assert json.loads((home / "bisect.json").read_text()) == doc
    assert (home / "bisect.md.txt").read_text() == (out / "bisect.md").read_text()
    assert f"{len(doc['steps'])} measurements" in html
    assert broken_links(page) == [] and broken_links(site / "index.html") == []


def test_a_real_bisect_output_unpacked_elsewhere_keeps_its_evidence(rtgate_cli: RunCli,
                                                                    tmp_path: Path) -> None:
    """The output of a real qemu-arm64 bisect (test_bisect_replay's, its step files recorded
    under /tmp/runner-bisect-rec/), its bisect.json given: the step files are found below it."""
    source = recorded(tmp_path)
    proc = rtgate_cli("report", source / "bisect.json", "--out", tmp_path / "site")
    assert proc.returncode == 0, proc.stderr
    page = page_of(tmp_path / "site")
    html = page.read_text()
    assert "culprit found and confirmed" in html and "Culprit: patch 3 of 4" in html
    assert "0005-rtgate-planted-latency-on.patch" in html
    assert "max_us measured 1034554 µs, budget &lt;= 900000 µs" in html
    assert "block max p90 -11 % [-74, +201]" in html
    assert "977 s (16.3 min) measured" in html
    steps = sorted((source / "steps").iterdir())
    assert html.count('class="step-row"') == len(steps) == 6
    for i, step in enumerate(steps, start=1):
        for name in ("ab.json", "ab.md"):
            published = page.parent / "steps" / f"{i:02d}" / f"{name}.txt"
            assert published.read_bytes() == (step / name).read_bytes()
    assert broken_links(page) == []


def test_a_step_file_outside_the_bisect_or_behind_a_link_is_not_published(
        rtgate_cli: RunCli, tmp_path: Path) -> None:
    out, site = tmp_path / "bisect", tmp_path / "site"
    secret = tmp_path / "secret" / "ab.json"
    secret.parent.mkdir()
    secret.write_text("private")
    (secret.parent / "ab.md").write_text("private")
    doc = write_bisect(out, Model({5: 500.0}))
    doc["steps"][0]["measurement"]["detail"]["ab"] = str(secret)
    (out / "bisect.json").write_text(json.dumps(doc))
    step2 = Path(doc["steps"][1]["measurement"]["detail"]["ab"]).parent
    (step2 / "ab.md").unlink()
    (step2 / "ab.md").symlink_to(secret.parent / "ab.md")
    proc = rtgate_cli("report", out, "--out", site)
    assert proc.returncode == 0, proc.stderr
    assert f"{step2 / 'ab.md'}: a symbolic link, not followed" in proc.stderr
    home = page_of(site).parent
    published = {p.relative_to(home).as_posix() for p in home.rglob("*") if p.is_file()}
    assert "steps/01/ab.json.txt" not in published and "steps/02/ab.md.txt" not in published
    assert "steps/02/ab.json.txt" in published
    assert all("private" not in (home / p).read_text() for p in published)
    assert "not found beside the bisect" in page_of(site).read_text()


def _swap(doc: dict[str, Any], path: tuple[Any, ...], value: Any) -> None:
    *parents, last = path
    for key in parents:
        doc = doc[key]
    doc[last] = value


@pytest.mark.parametrize("path, value, message", [
    ((), None, "not a JSON document"),
    (("schema",), "rtgate/bisect/v0", "not an rtgate bisect (schema 'rtgate/bisect/v0'"),
    (("exit",), 0, "invalid bisect: exit 0 does not go with outcome confirmed (exit 1)"),
    (("culprit",), 4, "invalid bisect: culprit_patch is not patch 4 of the patches"),
    (("steps", 0, "cand"), [1, 9], "invalid bisect: a step or skipped prefix names a patch "
                                   "outside 1..8"),
    (("steps", 0, "measurement", "outcome"), "fine", "invalid bisect at "
                                                     "steps.0.measurement.outcome: Input should "
                                                     "be 'worse'"),
    (("culprit_patch", "subject"), ["<b>"], "invalid bisect at culprit_patch.subject: Input "
                                            "should be a valid string"),
    (("elapsed_s",), float("nan"), "holds the number NaN, not a finite number"),
])
def test_a_malformed_bisect_is_a_one_line_error_naming_it(
        rtgate_cli: RunCli, tmp_path: Path, path: tuple[Any, ...], value: Any,
        message: str) -> None:
    out, site = tmp_path / "bisect", tmp_path / "site"
    doc = write_bisect(out, Model({5: 500.0}))
    if path:
        _swap(doc, path, value)
    text = json.dumps(doc) if path else "{ not json"
    (out / "bisect.json").write_text(text)
    proc = rtgate_cli("report", out / "bisect.json", "--out", site)
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"rtgate: {out / 'bisect.json'}: {message}"), proc.stderr
    assert proc.stderr.count("\n") == 1
    assert (out / "bisect.json").read_text() == text  # left as given
    assert not site.exists()


@pytest.mark.parametrize("model", [
    Model({5: 500.0}), Model({3: 20.0}), Model({3: 40.0, 4: 40.0, 5: 40.0, 6: 40.0}),
    Model({5: 500.0}, broken={prefix(4)}), Model({5: 500.0}, base_over_budget=True),
    Model({5: 500.0}, broken={prefix(8)}), Model({3: 500.0, 7: 500.0}),
], ids=["confirmed", "nothing", "spread", "ambiguous", "ends", "unmeasured", "unconfirmed"])
def test_every_outcome_the_bisect_writes_is_read_and_valid_by_the_schema_file(
        tmp_path: Path, model: Model, request: pytest.FixtureRequest) -> None:
    doc = write_bisect(tmp_path, model)
    assert doc["outcome"] == request.node.callspec.id
    assert bisect_doc.load_bisect(tmp_path / "bisect.json").to_json() == doc
    jsonschema.validate(doc, json.loads(bisect_doc.SCHEMA_FILE.read_text()))


def test_the_model_follows_the_bisect_and_its_schema_file_is_current() -> None:
    assert json.loads(bisect_doc.SCHEMA_FILE.read_text()) == bisect_doc.json_schema()
    assert set(HEADLINE) == set(BisectOutcome)
