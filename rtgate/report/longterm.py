"""Long-term views of one board × flavor × scenario, from the history index alone.

For each of three ranges (the last LAST_RUNS runs, the last year, every run) a key gets:

    keys/<key>/<range>/trend.png      max, p99.99, avg per run, the budget in force at each run,
                                      kernel changes (and, on the short range, each commit)
    keys/<key>/<range>/heatmap.png    latency over time: run date × log latency, log counts
    keys/<key>/<range>/series.csv|json    every run's numbers, budget, verdict, kernel, commit
    keys/<key>/<range>/heatmap.csv|json   every run's histogram on log-spaced bins (bins.EDGES)

The plots of years of runs are PNG only (an SVG grows with every point); the short range is
SVG too. The gnuplot data files (``*.dat``) are numbers only: kernel strings, which anyone may
write, reach gnuplot only through plots.gp_word.
"""

from __future__ import annotations

import csv
import io
import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from rtgate.report import bins, plots
from rtgate.report.files import write_if_changed
from rtgate.report.summary import RunSummary
from rtgate.textfmt import fmt

LAST_RUNS = 30
YEAR = timedelta(days=365)
# Time slices of a heat map: a range with more runs sums the runs of each slice.
HEAT_COLUMNS = 240
RANGES = (("last30", f"last {LAST_RUNS} runs"), ("year", "last year"), ("all", "all runs"))
SERIES_FIELDS = (
    "seq", "date", "run_id", "board", "flavor", "scenario", "virtual", "kernel_release",
    "kernel_version", "commit", "samples", "min_us", "avg_us", "p99_us", "p99_99_us",
    "p99_99_bound", "max_us", "budget_max_us", "budget_p99_99_us", "budget_avg_us", "verdict")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def when(s: RunSummary) -> datetime:
    """A run's date on the time axis: its start, else when it was published."""
    if s.started is not None:
        return s.started
    if s.publication is not None:
        try:
            published = datetime.fromisoformat(s.publication.published_at)
        except ValueError:
            return _EPOCH
        return published if published.utcoffset() is not None else published.replace(tzinfo=UTC)
    return _EPOCH


def series_row(s: RunSummary) -> dict[str, Any]:
    d = s.digest
    budget = d.budget if d else {}
    pub = s.publication
    row = {
        "seq": pub.seq if pub else None,
        "date": when(s).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "run_id": s.run_id, "board": s.board, "flavor": s.flavor, "scenario": s.setup,
        "virtual": s.virtual, "kernel_release": s.kernel_release,
        "kernel_version": d.kernel_version if d else None,
        "commit": pub.commit if pub else None, "samples": s.samples, "min_us": s.min_us,
        "avg_us": s.avg_us, "p99_us": s.p99.value_us if s.p99 else None,
        "p99_99_us": s.p99_99.value_us if s.p99_99 else None,
        "p99_99_bound": bool(s.p99_99 and s.p99_99.relation == ">="), "max_us": s.max_us,
        "budget_max_us": budget.get("max"), "budget_p99_99_us": budget.get("p99.99"),
        "budget_avg_us": budget.get("avg"), "verdict": d.verdict if d else None}
    # 1128, not 1128.0: a number as a maintainer writes it, in the CSV and the JSON alike.
    return {k: int(v) if isinstance(v, float) and v.is_integer() else v for k, v in row.items()}


# OWASP, "CSV Injection": a cell a spreadsheet would read as a formula starts with one of these;
# prefixed with a single quote it is text. Numbers stay numbers (only text cells are touched).
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> Any:
    """A cell of text from a run (a kernel release, a commit, a board) that opens no formula."""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


def csv_text(fields: Sequence[str], rows: Sequence[dict[str, Any]]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    writer.writerows({k: csv_cell(v) for k, v in row.items()} for row in rows)
    return buffer.getvalue()


def json_text(document: Any) -> str:
    return json.dumps(document, ensure_ascii=False, separators=(",", ":")) + "\n"


def _n(value: float | None) -> str:
    return "NaN" if value is None else fmt(value)


@dataclass(frozen=True)
class KeyViews:
    plots: list[plots.Plot]
    ranges: list[dict[str, Any]]
    files: set[Path]


def select(group: Sequence[RunSummary], name: str, newest: datetime) -> list[RunSummary]:
    if name == "last30":
        return list(group[-LAST_RUNS:])
    if name == "year":
        return [s for s in group if when(s) > newest - YEAR]
    return list(group)


def views(out: Path, home: Path, group: Sequence[RunSummary]) -> KeyViews:
    """Write one key's series, heat maps and plot data for every range; ``group`` oldest
    first. "The last year" is the year up to the key's newest run: it does not depend on the
    day the site is built, nor on other keys' runs."""
    newest = when(group[-1])
    made = KeyViews([], [], set())
    board, flavor, setup = group[-1].key
    for name, title in RANGES:
        runs = select(group, name, newest)
        where = home / name
        rows = [series_row(s) for s in runs]
        meta = {"board": board, "flavor": flavor, "scenario": setup, "range": title}
        heat = [{"run_id": s.run_id, "date": r["date"], "bins": s.digest.hist}
                for s, r in zip(runs, rows, strict=True) if s.digest and s.digest.hist]
        heat_table = _heat_table(runs)
        texts = {
            "series.csv": csv_text(SERIES_FIELDS, rows),
            "series.json": json_text({**meta, "runs": rows}),
            "trend.dat": _trend_table(runs),
            "marks.dat": _marks(runs, commits=name == "last30"),
            "heat.dat": heat_table,
        }
        if name == "all":
            # The histograms of every run, once: each shorter range's heat map is a slice.
            edges = _edges_used(heat)
            texts["heatmap.csv"] = _heat_csv(heat, edges)
            texts["heatmap.json"] = json_text({
                **meta, "bins": "[lower edge µs, count]; a bin ends where the next edge of "
                "bin_edges_us begins; overflows are counted in the bin of the histogram's "
                "limit", "bin_edges_us": edges, "runs": heat})
        for file, text in texts.items():
            write_if_changed(out / where / file, text)
            made.files.add(where / file)
        formats = ("svg", "png") if name == "last30" else ("png",)
        commits = int(name == "last30" and any(r["commit"] for r in rows))
        # A key whose runs have no latency (an OS noise tool's) has no latency trend to draw.
        trend = any(s.max_us is not None for s in runs)
        if trend:
            made.plots.append(plots.Plot(
                "longterm.gp", where / "trend.dat", where / "trend",
                (str(where / "marks.dat"), " ".join(formats), str(commits)),
                formats=formats))
        if heat:
            made.plots.append(plots.Plot(
                "heatmap.gp", where / "heat.dat", where / "heatmap",
                ("png", _origin(heat_table)), formats=("png",)))
        made.ranges.append({
            "name": name, "title": title, "count": len(runs),
            "stem": f"{name}/trend" if trend else None,
            "svg": "svg" in formats, "heatmap": f"{name}/heatmap" if heat else None,
            "first": rows[0]["date"] if rows else None,
            "last": rows[-1]["date"] if rows else None,
            "downloads": [f"{name}/{f}" for f in texts if not f.endswith(".dat")]
            + ([] if name == "all" else ["all/heatmap.csv", "all/heatmap.json"])})
    return made


def _edges_used(heat: Sequence[dict[str, Any]]) -> list[int]:
    top = max((lo for h in heat for lo, _ in h["bins"]), default=0)
    return [e for e in bins.EDGES if e <= bins.upper_edge(top)]


def _heat_csv(heat: Sequence[dict[str, Any]], edges: Sequence[int]) -> str:
    """One row a run, one column a log-spaced bin (its edges in µs), empty where it holds no
    sample: a spreadsheet's shape, at the cost of the filled bins."""
    columns = {lo: i for i, lo in enumerate(edges[:-1])}
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["date", "run_id", *(f"{lo}-{hi}us" for lo, hi in zip(
        edges, edges[1:], strict=False))])
    for h in heat:
        cells = [""] * len(columns)
        for lo, count in h["bins"]:
            cells[columns[lo]] = str(count)
        writer.writerow([csv_cell(h["date"]), csv_cell(h["run_id"]), *cells])
    return buffer.getvalue()


def _trend_table(runs: Sequence[RunSummary]) -> str:
    lines = ["# epoch max p99.99 bounded avg budget-max budget-p99.99 budget-avg"]
    for s in runs:
        budget = s.digest.budget if s.digest else {}
        p = s.p99_99
        lines.append(" ".join([
            str(int(when(s).timestamp())), _n(s.max_us), _n(p.value_us if p else None),
            str(int(bool(p and p.relation == ">="))), _n(s.avg_us), _n(budget.get("max")),
            _n(budget.get("p99.99")), _n(budget.get("avg"))]))
    return "\n".join(lines) + "\n"


def _marks(runs: Sequence[RunSummary], commits: bool) -> str:
    """Kernel changes (release or build), and each run's commit when asked."""
    lines = ["# epoch kind label"]
    before: tuple[str | None, str | None] | None = None
    for s in runs:
        kernel = (s.kernel_release, s.digest.kernel_version if s.digest else None)
        commit = (s.publication.commit or "")[:7] if s.publication else ""
        epoch = str(int(when(s).timestamp()))
        if kernel != before:
            label = f"{s.kernel_release or '?'}" + (f" {commit}" if commit else "")
            lines.append(f"{epoch} 1 {plots.gp_word(plots.gp_text(label, 40))}")
            before = kernel
        if commits and commit:
            lines.append(f"{epoch} 0 {plots.gp_word(commit)}")
    return "\n".join(lines) + "\n"


def _origin(heat_table: str) -> str:
    """The epoch a heat map's hours count from (its data's first line)."""
    return heat_table.split("\n", 1)[0].split()[-1]


def _heat_table(runs: Sequence[RunSummary]) -> str:
    """Non-empty cells: one column per run, or per time slice past HEAT_COLUMNS runs; x in
    hours after the first run (its epoch in the first line), so that a cell is a short row."""
    points = [(when(s).timestamp(), s.digest.hist) for s in runs if s.digest and s.digest.hist]
    if not points:
        return "# origin 0\n# hours-low hours-high y-low y-high count\n"
    times = [t for t, _ in points]
    origin = times[0]
    columns: dict[tuple[float, float], dict[int, int]] = defaultdict(lambda: defaultdict(int))
    if len(points) <= HEAT_COLUMNS:
        gaps = [b - a for a, b in zip(times, times[1:], strict=False)] or [86400.0]
        edges = [times[0] - gaps[0] / 2, *((a + b) / 2 for a, b in zip(times, times[1:],
                                                                       strict=False)),
                 times[-1] + gaps[-1] / 2]
        spans = [(edges[i], max(edges[i + 1], edges[i] + 1)) for i in range(len(points))]
    else:
        width = max(times[-1] - times[0], 1.0) / HEAT_COLUMNS
        spans = []
        for t in times:
            i = min(HEAT_COLUMNS - 1, int((t - origin) / width))
            spans.append((origin + i * width, origin + (i + 1) * width))
    for span, (_, hist) in zip(spans, points, strict=True):
        for lo, count in hist:
            columns[span][lo] += count
    lines = [f"# origin {origin:.0f}", "# hours-low hours-high y-low y-high count"]
    for (x0, x1), hist in columns.items():
        h0, h1 = f"{(x0 - origin) / 3600:.2f}", f"{(x1 - origin) / 3600:.2f}"
        lines += [f"{h0} {h1} {max(lo, plots.LOG_FLOOR_US):g} {bins.upper_edge(lo)} {count}"
                  for lo, count in sorted(hist.items())]
    return "\n".join(lines) + "\n"
