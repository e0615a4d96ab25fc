"""`rtgate check` loads only what judging its budgets needs: with no pwcet_us budget, neither
scipy nor statsmodels (most of its start-up), nor numpy, jinja2 or rich.

In process: rtgate is imported anew for the test, with those packages made unimportable
(``sys.modules[name] = None`` makes ``import name`` fail), so that the session's earlier imports
cannot hide one; the session's own modules come back afterwards.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[1] / "data" / "results"
LOCAL = DATA / "local-cpu.result.json"  # a real cyclictest run: max 5721 µs, 96257 samples
HEAVY = ("scipy", "statsmodels", "pandas", "numpy", "jinja2", "rich")
BUDGET = """\
schema: rtgate/thresholds/v2
budgets:
  - board: local
    flavor: "*"
    scenario: cpu
    max_us: 10000
    avg_us: 50
    min_samples: 1000
{extra}    reason: test budget
"""

Main = Callable[[list[str]], int]


def _ours(name: str) -> bool:
    return name.split(".")[0] == "rtgate"


@pytest.fixture
def fresh_main(monkeypatch: pytest.MonkeyPatch) -> Iterator[Main]:
    """rtgate.cli.main of an rtgate imported anew, the heavy packages unimportable."""
    before = set(sys.modules)
    for name in filter(_ours, before):
        monkeypatch.delitem(sys.modules, name)
    for name in HEAVY:
        monkeypatch.setitem(sys.modules, name, None)
    yield importlib.import_module("rtgate.cli").main
    # The copies this test imported go; monkeypatch then puts the session's back.
    for name in filter(_ours, set(sys.modules) - before):
        del sys.modules[name]


def _check(main: Main, tmp_path: Path, extra: str = "") -> int:
    thresholds = tmp_path / "thresholds.yml"
    thresholds.write_text(BUDGET.format(extra=extra), encoding="utf-8")
    return main(["check", str(LOCAL), "--thresholds", str(thresholds),
                 "--junit", str(tmp_path / "junit.xml")])


def test_check_without_a_pwcet_budget_needs_no_heavy_package(
        fresh_main: Main, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _check(fresh_main, tmp_path) == 0
    out = capsys.readouterr().out
    assert "PASS       max_us measured 5721 µs" in out
    assert (tmp_path / "junit.xml").is_file()


def test_a_pwcet_budget_is_what_imports_them(
        fresh_main: Main, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The same check with a tail budget reaches for scipy: the test above would see an import.
    pwcet = "    pwcet_us: {per_hour: 0.001, max: 10000}\n"
    assert _check(fresh_main, tmp_path, extra=pwcet) == 3
    assert "internal error: ModuleNotFoundError" in capsys.readouterr().err
