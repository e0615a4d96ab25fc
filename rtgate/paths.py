"""Where rtgate finds its data files (scenarios, boards, budgets, configs, templates).

They live at the top of the repository, next to the package, so that maintainers review them as
data. RTGATE_ROOT points elsewhere, e.g. inside a container that copied the tree.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(os.environ.get("RTGATE_ROOT", Path(__file__).resolve().parent.parent))
SCENARIOS = ROOT / "bench" / "scenarios"
BOARDS = ROOT / "bench" / "boards"
THRESHOLDS = ROOT / "thresholds.yml"
KERNEL = ROOT / "kernel"
REPORTS = ROOT / "reports"
