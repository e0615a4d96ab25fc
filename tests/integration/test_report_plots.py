"""Plots by the real gnuplot: series titles, budget lines where the budget is, SVG and PNG."""

from __future__ import annotations

import math
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from clirun import RunCli

from rtgate.report import plots
from rtgate.report.plots import gp_text
from rtgate.result import load_result

pytestmark = pytest.mark.integration

DATA = Path(__file__).parents[1] / "data" / "report"
THRESHOLDS = DATA / "thresholds.yml"
BUDGET_STROKE = "rgb( 68,  68,  68)"  # #444444, the budget colour in reports/histogram.gp


def report(rtgate_cli: RunCli, *args: str | Path) -> subprocess.CompletedProcess[str]:
    proc = rtgate_cli("report", *map(str, args))
    assert proc.returncode == 0, proc.stderr
    return proc


def svg_texts(path: Path) -> list[str]:
    return re.findall(r"<text[^>]*>(.*?)</text>", path.read_text())


def plot_box(svg: str) -> tuple[float, float]:
    """x of the left and right end of the x axis (the border path gnuplot draws)."""
    m = re.search(r"d='M([\d.]+),[\d.]+ L\1,([\d.]+) L([\d.]+),\2", svg)
    assert m, "no plot border"
    return float(m.group(1)), float(m.group(3))


def vertical_budget_lines(svg: str) -> list[float]:
    lines = re.findall(rf"stroke='{re.escape(BUDGET_STROKE)}' stroke-dasharray='[\d.,]+'  "
                       r"d='M([\d.]+),([\d.]+) L([\d.]+),([\d.]+)", svg)
    return [float(x1) for x1, y1, x2, y2 in lines if x1 == x2 and y1 != y2]


@pytest.fixture(scope="module")
def site(rtgate_cli: RunCli, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    report(rtgate_cli, DATA, "--thresholds", THRESHOLDS, "--out", out)
    return out


def test_per_core_histogram_has_max_per_core_in_the_legend_and_the_budget_line(
        site: Path) -> None:
    result = load_result(DATA / "candidate" / "stock-cpu" / "result.json")
    svg = site / "runs" / result.run_id / "histogram.svg"
    titles = svg_texts(svg)
    for t in result.threads:
        assert f"CPU{t.cpu} max {t.max_us:g} µs" in titles
    assert "budget max 1000 µs" in titles  # inside the histogram's range, drawn
    # A 20 ms histogram filled to 3.2 ms: log-spaced bins on a log axis from 0.5 µs.
    columns = [dict(t.histogram.buckets) for t in result.threads if t.histogram]
    xmax = plots.histogram_xmax(columns, 20_000, [1000])
    assert plots.log_scale(xmax)
    # The axis starts a decade below the lowest filled bin.
    xmin = float(plots.histogram_args(len(columns), xmax, [], True, columns)[-1])
    assert xmin == 10 ** math.floor(math.log10(min(min(c) for c in columns)))
    left, right = plot_box(svg.read_text())
    (x,) = vertical_budget_lines(svg.read_text())
    share = math.log(1000 / xmin) / math.log(xmax / xmin)
    assert x == pytest.approx(left + share * (right - left), abs=1.0)
    assert (svg.with_suffix(".png")).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_budget_beyond_the_histogram_is_named_off_scale(site: Path) -> None:
    result = load_result(DATA / "local" / "stock-idle" / "result.json")
    svg = site / "runs" / result.run_id / "histogram.svg"
    titles = svg_texts(svg)
    assert "CPU0 max 4199 µs, 23 ≥ 400" in titles  # overflows beyond the -h400 histogram
    assert "budget max 100000 µs (off scale)" in titles
    assert vertical_budget_lines(svg.read_text()) == []


def test_stock_vs_rt_overlay_of_the_same_board_and_scenario(site: Path) -> None:
    titles = svg_texts(site / "plots" / "overlay-qemu-x86-tcg--idle.svg")
    assert "stock 6.1.0-56-amd64: max 26211 µs" in titles
    assert "rt 6.1.0-56-rt-amd64: max 18255 µs" in titles
    assert {"budget stock-max 30000 µs (off scale)", "budget rt-max 100000 µs (off scale)"} \
        <= set(titles)
    # Boards with one flavor only get no overlay.
    assert sorted(p.name for p in (site / "plots").glob("overlay-*.svg")) == [
        "overlay-qemu-x86-tcg--cpu.svg", "overlay-qemu-x86-tcg--idle.svg"]


def test_trend_has_max_avg_p9999_and_budgets(site: Path) -> None:
    home = site / "keys" / "local--stock--cpu"
    svg = home / "last30" / "trend.svg"
    titles = svg_texts(svg)
    assert {"max", "avg", "p99.99", "budget max", "budget avg", "budget p99.99",
            "kernel change", "6.18.44-fc-v657"} <= set(titles)
    data = (home / "last30" / "trend.dat").read_text().splitlines()
    # Oldest first; the old run's p99.99 is a lower bound (overflow), the new one exact; the
    # budget in force at each (max, p99.99, avg).
    assert [row.split()[2:4] + row.split()[5:] for row in data[1:]] == [
        ["400", "1", "1000", "NaN", "1000"], ["1174", "0", "1000", "NaN", "1000"]]
    assert svg.with_suffix(".png").stat().st_size > 1000
    # Years of runs are drawn as images whose size does not grow with them.
    assert not (home / "all" / "trend.svg").exists()
    assert (home / "all" / "trend.png").stat().st_size > 1000


def test_unchanged_plots_are_not_redrawn(rtgate_cli: RunCli, site: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    shutil.copytree(site, out, copy_function=shutil.copy2)
    stamps = {p: p.stat().st_mtime_ns for p in out.rglob("*.svg")}
    report(rtgate_cli, DATA, "--thresholds", THRESHOLDS, "--out", out)
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*.svg")} == stamps


def test_untrusted_kernel_strings_reach_gnuplot_harmless(rtgate_cli: RunCli,
                                                         tmp_path: Path) -> None:
    canary = tmp_path / "pwned"
    base = load_result(DATA / "qemu" / "rt-idle" / "result.json")
    evil = base.kernel.model_copy(update={
        "release": f"6.1' ; system('touch {canary}') ; print '`touch {canary}`\"<svg>"})
    for flavor in ("stock", "rt"):
        run = base.model_copy(update={"run_id": f"evil-{flavor}",
                                      "kernel": evil.model_copy(update={"flavor": flavor})})
        run.write(tmp_path / flavor / "result.json")
    report(rtgate_cli, tmp_path / "stock", tmp_path / "rt", "--out", tmp_path / "site")
    assert not canary.exists()
    titles = svg_texts(tmp_path / "site" / "plots" / "overlay-qemu-x86-tcg--idle.svg")
    (legend,) = [t for t in titles if t.startswith("stock ")]
    assert legend.startswith("stock 6.1") and legend.endswith(": max 18255 µs")
    assert not set("'\"`<>&$@\\") & set(legend)
    assert gp_text("a'b\"c`d$e@f\\g<h>") == "abcdefgh"


def test_a_gnuplot_failure_is_an_infrastructure_error_and_leaves_no_image(
        tmp_path: Path) -> None:
    from rtgate.errors import Exit, InfraError
    from rtgate.report.plots import Plot, histogram_table, render

    (tmp_path / "h.dat").write_text(histogram_table("latency_us", [("CPU0", {5: 3})], 10,
                                                    log=False))
    broken = Plot("histogram.gp", Path("h.dat"), Path("h"), ("not-a-number", "10", "", ""))
    with pytest.raises(InfraError) as caught:
        render([broken], tmp_path)
    assert caught.value.code == Exit.INCOMPLETE and "gnuplot failed" in str(caught.value)
    assert not (tmp_path / "h.svg").exists() and not (tmp_path / "h.png").exists()
    assert not list(tmp_path.glob(".plots-*"))
