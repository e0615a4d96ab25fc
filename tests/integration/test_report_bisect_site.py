"""Bisect pages in a site with plots (gnuplot) and in a browser (Chromium)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from clirun import RunCli
from test_bisect import Model
from test_bisect_replay import PLANNED, STEPS, published, recorded, replay
from test_report_bisect import page_of, write_bisect
from test_site import Browser, crawl

REPORT_DATA = Path(__file__).parents[1] / "data" / "report"


@pytest.mark.integration
def test_a_bisect_among_pipeline_results(rtgate_cli: RunCli, tmp_path: Path) -> None:
    inputs, site = tmp_path / "in", tmp_path / "site"
    shutil.copytree(REPORT_DATA / "qemu", inputs / "pipeline")
    write_bisect(inputs / "bisect", Model({3: 20.0}))
    proc = rtgate_cli("report", inputs, "--out", site)
    assert proc.returncode == 0, proc.stderr
    index = (site / "index.html").read_text()
    assert "nothing to bisect" in index and 'id="latest"' in index
    assert f'href="{page_of(site).relative_to(site).as_posix()}"' in index
    # The bisect leaves the site with the inputs that held it.
    assert rtgate_cli("report", inputs / "pipeline", "--out", site).returncode == 0
    assert not any((site / "bisect").rglob("*"))
    assert 'id="bisect-list"' not in (site / "index.html").read_text()


@pytest.mark.integration
def test_a_measured_and_a_replayed_bisect_among_the_rounds_results(rtgate_cli: RunCli,
                                                                   tmp_path: Path) -> None:
    """The real bisect as measured, and as `rtgate bisect --replay` re-decided it from its
    rounds: a page each, beside the rounds' own results."""
    source = recorded(tmp_path)
    assert replay(rtgate_cli, tmp_path, source, "--planned-rounds", PLANNED).returncode == 1
    replayed, _ = published(tmp_path)
    assert replayed is not None
    site = tmp_path / "site"
    proc = rtgate_cli("report", source, tmp_path / "published", "--out", site)
    assert proc.returncode == 0, proc.stderr
    index = (site / "index.html").read_text()
    assert 'id="latest"' in index
    pages = sorted((site / "bisect").glob("*/index.html"))
    assert [p.parent.name for p in pages] == ["qemu-arm64-stock-published",
                                              "qemu-arm64-stock-recorded"]
    for page in pages:
        assert f'href="{page.relative_to(site).as_posix()}"' in index
        html = page.read_text()
        assert "culprit found and confirmed" in html and "Culprit: patch 3 of 4" in html
        assert html.count('class="step-row"') == len(STEPS) == len(replayed["steps"])
        assert "block max p90 -11 % [-74, +201]" in html  # the rounds' own effect
    # The replay measured nothing and left no A/B files of its own; the measured one did.
    assert "steps/01/ab.md.txt" not in pages[0].read_text()
    assert "steps/01/ab.md.txt" in pages[1].read_text()


@pytest.mark.integration
def test_in_a_browser_the_bisect_page_runs_no_script_and_every_link_resolves(
        rtgate_cli: RunCli, tmp_path: Path) -> None:
    """Headless Chromium (test_site's): hostile strings in the subject, the author, a step's
    evidence and its ab.md stay text; the crawl from the index reaches the page and its files."""
    marker = "window.rtgatePwned = true"
    evil = f"<script>{marker}</script><img src=x onerror=\"{marker}\">"
    out, site = tmp_path / "bisect", tmp_path / "site"
    doc = write_bisect(out, Model({5: 500.0}), subject=evil, author=evil)
    doc["steps"][0]["measurement"]["summary"] = evil
    (out / "bisect.json").write_text(json.dumps(doc))
    (Path(doc["steps"][0]["measurement"]["detail"]["ab"]).with_name("ab.md")).write_text(evil)
    assert rtgate_cli("report", out, "--out", site).returncode == 0
    browser = Browser()
    try:
        pages = crawl(browser, (site / "index.html").as_uri(), lambda url: Path(unquote(
            urlparse(url).path)))
        page = page_of(site)
        assert page.as_uri() in pages
        for url in (site / "index.html").as_uri(), page.as_uri():
            browser.goto(url)
            assert browser.js("typeof window.rtgatePwned") == "undefined", url
            assert browser.js("document.querySelectorAll('script, img[src=x]').length") == 0
        assert browser.js("document.querySelector('#culprit-subject').textContent") == evil
        assert browser.js("document.querySelector('#culprit-author').textContent") == evil
        for href in browser.js("[...document.querySelectorAll('#steps a')].map(a => a.href)"):
            browser.goto(href)
            assert browser.js("typeof window.rtgatePwned") == "undefined", href
            assert browser.js("document.contentType") == "text/plain", href
    finally:
        browser.close()
