"""The results site in a real headless Chromium (Debian's package), driven over the DevTools
protocol: a screenshot, the index rows and verdict badges from the DOM, and a crawl of every
local link, image and stylesheet on every page, from file:// and from a sub-path over HTTP."""

from __future__ import annotations

import csv
import functools
import http.server
import json
import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urldefrag, urlparse

import pytest
from browser import Browser, overflowing_pages
from clirun import RunCli

from rtgate import paths
from rtgate.report import bins
from rtgate.result import load_result

# Debian's chromium comes from `scripts/deps.sh report` (make test installs it): a missing
# browser fails these tests, it never skips them.
pytestmark = pytest.mark.integration

DATA = Path(__file__).parents[1] / "data" / "report"
THRESHOLDS = DATA / "thresholds.yml"
CALIBRATION = DATA / "calibration"
VIRTUAL = "virtual board — not a real-time claim"


def report(rtgate_cli: RunCli, *args: str | Path) -> Path:
    proc = rtgate_cli("report", *map(str, args))
    assert proc.returncode == 0, proc.stderr
    return Path(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def site(rtgate_cli: RunCli, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Published twice into one history, the way CI re-publishes: first the older runs."""
    tmp = tmp_path_factory.mktemp("published")
    history, out = tmp / "history", tmp / "site"
    report(rtgate_cli, DATA / "local", DATA / "qemu", "--history", history,
           "--thresholds", THRESHOLDS, "--out", out, "--calibration", CALIBRATION)
    index = report(rtgate_cli, DATA / "candidate", DATA / "local", "--history", history,
                   "--thresholds", THRESHOLDS, "--out", out, "--calibration", CALIBRATION)
    assert index == out / "index.html"
    return out


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    b = Browser()
    yield b
    b.close()


ROWS_JS = """[...document.querySelectorAll('#latest tbody tr')].map(tr => {
  const v = tr.querySelector('.verdict'), badge = tr.querySelector('.badge-virtual');
  return {key: [tr.dataset.board, tr.dataset.flavor, tr.dataset.scenario],
          cells: [...tr.cells].map(td => td.innerText.trim()),
          verdict: v.textContent.trim(), verdictColour: getComputedStyle(v).backgroundColor,
          badge: badge && badge.offsetWidth > 0 ? badge.textContent.trim() : null,
          run: tr.querySelector('td[data-label=Run] a').getAttribute('href')};
})"""


def test_index_rows_and_verdict_badges(site: Path, browser: Browser, tmp_path: Path) -> None:
    browser.goto((site / "index.html").as_uri())
    rows = {tuple(r["key"]): r for r in browser.js(ROWS_JS)}
    assert {k: r["verdict"] for k, r in rows.items()} == {
        ("local", "stock", "cpu"): "fail",
        ("local", "stock", "idle"): "incomplete",
        ("qemu-x86-tcg", "rt", "cpu"): "pass",
        ("qemu-x86-tcg", "rt", "idle"): "pass",
        ("qemu-x86-tcg", "stock", "cpu"): "no budget",
        ("qemu-x86-tcg", "stock", "idle"): "pass",
    }
    # The badges are styled (the stylesheet is in use): one colour per verdict.
    colours = {r["verdict"]: r["verdictColour"] for r in rows.values()}
    assert colours["pass"] == "rgb(30, 123, 58)" and colours["fail"] == "rgb(180, 35, 24)"
    assert len(set(colours.values())) == 4
    assert all(r["badge"] == VIRTUAL for r in rows.values())  # every fixture board is virtual

    # The newest run of a key wins: the candidate run, not the older capture merged first.
    cpu = rows[("local", "stock", "cpu")]
    assert cpu["run"] == "runs/local-cpu-20261122T001033Z/index.html"
    board, flavor, scenario, verdict, mx, p9999, avg, mn, samples, budget, run, kernel = \
        cpu["cells"]
    assert (kernel, run, samples, mx, p9999) == ("6.18.44-fc-v657", "2026-11-22 00:10", "59367",
                                                 "3209", "1174")
    assert budget.replace("\n", " ") == "max ≤ 1000 · avg ≤ 1000 µs"
    assert rows[("qemu-x86-tcg", "rt", "idle")]["cells"][5] == "≥400"  # a lower bound

    shot = browser.screenshot(tmp_path / "index.png")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 50_000
    if os.environ.get("RTGATE_SCREENSHOTS"):
        shutil.copy(shot, Path(os.environ["RTGATE_SCREENSHOTS"]) / "index.png")


# Links to the CI run that published a run (rel=external) leave the site on purpose.
PAGE_JS = """({
  links: [...document.querySelectorAll('a[href]:not([rel~=external])')].map(
      a => [a.getAttribute('href'), a.href]),
  images: [...document.images].map(i => [i.getAttribute('src'), i.src,
                                         i.complete && i.naturalWidth > 0]),
  css: [...document.querySelectorAll('link[rel=stylesheet]')].map(
      l => [l.getAttribute('href'), l.href, l.sheet !== null]),
  ids: [...document.querySelectorAll('[id]')].map(e => e.id),
})"""


def crawl(browser: Browser, start: str, local_path: Any) -> dict[str, dict[str, Any]]:
    """Visit every page reachable from start; returns what each page links to."""
    pages: dict[str, dict[str, Any]] = {}
    todo = [start]
    while todo:
        url = todo.pop()
        if url in pages:
            continue
        browser.goto(url)
        page = pages[url] = browser.js(PAGE_JS)
        for raw, absolute, *_ in page["links"] + page["images"] + page["css"]:
            # Relative links only: the site must work from file:// and from any sub-path.
            assert not urlparse(raw).scheme and not raw.startswith("/"), (url, raw)
            target, _ = urldefrag(absolute)
            assert local_path(target).is_file(), f"{url}: broken link {raw}"
            if target.endswith(".html"):
                todo.append(target)
        for raw, _, loaded in page["images"]:
            assert loaded, f"{url}: image {raw} did not load"
        for raw, _, loaded in page["css"]:
            assert loaded, f"{url}: stylesheet {raw} did not load"
    for url, page in pages.items():
        for raw, absolute in page["links"]:
            target, fragment = urldefrag(absolute)
            if fragment:
                assert fragment in pages[target]["ids"], f"{url}: no #{fragment} in {raw}"
    return pages


def test_every_link_image_and_stylesheet_on_every_page(site: Path, browser: Browser,
                                                       tmp_path: Path) -> None:
    pages = crawl(browser, (site / "index.html").as_uri(),
                  lambda url: Path(unquote(urlparse(url).path)))
    names = {Path(urlparse(u).path).relative_to(site).as_posix() for u in pages}
    runs = sorted(p.parent.name for p in (site / "runs").glob("*/result.json"))
    keys = sorted(p.parent.name for p in (site / "keys").glob("*/index.html"))
    assert names == {"index.html", "history.html", "boards.html",
                     "boards/local/index.html", "boards/qemu-x86-tcg/index.html",
                     *(f"keys/{k}/index.html" for k in keys),
                     *(f"runs/{r}/index.html" for r in runs)}
    assert len(runs) == 8 and len(keys) == 6

    run = (site / "runs" / "local-cpu-20261122T001033Z" / "index.html").as_uri()
    downloads = {raw for raw, _ in pages[run]["links"]}
    # Raw files as text under safe names; the JUnit of the job that ran is never republished.
    assert {"result.json", "raw/cyclictest.json.txt", "raw/cyclictest.hist.txt"} <= downloads
    assert not [d for d in downloads if "junit" in d]
    assert len(pages[(site / "history.html").as_uri()]["images"]) == 6  # a trend per key
    browser.goto(run)
    browser.screenshot(tmp_path / "run.png")
    if os.environ.get("RTGATE_SCREENSHOTS"):
        shutil.copy(tmp_path / "run.png", Path(os.environ["RTGATE_SCREENSHOTS"]) / "run.png")


def test_run_page_shows_environment_and_verdicts(site: Path, browser: Browser) -> None:
    browser.goto((site / "runs" / "local-cpu-20261122T001033Z" / "index.html").as_uri())
    env = dict(browser.js("[...document.querySelectorAll('table.env tr')].map("
                          "tr => [tr.cells[0].innerText.trim(), tr.cells[1].innerText.trim()])"))
    assert env["Kernel release"] == "6.18.44-fc-v657"
    assert env["Kernel command line"].startswith("mitigations=auto")
    assert env["Isolated CPUs"] == "not recorded"
    h1 = browser.js("document.querySelector('h1').innerText")
    assert "local / stock / cpu" in h1 and "FAIL" in h1.upper() and VIRTUAL in h1
    problems = browser.js("[...document.querySelectorAll('.problems li')].map(l => l.innerText)")
    assert any(p.startswith("max_us measured 3209 µs, budget <= 1000 µs") for p in problems)


@pytest.fixture()
def served(site: Path) -> Iterator[str]:
    """The site's parent served on loopback, so the site lives under a sub-path like Pages."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler,
                                directory=str(site.parent))
    handler.log_message = lambda *a, **k: None  # type: ignore[method-assign]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/{site.name}/"
    server.shutdown()
    server.server_close()


def test_the_site_works_from_a_sub_path_over_http(site: Path, served: str,
                                                  browser: Browser) -> None:
    pages = crawl(browser, served + "index.html",
                  lambda url: site / unquote(urlparse(url).path).removeprefix(f"/{site.name}/"))
    assert len(pages) == 19  # index, history, boards and 2 boards, 6 keys, 8 runs


def test_strings_from_results_are_escaped(rtgate_cli: RunCli,
                                          tmp_path: Path, browser: Browser) -> None:
    base = load_result(DATA / "qemu" / "stock-idle" / "result.json")
    evil = "<script>document.title='pwned'</script><img src=x onerror=\"document.title='pwned'\">"
    kernel = base.kernel.model_copy(update={"release": evil})
    base.model_copy(update={"kernel": kernel, "scenario": 'idle"><b>x</b>',
                            "environment": {**base.environment, "cmdline": evil}}
                    ).write(tmp_path / "in" / "result.json")
    index = report(rtgate_cli, tmp_path / "in", "--out", tmp_path / "site")
    for page in [index, *sorted((tmp_path / "site" / "runs").glob("*/index.html"))]:
        browser.goto(page.as_uri())
        assert browser.js("document.title") != "pwned"
        assert browser.js("document.querySelectorAll('script, img[src=x], b').length") == 0
    browser.goto(index.as_uri())
    assert browser.js("document.querySelector('td.kernel').textContent") == evil


# Each sets a marker if the browser runs it; as text, none does.
MARKER = "window.rtgatePwned = true"
XHTML = f'<html xmlns="http://www.w3.org/1999/xhtml"><body><script>{MARKER}</script></body></html>'
SCRIPTED = {
    "evil.html": f"<!doctype html><script>{MARKER}</script>",
    "evil.htm": f"<script>{MARKER}</script>",
    "evil.svg": f'<svg xmlns="http://www.w3.org/2000/svg"><script>{MARKER}</script></svg>',
    "evil.xml": XHTML,
    "evil.xhtml": XHTML,
    "evil.json": f"<script>{MARKER}</script>",
    "cyclictest.txt": f"<script>{MARKER}</script>",
}


def test_raw_files_never_run_script_on_the_site(rtgate_cli: RunCli,
                                                tmp_path: Path, browser: Browser) -> None:
    import hashlib

    from rtgate.result import SourceFile, load_result

    run = tmp_path / "in"
    (run / "raw").mkdir(parents=True)
    sources = []
    for name, text in SCRIPTED.items():
        (run / "raw" / name).write_text(text)
        sources.append(SourceFile(path=f"raw/{name}", format="json",
                                  sha256=hashlib.sha256(text.encode()).hexdigest()))
    (run / "junit.xml").write_text(XHTML)  # next to the result, as `rtgate check` writes it
    base = load_result(DATA / "qemu" / "stock-idle" / "result.json")
    base.model_copy(update={"sources": sources}).write(run / "result.json")
    report(rtgate_cli, run, "--out", tmp_path / "site")
    (home,) = (tmp_path / "site" / "runs").iterdir()

    browser.goto((home / "index.html").as_uri())
    links = browser.js("[...document.querySelectorAll('ul.downloads a')].map(a => a.href)")
    for link in links:
        browser.goto(link)
        assert browser.js("typeof window.rtgatePwned") == "undefined", link
        assert browser.js("document.contentType") in ("text/plain", "application/json"), link
        if not link.endswith("result.json"):
            assert MARKER in browser.js("document.body.innerText"), link  # shown, not run
    assert len(links) == 3  # result.json, evil.json and cyclictest.txt, as text
    browser.goto((home / "index.html").as_uri())
    withheld = browser.js("document.querySelector('.withheld').innerText")
    assert all(name in withheld for name in SCRIPTED if name.endswith(("ml", "svg")))

    published = sorted(p.relative_to(home).as_posix() for p in home.rglob("*") if p.is_file())
    assert [p for p in published if not p.startswith("histogram")] == [
        "index.html", "raw/cyclictest.txt", "raw/evil.json.txt", "result.json"]


@pytest.mark.parametrize("width", [390, 1280])
def test_no_page_scrolls_sideways_and_every_verdict_is_in_view(site: Path, width: int) -> None:
    with Browser(width, 800) as narrow:
        assert overflowing_pages(narrow, site) == {}
        narrow.goto((site / "index.html").as_uri())
        header = narrow.js("getComputedStyle(document.querySelector('#latest thead')).display")
        assert (header == "none") == (width < 820)  # a card per run on a phone


def test_each_key_has_three_ranges_with_plots_and_downloads(site: Path, browser: Browser) -> None:
    home = site / "keys" / "local--stock--cpu"
    browser.goto((home / "index.html").as_uri())
    sections = browser.js("[...document.querySelectorAll('section.group')].map(s => ({id: s.id, "
                          "images: [...s.querySelectorAll('img')].map(i => i.getAttribute('src')),"
                          " data: [...s.querySelectorAll('.downloads a')].map(a => "
                          "a.getAttribute('href'))}))")
    assert [x["id"] for x in sections] == ["last30", "year", "all"]
    assert sections[0]["images"] == ["last30/trend.svg", "last30/heatmap.png"]
    assert sections[2]["images"] == ["all/trend.png", "all/heatmap.png"]
    assert set(sections[1]["data"]) == {"year/series.csv", "year/series.json",
                                        "all/heatmap.csv", "all/heatmap.json"}
    rows = list(csv.DictReader((home / "all" / "series.csv").open()))
    # Oldest first, with the budget in force when each was published and its verdict then.
    assert [(r["max_us"], r["p99_99_us"], r["p99_99_bound"], r["budget_max_us"], r["verdict"])
            for r in rows] == [("1128", "400", "True", "1000", "fail"),
                               ("3209", "1174", "False", "1000", "fail")]
    series = json.loads((home / "all" / "series.json").read_text())
    assert [r["run_id"] for r in series["runs"]] == [r["run_id"] for r in rows]
    heat = json.loads((home / "all" / "heatmap.json").read_text())
    result = load_result(DATA / "candidate" / "stock-cpu" / "result.json")
    assert sum(c for _, c in heat["runs"][-1]["bins"]) == sum(
        c for t in result.threads if t.histogram for _, c in t.histogram.buckets) + sum(
        t.histogram.overflows for t in result.threads if t.histogram)
    index = (site / "data" / "index.csv").read_text().splitlines()
    assert len(index) == 1 + 8  # every run published, the header first


def test_a_20ms_range_is_drawn_on_log_spaced_bins(site: Path) -> None:
    result = load_result(DATA / "candidate" / "stock-cpu" / "result.json")
    (hist,) = {t.histogram.limit_us for t in result.threads if t.histogram}
    assert hist == 20_000
    filled = {b for t in result.threads if t.histogram for b, _ in t.histogram.buckets}
    rows = (site / "runs" / result.run_id / "histogram.dat").read_text().splitlines()[1:]
    # A row per non-empty log bin (and its closing zero), never one per µs of range.
    assert len(rows) <= 2 * len({bins.lower_edge(b) for b in filled}) < len(filled)
    svg = (site / "runs" / result.run_id / "histogram.svg").read_text()
    assert "log-spaced bins" in svg


@pytest.mark.parametrize(("kind", "shown"), [
    ("qemu-x86-tcg", "5 % [0.61, 16.92] (2/40"), ("rpi5", None)])
def test_a_boards_calibration_page_is_its_kinds(
        rtgate_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        kind: str, shown: str | None) -> None:
    """A board whose file names another kind (rpi5-b is an rpi5) shows the kind's record, or
    names the kind's missing file."""
    boards = tmp_path / "boards"
    boards.mkdir()
    spec = (paths.BOARDS / "local.yml").read_text()
    (boards / "local.yml").write_text(f"{spec}kind: {kind}\n")
    monkeypatch.setattr(paths, "BOARDS", boards)
    report(rtgate_cli, DATA / "local", "--thresholds", THRESHOLDS, "--out", tmp_path / "site",
           "--calibration", CALIBRATION)
    page = (tmp_path / "site" / "boards" / "local" / "index.html").read_text()
    assert f"local is a board of kind {kind}" in page
    if shown:
        assert shown in page and "no-calibration" not in page
        # The record is v1: every bank in whole µs, and ns rounds are judged floored (issue 40).
        said = " ".join(page.split())
        assert ("Each bank measured in rt / idle: whole µs; stock / idle: whole µs." in said
                and "rounds finer than it (ns against a bank in whole µs) are judged floored "
                    "to it" in said), said
    else:
        assert f"bench/calibration/{kind}.json does" in page and "local.json" not in page
    listed = (tmp_path / "site" / "boards.html").read_text()
    assert f"(kind {kind})" in listed


def test_calibration_pages(site: Path, browser: Browser) -> None:
    """The page shows each key's replayed rates beside their interval-honest bounds (alpha at
    most, power at least: issue 36 item 3), P(same | unchanged) and the time to a verdict
    (item 4); a record made before the bounds existed says it has none."""
    browser.goto((site / "boards" / "qemu-x86-tcg" / "index.html").as_uri())
    cells = browser.js("[...document.querySelectorAll('#calibration tbody tr')].map("
                       "tr => [...tr.cells].map(td => td.innerText.trim()))")
    heads = browser.js("[...document.querySelectorAll('#calibration thead th')].map("
                       "th => th.textContent.trim())")
    rt, stock = ({h: c for h, c in zip(heads, row, strict=True)} for row in cells)
    assert (rt["Flavor"], rt["Scenario"]) == ("rt", "idle")
    assert rt["False alarms"].startswith("5 % [0.61, 16.92] (2/40")
    assert rt["Power at +20 %"].startswith("77.5 % [61.55, 89.16] (31/40")
    assert (rt["Rounds to a verdict"], rt["Minutes to a verdict"]) == ("9", "22.5")
    assert rt["α at most"] == "no bound (a record before 2026-11-28)"
    assert rt["Power at least"] == "no bound"
    assert rt["P(same | unchanged)"].startswith("82.5 % [67.22, 92.66] (33/40")
    # 82.5 % same and 5 % false alarms decided: 12.5 % run to the plan's 5400 s cap.
    assert rt["Time to a verdict"].startswith("the cap, 90 min, for the 12.5 % of unchanged")
    assert stock["Rounds to a verdict"] == "not reached"
    assert stock["α at most"] == "3.1 %" and stock["Power at least"] == "21.4 %"
    assert stock["P(same | unchanged)"].endswith("; at least 23.1 %")
    assert stock["Time to a verdict"].startswith("the cap, 90 min, for the 45 % of unchanged")
    bounds = browser.js("document.querySelector('#bounds').nextElementSibling.innerText")
    assert "stock / idle: at the plan's 9 rounds a side" in bounds
    assert "α at most 3.1 %, power at +20 % at least 21.4 %, P(same | unchanged) at least " \
        "23.1 % (bounds of the rule's model; its check on the bank's replay: the replay " \
        "agrees" in bounds
    assert "This bank cannot show a plan: record 24 more rounds." in bounds
    assert "rt / idle" not in bounds  # no bounds, no note, 40 trials: nothing to add
    assert "say nothing about a\nRaspberry Pi" in (site / "boards" / "qemu-x86-tcg" /
                                                    "index.html").read_text()
    browser.goto((site / "boards" / "local" / "index.html").as_uri())
    assert "No calibration record" in browser.js("document.querySelector('#no-calibration')"
                                                 ".innerText")
