"""Numbers as text, the same way in every output (console, Markdown, JUnit, the site)."""

from __future__ import annotations


def fmt(value: float) -> str:
    """Numbers as a maintainer writes them: 155, 7.4, 36802 — no float noise."""
    return str(int(value)) if float(value).is_integer() else f"{value:.2f}".rstrip("0").rstrip(".")
