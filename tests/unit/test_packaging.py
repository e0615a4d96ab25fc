"""pyproject.toml lists rtgate's packages by hand (reports/ installs as rtgate.reports, which no
search of rtgate/ finds): a package added under rtgate/ and not listed would be missing from a
plain `pip install .` while every editable-install test still passed."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_package_under_rtgate_is_installed_and_reports_is_rtgate_reports() -> None:
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    on_disk = {".".join(init.parent.relative_to(ROOT).parts)
               for init in (ROOT / "rtgate").rglob("__init__.py")}
    listed = set(setuptools["packages"]) - {"rtgate.reports"}
    assert listed == on_disk, (f"not in pyproject.toml's packages: {sorted(on_disk - listed)}; "
                               f"listed but gone: {sorted(listed - on_disk)}")
    assert "rtgate.reports" in setuptools["packages"]
    assert setuptools["package-dir"] == {"rtgate.reports": "reports"}
    assert (ROOT / "reports" / "__init__.py").is_file()
