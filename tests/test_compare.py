"""`rtgate compare`: the PR-comment table, driven through the real CLI on captured runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from gfm import Rendered

from rtgate.gate.verdict import fmt
from rtgate.report.compare import change
from rtgate.result import Percentile, load_result

DATA = Path(__file__).parent / "data" / "report"
THRESHOLDS = DATA / "thresholds.yml"


def rtgate(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rtgate", *map(str, args)],
                          capture_output=True, text=True, timeout=60)


def rows(markdown: str) -> dict[tuple[str, str, str], list[str]]:
    table = [line for line in markdown.splitlines() if line.startswith("| ")][2:]
    cells = [[c.strip() for c in line.strip("|").split(" | ")] for line in table]
    # Names are code spans (literal, never markup): the key is their text.
    cells = [[c.strip("`") for c in row[:3]] + row[3:] for row in cells]
    return {tuple(c[:3]): c[3:] for c in cells}


def test_before_after_delta_and_verdict_per_flavor_and_scenario(tmp_path: Path) -> None:
    out = tmp_path / "cmp.md"
    proc = rtgate("compare", DATA / "local", DATA / "candidate", "--markdown", out,
                  "--thresholds", THRESHOLDS)
    assert proc.returncode == 0, proc.stderr
    table = rows(out.read_text())
    assert set(table) == {("local", "stock", "cpu"), ("local", "stock", "idle")}

    before = load_result(DATA / "local" / "stock-cpu" / "result.json").totals
    after = load_result(DATA / "candidate" / "stock-cpu" / "result.json").totals
    avg, mx, p9999, verdict = table[("local", "stock", "cpu")]
    assert avg == change(before.avg_us, after.avg_us)
    assert avg.startswith(f"{fmt(before.avg_us)} → {fmt(after.avg_us)} (Δ ")
    assert mx == f"1128 → {after.max_us:g} (Δ +{after.max_us - 1128:g}, " \
                 f"+{(after.max_us - 1128) / 1128:.0%})"
    # The baseline's p99.99 is only a lower bound (histogram overflow): no delta is claimed.
    assert p9999.startswith("≥400 → ") and p9999.endswith("(Δ n/a: lower bound)")
    assert verdict == "❌ fail"  # candidate max 3209 µs > budget 1000 µs
    assert table[("local", "stock", "idle")][3] == "⚠️ incomplete"  # min_samples not met
    assert "`local` is a virtual board — not a real-time claim" in out.read_text()


def test_runs_on_one_side_only_are_named(tmp_path: Path) -> None:
    out = tmp_path / "cmp.md"
    proc = rtgate("compare", DATA / "qemu", DATA / "candidate" / "stock-idle",
                  "--markdown", out, "--thresholds", THRESHOLDS)
    assert proc.returncode == 0, proc.stderr
    table = rows(out.read_text())
    assert table[("local", "stock", "idle")][3] == "⚠️ incomplete (new: no baseline)"
    assert table[("qemu-x86-tcg", "rt", "cpu")][3] == "➖ not measured by the candidate"
    assert table[("qemu-x86-tcg", "rt", "cpu")][1] == "72394 → —"


def test_names_from_results_cannot_break_the_table_or_inject_markup(tmp_path: Path) -> None:
    base = load_result(DATA / "candidate" / "stock-idle" / "result.json")
    evil = base.model_copy(update={"scenario": "idle | <img src=x onerror=alert(1)> @team"})
    evil.write(tmp_path / "a" / "result.json")
    evil.model_copy(update={"run_id": "other"}).write(tmp_path / "b" / "result.json")
    out = tmp_path / "cmp.md"
    assert rtgate("compare", tmp_path / "a", tmp_path / "b", "--markdown", out).returncode == 0
    text = out.read_text()
    # As GitHub renders it: the name is literal text in a code span, no tag, link or mention.
    page = Rendered(text)
    assert page.tags <= {"table", "thead", "tbody", "tr", "th", "td", "code", "p",
                         "blockquote"}, page.tags
    assert page.links == []
    assert "@" not in " ".join(page.plain)
    (row,) = rows(text).values()
    assert len(row) == 4


def test_a_missing_input_is_a_one_line_input_error(tmp_path: Path) -> None:
    proc = rtgate("compare", tmp_path / "nope", DATA / "candidate", "--markdown",
                  tmp_path / "x.md")
    assert proc.returncode == 2
    assert proc.stderr == f"rtgate: {tmp_path / 'nope'}: no such file or directory\n"
    assert not (tmp_path / "x.md").exists()


def test_change_text() -> None:
    assert change(10.0, 15.0) == "10 → 15 (Δ +5, +50%)"
    assert change(Percentile(value_us=20), Percentile(value_us=15)) == "20 → 15 (Δ −5, −25%)"
    assert change(None, 3.0) == "— → 3"
