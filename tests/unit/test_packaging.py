"""pyproject.toml lists rtgate's packages by hand (reports/ installs as rtgate.reports, which no
search of rtgate/ finds): a package added under rtgate/ and not listed would be missing from a
plain `pip install .` while every editable-install test still passed."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _holding(top: Path, package: str) -> set[str]:
    """Every folder below ``top`` (itself included) that holds a file, as a package name."""
    return {".".join([package, *d.relative_to(top).parts])
            for d in [top, *top.rglob("*")]
            if d.is_dir() and d.name != "__pycache__"
            and any(f.is_file() for f in d.iterdir())}


def test_every_package_under_rtgate_is_installed_and_reports_is_rtgate_reports() -> None:
    """A folder of data only (the JSON Schemas, the page templates) is listed too: setuptools
    installs an unlisted one only as deprecated data."""
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    on_disk = _holding(ROOT / "rtgate", "rtgate") | _holding(ROOT / "reports", "rtgate.reports")
    listed = set(setuptools["packages"])
    assert listed == on_disk, (f"not in pyproject.toml's packages: {sorted(on_disk - listed)}; "
                               f"listed but gone: {sorted(listed - on_disk)}")
    assert setuptools["package-dir"] == {"rtgate.reports": "reports"}
    assert (ROOT / "reports" / "__init__.py").is_file()
