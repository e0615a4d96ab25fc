"""Long-term views of a key: ranges, bounded heat maps, series as CSV and JSON."""

from __future__ import annotations

import csv
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from rtgate.report import longterm
from rtgate.report.provenance import Publication
from rtgate.report.summary import RunDigest, RunSummary

START = datetime(2024, 1, 1, tzinfo=UTC)


def summaries(count: int) -> list[RunSummary]:
    """A key published twice a day; a new kernel every 100 runs."""
    return [RunSummary(
        run_id=f"r{i}", dir=f"r{i}", board="rpi5", virtual=False, flavor="rt", scenario="idle",
        kernel_release=f"6.12.{i // 100}", start=(START + timedelta(hours=12 * i)).isoformat(),
        status="complete", samples=1000, avg_us=5.0, max_us=40.0 + i % 7,
        publication=Publication(seq=i + 1, published_at=START.isoformat(),
                                commit=f"{i:07x}" + "0" * 33),
        digest=RunDigest(kernel_version="#1 SMP PREEMPT_RT", verdict="pass",
                         budget={"max": 60.0}, hist=[(4, 900), (40, 100)]))
        for i in range(count)]


def test_three_ranges_and_heat_maps_of_bounded_size(tmp_path: Path) -> None:
    group = summaries(1000)  # 500 days
    made = longterm.views(tmp_path, Path("k"), group)
    assert [(r["name"], r["count"]) for r in made.ranges] == [
        ("last30", 30), ("year", 730), ("all", 1000)]
    for name, columns in (("last30", 30), ("year", longterm.HEAT_COLUMNS),
                          ("all", longterm.HEAT_COLUMNS)):
        rows = (tmp_path / "k" / name / "heat.dat").read_text().splitlines()[2:]
        assert len({tuple(r.split()[:2]) for r in rows}) == columns
        assert sum(int(r.split()[4]) for r in rows) == 1000 * len(select(group, name))
    series = list(csv.DictReader((tmp_path / "k" / "all" / "series.csv").open()))
    assert len(series) == 1000 and series[0]["budget_max_us"] == "60"
    assert json.loads((tmp_path / "k" / "year" / "series.json").read_text())["runs"][0][
        "run_id"] == "r270"
    marks = (tmp_path / "k" / "all" / "marks.dat").read_text().splitlines()[1:]
    assert [m.split()[2] for m in marks] == [f"6.12.{k}_{k * 100:07x}" for k in range(10)]
    assert {p.template for p in made.plots} == {"longterm.gp", "heatmap.gp"}
    assert [p.formats for p in made.plots if p.template == "longterm.gp"] == [
        ("svg", "png"), ("png",), ("png",)]


def select(group: list[RunSummary], name: str) -> list[RunSummary]:
    return longterm.select(group, name, longterm.when(group[-1]))
