"""Where rtgate finds its files.

Two kinds. What ships with the code — JSON Schemas, the guest's init script, and reports/ (the
report definitions: gnuplot plots, page templates, the stylesheet) — is package data, found
whether rtgate runs from a checkout or from a plain ``pip install .``. The repository's data,
which maintainers review as data — bench/ (scenarios, boards), thresholds.yml, kernel/, docker/ —
is not installed: it is read from ``RTGATE_ROOT`` when that is set, else from the working
directory when it holds it, else from the source checkout the package was loaded from (an
editable install). An installed rtgate run outside a checkout finds none, and says so
(``require``).
"""

from __future__ import annotations

import os
from pathlib import Path

from rtgate.errors import InputError

PACKAGE = Path(__file__).resolve().parent


def _reports() -> Path:
    # Installed, reports/ is the package rtgate.reports beside these modules (pyproject.toml
    # maps it there); from a checkout (an editable install, .github/rtgate) it is the directory
    # beside rtgate/. Never looked up by import: another tree's editable install would answer.
    installed = PACKAGE / "reports"
    return installed if installed.is_dir() else PACKAGE.parent / "reports"


REPORTS = _reports()

_MARKERS = ("thresholds.yml", "bench")


def _holds_data(directory: Path) -> bool:
    return any((directory / marker).exists() for marker in _MARKERS)


def _data_root() -> Path:
    explicit = os.environ.get("RTGATE_ROOT")
    if explicit:
        return Path(explicit)
    for candidate in (Path.cwd(), PACKAGE.parent):
        if _holds_data(candidate):
            return candidate
    return Path.cwd()  # nothing there: the first read names the file and `require` says why


ROOT = _data_root()
SCENARIOS = ROOT / "bench" / "scenarios"
BOARDS = ROOT / "bench" / "boards"
THRESHOLDS = ROOT / "thresholds.yml"
KERNEL = ROOT / "kernel"
CALIBRATION = ROOT / "bench" / "calibration"


def require(path: Path, option: str) -> Path:
    """``path`` when it exists, else an InputError saying where rtgate looked and what to pass."""
    if path.exists():
        return path
    where = ("RTGATE_ROOT" if os.environ.get("RTGATE_ROOT")
             else "the working directory (no rtgate checkout found)")
    raise InputError(f"not found: rtgate reads {path.name} from {where}; run it from a checkout "
                     f"of the repository, set RTGATE_ROOT=DIR, or give {option}", path=path)


def shown(path: Path | str) -> str:
    """``path`` relative to the data root when it lies inside it (a printed plan reads the same
    on every checkout), else as given."""
    try:
        return str(Path(path).resolve().relative_to(ROOT.resolve()))
    except ValueError:
        return str(path)


def shown_source(source: str) -> str:
    """A ``file:line`` (a budget's source) with its file ``shown``."""
    where, _, line = source.rpartition(":")
    return f"{shown(where)}:{line}" if where else source
