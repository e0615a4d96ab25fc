"""`rtgate compare`: the PR-comment table and the A/B decision, driven through the real CLI on
captured runs (tests/data/report) and rounds captured on this machine (tests/data/ab)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from clirun import RunCli
from gfm import Rendered

from rtgate.report.compare import change
from rtgate.result import Percentile, load_result
from rtgate.textfmt import fmt

DATA = Path(__file__).parents[1] / "data" / "report"
THRESHOLDS = DATA / "thresholds.yml"
AB = Path(__file__).parents[1] / "data" / "ab"
UNDECIDED = 4


def rows(markdown: str) -> dict[tuple[str, str, str], list[str]]:
    table = [line for line in markdown.splitlines() if line.startswith("| ")][2:]
    cells = [[c.strip() for c in line.strip("|").split(" | ")] for line in table]
    # Names are code spans (literal, never markup): the key is their text.
    cells = [[c.strip("`") for c in row[:3]] + row[3:] for row in cells]
    return {tuple(c[:3]): c[3:] for c in cells}


def test_before_after_delta_and_verdict_per_flavor_and_scenario(rtgate_cli: RunCli,
                                                                tmp_path: Path) -> None:
    out = tmp_path / "cmp.md"
    proc = rtgate_cli("compare", DATA / "local", DATA / "candidate", "--markdown", out,
                      "--thresholds", THRESHOLDS)
    # One round a side and no minimum effect in these budgets: the A/B test cannot decide.
    assert proc.returncode == UNDECIDED, proc.stderr
    table = rows(out.read_text())
    assert set(table) == {("local", "stock", "cpu"), ("local", "stock", "idle")}

    before = load_result(DATA / "local" / "stock-cpu" / "result.json").totals
    after = load_result(DATA / "candidate" / "stock-cpu" / "result.json").totals
    avg, mx, p9999, verdict, decision = table[("local", "stock", "cpu")]
    assert decision == "—"
    assert avg == change(before.avg_us, after.avg_us)
    assert avg.startswith(f"{fmt(before.avg_us)} → {fmt(after.avg_us)} (Δ ")
    assert mx == f"1128 → {after.max_us:g} (Δ +{after.max_us - 1128:g}, " \
                 f"+{(after.max_us - 1128) / 1128:.0%})"
    # The baseline's p99.99 is only a lower bound (histogram overflow): no delta is claimed.
    assert p9999.startswith("≥400 → ") and p9999.endswith("(Δ n/a: lower bound)")
    assert verdict == "❌ fail"  # candidate max 3209 µs > budget 1000 µs
    assert table[("local", "stock", "idle")][3] == "⚠️ incomplete"  # min_samples not met
    assert "`local` is a virtual board — not a real-time claim" in out.read_text()


def test_runs_on_one_side_only_are_named(rtgate_cli: RunCli, tmp_path: Path) -> None:
    out = tmp_path / "cmp.md"
    proc = rtgate_cli("compare", DATA / "qemu", DATA / "candidate" / "stock-idle",
                      "--markdown", out, "--thresholds", THRESHOLDS, "--min-effect-pct", "10")
    assert proc.returncode == UNDECIDED, proc.stderr
    table = rows(out.read_text())
    assert table[("local", "stock", "idle")][3] == "⚠️ incomplete (new: no baseline)"
    assert table[("qemu-x86-tcg", "rt", "cpu")][3] == "➖ not measured by the candidate"
    assert table[("qemu-x86-tcg", "rt", "cpu")][1] == "72394 → —"
    assert table[("qemu-x86-tcg", "rt", "cpu")][4] == "❔ unknown (1 vs 0 rounds)"


def test_names_from_results_cannot_break_the_table_or_inject_markup(rtgate_cli: RunCli,
                                                                    tmp_path: Path) -> None:
    base = load_result(DATA / "candidate" / "stock-idle" / "result.json")
    evil = base.model_copy(update={"scenario": "idle | <img src=x onerror=alert(1)> @team"})
    evil.write(tmp_path / "a" / "result.json")
    evil.model_copy(update={"run_id": "other"}).write(tmp_path / "b" / "result.json")
    out = tmp_path / "cmp.md"
    assert rtgate_cli("compare", tmp_path / "a", tmp_path / "b", "--markdown", out,
                      "--min-effect-pct", "5").returncode == UNDECIDED
    text = out.read_text()
    # As GitHub renders it: the name is literal text in a code span, no tag, link or mention.
    page = Rendered(text)
    # The A/B section's own headings, lists and emphasis are rtgate's text, never a result's.
    assert page.tags <= {"table", "thead", "tbody", "tr", "th", "td", "code", "p",
                         "blockquote", "h3", "ul", "li", "em", "strong"}, page.tags
    assert page.links == []
    assert "@" not in " ".join(page.plain)
    (row,) = rows(text).values()
    assert len(row) == 5


def test_a_missing_input_is_a_one_line_input_error(rtgate_cli: RunCli, tmp_path: Path) -> None:
    proc = rtgate_cli("compare", tmp_path / "nope", DATA / "candidate", "--markdown",
                      tmp_path / "x.md")
    assert proc.returncode == 2
    assert proc.stderr == f"rtgate: {tmp_path / 'nope'}: no such file or directory\n"
    assert not (tmp_path / "x.md").exists()


def test_change_text() -> None:
    assert change(10.0, 15.0) == "10 → 15 (Δ +5, +50%)"
    assert change(Percentile(value_us=20), Percentile(value_us=15)) == "20 → 15 (Δ −5, −25%)"
    assert change(None, 3.0) == "— → 3"


def compare_ab(rtgate_cli: RunCli, tmp_path: Path, base: Path, cand: Path, *options: str | Path
               ) -> tuple[subprocess.CompletedProcess[str], dict, str]:
    md, js = tmp_path / "ab.md", tmp_path / "ab.json"
    proc = rtgate_cli("compare", base, cand, "--markdown", md, "--json", js, *options)
    assert proc.returncode != 2, proc.stderr
    return proc, json.loads(js.read_text()), md.read_text()


def test_real_rounds_with_a_planted_load_are_worse(rtgate_cli: RunCli, tmp_path: Path) -> None:
    """Six interleaved rounds a side on `local`: B is the same kernel under an added
    SCHED_FIFO load (tests/data/ab/README.md). Exit 1, the effect and its interval above 0."""
    proc, doc, md = compare_ab(rtgate_cli, tmp_path,
                               AB / "idle", AB / "idle-loaded", "--min-effect-pct", "50")
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr == "rtgate compare: worse: a regression (exit 1)\n"
    (d,) = doc["decisions"]
    assert (d["board"], d["scenario"], d["outcome"]) == ("local", "idle", "worse")
    assert d["rounds"] == {"baseline": 6, "candidate": 6}
    head = d["primary"]
    assert head["metric"] == "p99.9" and 1.5 < head["low"] <= head["ratio"]
    assert d["statistic"] > d["boundary"] > 0
    assert doc["alpha"] == 0.01 and doc["exit"] == 1
    (row,) = rows(md).values()
    assert row[4].startswith(f"❌ worse: p99.9 {100 * (head['ratio'] - 1):+.1f} % [")
    assert "Effect reported: the primary metric's change B/A" in md
    # The gate's rule as one fixed-size look, said as such; these rounds have no block maxima,
    # so no stall test.
    assert doc["design"].startswith("A fixed-size test") and "A fixed-size test" in md
    assert d["stalls"] is None


def test_real_rounds_against_themselves_are_same(rtgate_cli: RunCli, tmp_path: Path) -> None:
    proc, doc, _ = compare_ab(rtgate_cli, tmp_path,
                              AB / "idle", AB / "idle", "--min-effect-pct", "100",
                              "--alpha", "0.2")
    # These 4 s idle rounds' p99.9 varies by about 50 %: at alpha 1 % their interval is wider
    # than a doubling, at 20 % it is within it.
    assert proc.returncode == 0, proc.stderr
    (d,) = doc["decisions"]
    assert d["outcome"] == "same"
    assert all(0.5 <= e["low"] <= e["ratio"] == 1 <= e["high"] <= 2 for e in d["effects"])


def test_an_a_a_pair_of_real_rounds_is_never_worse(rtgate_cli: RunCli, tmp_path: Path) -> None:
    """Two sets of idle rounds of the same kernel on a busy host: not decided at a 50 % margin
    (their p99.9 spreads by about 50 % from round to round), never a false 'worse'."""
    proc, doc, _ = compare_ab(rtgate_cli, tmp_path,
                              AB / "idle", AB / "idle-again", "--min-effect-pct", "50")
    assert proc.returncode == UNDECIDED, proc.stderr
    assert doc["decisions"][0]["outcome"] == "unknown"


def test_too_few_real_rounds_are_unknown_and_exit_4(rtgate_cli: RunCli, tmp_path: Path) -> None:
    base, cand = tmp_path / "base", tmp_path / "cand"
    for src, dst in ((AB / "idle", base), (AB / "idle-loaded", cand)):
        for r in ("r1", "r2"):
            (dst / r).mkdir(parents=True)
            (dst / r / "result.json").write_bytes((src / r / "result.json").read_bytes())
    proc, doc, md = compare_ab(rtgate_cli, tmp_path, base, cand, "--min-effect-pct", "50")
    assert proc.returncode == UNDECIDED
    assert proc.stderr == "rtgate compare: undecided: measure more rounds (exit 4)\n"
    (d,) = doc["decisions"]
    assert d["outcome"] == "unknown" and d["primary"] is None
    assert d["reasons"] == ["A has 2 round(s), fewer than 3", "B has 2 round(s), fewer than 3"]
    assert "`A has 2 round(s), fewer than 3`" in md


def test_the_minimum_effect_comes_from_the_budgets_ab_block(rtgate_cli: RunCli,
                                                            tmp_path: Path) -> None:
    thresholds = tmp_path / "thresholds.yml"
    thresholds.write_text(
        "schema: rtgate/thresholds/v2\nbudgets:\n"
        "  - {board: local, flavor: '*', scenario: '*', max_us: 30000, avg_us: 100,\n"
        "     ab: {min_effect_pct: 100, alpha: 0.05}, reason: test}\n")
    proc, doc, _ = compare_ab(rtgate_cli, tmp_path,
                              AB / "idle", AB / "idle", "--thresholds", thresholds)
    assert proc.returncode == 0, proc.stderr
    assert doc["alpha"] == 0.05 and doc["decisions"][0]["min_effect_pct"] == 100
    # Without an ab block and without --min-effect-pct a key is not compared: undecided.
    proc, doc, md = compare_ab(rtgate_cli, tmp_path,
                               AB / "idle", AB / "idle", "--thresholds", THRESHOLDS)
    assert proc.returncode == UNDECIDED and doc["decisions"] == []
    assert "no minimum effect" in doc["notes"][0]


def test_an_output_must_be_named(rtgate_cli: RunCli, tmp_path: Path) -> None:
    proc = rtgate_cli("compare", AB / "idle", AB / "idle")
    assert proc.returncode == 2
    assert proc.stderr == ("rtgate: rtgate compare: give --markdown OUT.md, --json OUT.json "
                           "or both\n")


def test_rounds_of_different_tools_are_not_compared(rtgate_cli: RunCli, tmp_path: Path) -> None:
    """A timerlat round against cyclictest rounds of the same key: two ways of measuring, so
    their difference is no effect of the kernel. Not compared, undecided (exit 4), said why."""
    cand = tmp_path / "cand"
    for r in sorted(p.name for p in (AB / "idle").iterdir() if p.is_dir()):
        doc = json.loads((AB / "idle" / r / "result.json").read_text())
        if r == "r1":
            doc["tool"] = {"name": "rtla timerlat", "version": "6.12"}
        (cand / r).mkdir(parents=True)
        (cand / r / "result.json").write_text(json.dumps(doc))
    proc, doc, md = compare_ab(rtgate_cli, tmp_path, AB / "idle", cand, "--min-effect-pct", "100")
    assert proc.returncode == UNDECIDED, proc.stderr
    assert doc["decisions"] == []
    assert doc["notes"] == ["`local/stock/idle`: measured with different tools (`cyclictest`, "
                            "`rtla timerlat`): not compared"]
