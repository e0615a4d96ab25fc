"""Markdown as GitHub shows it (GFM with autolinks, via markdown-it), for tests of text that
reaches a pull-request comment or a step summary."""

from __future__ import annotations

from html.parser import HTMLParser

from markdown_it import MarkdownIt


class Rendered(HTMLParser):
    """Text outside <code>, the links and the tags of the comment as GitHub's GFM shows it."""

    TAGS = {"p", "h2", "h3", "ul", "li", "strong", "table", "thead", "tbody", "tr", "th", "td",
            "details", "summary", "code", "blockquote", "a", "em"}

    def __init__(self, markdown: str) -> None:
        super().__init__()
        self.plain: list[str] = []
        self.links: list[str] = []
        self.tags: set[str] = set()
        self.depth = 0
        md = MarkdownIt("gfm-like", {"html": True})
        md.linkify.set({"fuzzy_link": True, "fuzzy_email": True})
        self.feed(md.render(markdown))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        if tag == "code":
            self.depth += 1
        if tag == "a":
            self.links.append(dict(attrs).get("href") or "")

    def handle_endtag(self, tag: str) -> None:
        if tag == "code":
            self.depth -= 1

    def handle_data(self, data: str) -> None:
        if self.depth == 0:
            self.plain.append(data)
