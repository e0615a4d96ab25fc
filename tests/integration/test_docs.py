"""The documentation site: `mkdocs build --strict` (no broken link or anchor, every page in the
nav), one generated page per command holding every option the command takes, and nothing the
pages load from another host; the README as its front door."""

from __future__ import annotations

import argparse
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from mkdocs.commands.build import build
from mkdocs.config import load_config

from rtgate.cli import EXIT_CODES, build_parser

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    # strict: any warning (a broken link or anchor, a page missing from the nav) aborts.
    build(load_config(str(ROOT / "mkdocs.yml"), site_dir=str(out), strict=True))
    return out


def commands() -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def option_strings(parser: argparse.ArgumentParser) -> set[str]:
    names = {s for a in parser._actions for s in a.option_strings}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                names |= option_strings(child)
    return names


@pytest.mark.parametrize("name", sorted(commands()))
def test_every_command_has_a_page_with_every_option(site: Path, name: str) -> None:
    page = (site / "commands" / name / "index.html").read_text()
    missing = sorted(o for o in option_strings(commands()[name]) if o not in page)
    assert not missing, f"commands/{name}: {missing}"


class _Loads(HTMLParser):
    """The scripts and stylesheets a page loads."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "script" and a.get("src"):
            self.urls.append(a["src"] or "")
        if tag == "link" and "stylesheet" in (a.get("rel") or "").split() and a.get("href"):
            self.urls.append(a["href"] or "")


def remote(url: str) -> bool:
    parts = urlsplit(url)
    return bool(parts.scheme or parts.netloc)


def test_nothing_is_loaded_from_another_host(site: Path) -> None:
    found = []
    for page in sorted(site.rglob("*.html")):
        loads = _Loads()
        loads.feed(page.read_text())
        found += [f"{page.relative_to(site)}: {u}" for u in loads.urls if remote(u)]
    for css in sorted(site.rglob("*.css")):
        for url in re.findall(r"@import\s+(?:url\()?['\"]?([^'\")\s;]+)|url\(['\"]?([^'\")]+)",
                              css.read_text()):
            found += [f"{css.relative_to(site)}: {u}" for u in url if u and remote(u)]
    assert not found


def test_the_readme_is_a_front_door() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 150
    # Its table of commands names every command, and no other.
    table = set(re.findall(r"^\| \[`rtgate (\w+)`\]", readme, re.M))
    assert table == set(commands())
    # Its exit codes are the CLI's.
    for code in re.findall(r"^  (\d)  ", EXIT_CODES, re.M):
        assert re.search(rf"^\| {code} \|", readme, re.M), code
    # Its links into the site name pages that exist.
    for page in re.findall(r"\]\((docs/[^)#]+)", readme):
        assert (ROOT / page).is_file(), page
