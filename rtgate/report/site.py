"""The static results site: plain HTML + CSS, relative links only.

    SITE/index.html                  latest run per board × flavor × scenario, stock-vs-RT plots
    SITE/history.html                every run, a trend plot per board × flavor × scenario
    SITE/runs/<run>/index.html       one run: plots, environment, verdicts, downloads
    SITE/runs/<run>/result.json      the downloads: the result and,
    SITE/runs/<run>/raw/NAME.txt     as text, its raw tool outputs
    SITE/plots/                      overlay and trend plots with their data files
    SITE/bisect/<name>/index.html    one bisect: its outcome and evidence (report.bisectpage)

Every link is relative, so the site works from ``file://`` and from any Pages sub-path. Every
string from a result is escaped by the template engine: kernel strings are written by PR authors.
Files from a run are data too: Pages serves a file by its extension, and an ``.html``, ``.svg`` or
XHTML ``.xml`` runs its script on the site's origin. So raw outputs are published only as
``.txt``, only of the types tools write, and a JUnit report is never copied.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections import defaultdict
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jinja2

from rtgate import __version__, calibration, paths, tools
from rtgate.board.spec import board_kind
from rtgate.ciout import escape
from rtgate.errors import InputError
from rtgate.gate.verdict import Infra
from rtgate.layout import RAW, RESULT
from rtgate.report import bins, bisectpage, longterm, plots
from rtgate.report.files import publish, write_if_changed
from rtgate.report.judge import NO_BUDGET, Judge, Judged, budget_text
from rtgate.report.runs import RunFiles
from rtgate.report.summary import RunSummary, safe_name
from rtgate.result import Percentile, Result
from rtgate.textfmt import fmt

STYLE = "style.css"
# The newest runs of each board × flavor × scenario kept in full: their page, histogram plot,
# result.json and raw outputs. Older runs live on in the long-term views and downloads.
FULL_RUNS = 5
# What the site is made of below its root: every file there is this build's (_prune).
AREAS = ("runs", "bisect", "plots", "keys", "boards", "data")
DATA = "data"
INDEX_JSONL = "index.jsonl"
INDEX_CSV = "index.csv"
# The MkDocs site, built into SITE/docs by the workflow before the results are rendered.
DOCS = "docs"
# The raw outputs a run page offers (by extension): what cyclictest, the loads and the parsers
# write. Each is published as NAME.txt, served as text/plain whatever it holds.
RAW_TYPES = frozenset({"json", "hist", "txt", "log", "stdout", "stderr", "csv", "dat"})
_OPS = {"<=": "≤", ">=": "≥"}
# What a maintainer looks for first on a run page, as (label, environment keys in order of
# preference). Whatever else the environment holds is listed below them.
FEATURED_ENVIRONMENT = (
    ("Kernel release", ("kernel_release",)),
    ("Kernel version", ("kernel_version",)),
    ("Kernel command line", ("cmdline",)),
    ("CPU frequency governor", ("cpufreq_governors", "governor")),
    ("Isolated CPUs", ("isolated_cpus", "isolcpus")),
    ("Temperatures", ("max_temp_c", "max_temp_zone", "temperatures_c", "temperatures")),
)
# The rows of a run's latency table: (label, Totals field, the gate's metric name for its check).
METRICS = (
    ("samples", "samples", "samples"), ("min", "min_us", None), ("avg", "avg_us", "avg_us"),
    ("p50", "p50", None), ("p99", "p99", "p99_us"), ("p99.9", "p99_9", None),
    ("p99.99", "p99_99", "p9999_us"), ("max", "max_us", "max_us"),
    ("stddev", "stddev_us", None),
)


Loader = Callable[[RunSummary], RunFiles | None]


def _identity(judge: Judge, docs: bool) -> str:
    """The build a run page comes from: rtgate, its report definitions, the budgets."""
    definitions = sorted((p.name, p.stat().st_mtime_ns) for p in paths.REPORTS.rglob("*")
                         if p.is_file())
    return json.dumps([__version__, definitions, judge.identity, docs])


@dataclass(frozen=True)
class Page:
    run: RunFiles
    summary: RunSummary
    judged: Judged

    @property
    def href(self) -> str:
        return f"runs/{self.summary.dir}/index.html"

    @property
    def result(self) -> Result:
        return self.run.result


def _us(value: float | Percentile | None) -> str:
    if value is None:
        return "—"
    return str(value) if isinstance(value, Percentile) else fmt(value)


def _when(iso: str | None, pattern: str = "%Y-%m-%d %H:%M:%S") -> str:
    if not iso:
        return "—"
    try:
        moment = datetime.fromisoformat(iso)
    except ValueError:
        return iso
    if moment.utcoffset() is None:
        return moment.strftime(pattern)
    return moment.astimezone(UTC).strftime(pattern) + " UTC"


def _short_when(iso: str | None) -> str:
    """Table cells: minutes are enough to tell runs apart, and the table must fit a screen."""
    return _when(iso, "%Y-%m-%d %H:%M").removesuffix(" UTC")


def _rate(rate: calibration.Rate) -> str:
    """``1.2 % [0.3, 4.1] (3/250, Clopper-Pearson 95 %)``."""
    return (f"{fmt(rate.value * 100)} % [{fmt(rate.low * 100)}, {fmt(rate.high * 100)}] "
            f"({rate.events}/{rate.trials}, {rate.method})")


def _pct(share: float) -> str:
    return f"{fmt(round(share * 100, 2))} %"


def _verdict_time(record: calibration.CalibrationRecord, key: calibration.KeyCalibration) -> str:
    """How long an unchanged kernel's A/B takes on this kind, from the record alone: a run the
    rule leaves undecided measures until the plan's cap, and the replay says how many are."""
    cap = f"{fmt(round(record.plan.max_time_s / 60, 1))} min"
    decided = key.same_within_cap.value + key.false_alarm.value
    if decided >= 1:
        return f"within the cap ({cap}): every replayed unchanged kernel was decided"
    return (f"the cap, {cap}, for the {_pct(1 - decided)} of unchanged kernels the replay left "
            "undecided (exit 4); sooner for the rest")


def _environment_value(value: Any) -> str:
    if value in (None, "", {}, []):
        return ""
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    return str(value)


def _templates() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(paths.REPORTS / "templates"),
        autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["us"] = _us
    env.filters["when"] = _when
    env.filters["short_when"] = _short_when
    env.filters["rate"] = _rate
    env.filters["pct"] = _pct
    env.globals["verdict_time"] = _verdict_time
    env.globals["resolution"] = calibration.resolution_words
    env.globals["version"] = __version__
    env.globals["docs"] = False  # a results site sets it when the MkDocs site is beside it
    return env


def _key_name(*parts: str) -> str:
    return safe_name("--".join(parts))


class Site:
    def __init__(self, out: Path, judge: Judge, calibration: Path = paths.CALIBRATION) -> None:
        self.out = out
        self.judge = judge
        self.calibration = calibration
        self.templates = _templates()
        self.plots: list[plots.Plot] = []
        self.files: set[Path] = set()
        """Pages and downloads of this build, relative to ``out``."""

    def build(self, summaries: Sequence[RunSummary], full: Collection[str], load: Loader,
              failures: Sequence[Infra] = (),
              bisects: Sequence[bisectpage.BisectFiles] = ()) -> Path:
        """The site of these runs, given oldest publication first (the last of a key is its
        latest): every run in the long-term views and downloads, and those in ``full`` (run
        ids: the newest of each key) with their own page, plots and raw files, each read by
        ``load`` only when its page is out of date; ``failures`` (runs the lab could not
        measure) are listed on the index, and each of ``bisects`` gets its page."""
        self.out.mkdir(parents=True, exist_ok=True)
        docs = (self.out / DOCS / "index.html").is_file()
        self.templates.globals["docs"] = docs
        self.identity = _identity(self.judge, docs)
        by_key: dict[tuple[str, str, str], list[RunSummary]] = defaultdict(list)
        for summary in summaries:
            by_key[summary.key].append(summary)
        pages: dict[str, str] = {}
        """href of each run with its own page, by run id."""
        todo = []
        for s in summaries:
            if s.run_id in full:
                fingerprint = self._fingerprint(s)
                if not self._current(s, fingerprint):
                    run = load(s)
                    if run is None:
                        continue
                    page = Page(run, s, self.judge(run))
                    todo.append((page, {**self._run(page), "fingerprint": fingerprint}))
                pages[s.run_id] = f"runs/{s.dir}/index.html"
        latest = [self._row(g[-1], pages) for k in sorted(by_key) if (g := by_key[k])]
        bisect_pages = [(Path("bisect", name), self._bisect(Path("bisect", name), b))
                        for name, b in zip(bisectpage.page_names(bisects), bisects, strict=True)]
        overlays = self._overlays([g[-1] for _, g in sorted(by_key.items())])
        groups = [self._key(k, by_key[k], pages) for k in sorted(by_key)]
        boards = self._boards(summaries)
        self._downloads(summaries)
        plots.render(self.plots, self.out)
        self._prune()

        publish(paths.REPORTS / STYLE, self.out / STYLE)
        for page, context in todo:
            self._write(Path("runs", page.summary.dir), "run.html", root="../../", **context)
        for home, context in bisect_pages:
            self._write(home, "bisect.html", root="../../", **context)
        for g in groups:
            if g["ranges"] is not None:
                self._write(Path(g["home"]), "key.html", root="../../", page="history", g=g,
                            fingerprint=g["fingerprint"])
        for b in boards:
            self._write(Path(b["home"]), "calibration.html", root="../../", page="boards", b=b)
        self._write(None, "boards.html", page="boards", boards=boards)
        self._write(None, "history.html", page="history", groups=groups, total=len(summaries))
        generated = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
        return self._write(None, "index.html", page="index", rows=latest, overlays=overlays,
                           total=len(summaries), generated=generated, failures=failures,
                           boards={b["board"]: b for b in boards},
                           bisects=[{"href": f"{home.as_posix()}/index.html", **context}
                                    for home, context in bisect_pages])

    def _fingerprint(self, s: RunSummary) -> str:
        """What a run's page is made from: its index line and everything the site's build
        depends on (rtgate, its templates, the budgets)."""
        return hashlib.sha256(
            (self.identity + s.model_dump_json()).encode()).hexdigest()[:32]

    def _current(self, s: RunSummary, fingerprint: str) -> bool:
        """The run's page was made from the same run and the same build: keep it and every
        file beside it, without reading its result again."""
        return self._current_page(Path("runs", s.dir, "index.html"), fingerprint)

    def _current_page(self, page: Path, fingerprint: str) -> bool:
        """``page`` (below the site) was made with ``fingerprint``: it and every file beside
        it are kept."""
        try:
            with open(self.out / page, "rb") as fh:
                head = fh.read(2048)
        except OSError:
            return False
        if f'<meta name="rtgate-fingerprint" content="{fingerprint}">'.encode() not in head:
            return False
        home = self.out / page.parent
        self.files |= {f.relative_to(self.out) for f in home.rglob("*") if f.is_file()}
        return True

    def _row(self, s: RunSummary, pages: Mapping[str, str]) -> dict[str, Any]:
        """A key's newest run in the index table, as judged when it was published."""
        d = s.digest
        return {"summary": s, "verdict": d.verdict if d else NO_BUDGET,
                "budget": budget_text(d.budget.items()) if d and d.budget else "—",
                "href": pages.get(s.run_id)}

    def _prune(self) -> None:
        """Remove what an earlier build of this site left and this one does not publish (an
        --out re-used with other results, or written by an older rtgate): every file under
        runs/, bisect/ and plots/ is a page, plot or download of this build."""
        keep = self.files | {p.data for p in self.plots} | {
            o.relative_to(self.out) for p in self.plots for o in p.outputs(self.out)}
        for area in AREAS:
            # Deepest first, so that a directory is emptied before it is looked at.
            for stale in sorted((self.out / area).rglob("*"), reverse=True):
                if stale.is_dir() and not stale.is_symlink():
                    if not any(stale.iterdir()):
                        stale.rmdir()
                elif stale.relative_to(self.out) not in keep:
                    stale.unlink()

    def _write(self, home: Path | None, template: str, root: str = "", page: str = "",
               **context: Any) -> Path:
        """A page: ``home``/index.html, or the site's own ``template`` at its top."""
        target = self.out / home / "index.html" if home else self.out / template
        html = self.templates.get_template(template).render(root=root, page=page, **context)
        write_if_changed(target, html)
        return target

    def _publish(self, src: Path, dest: Path) -> None:
        publish(src, self.out / dest)
        self.files.add(dest)

    def _bisect(self, home: Path, b: bisectpage.BisectFiles) -> dict[str, Any]:
        """Copy a bisect's downloads and return its page's context."""
        self.files.add(home / "index.html")
        context, downloads = bisectpage.context(b)
        for d in downloads:
            self._publish(d.src, home / d.dest)
        return context

    def _run(self, page: Page) -> dict[str, Any]:
        """Copy a run's downloads, plan its histogram, and return its page's context."""
        home = Path("runs", page.summary.dir)
        self.files.add(home / "index.html")
        result = page.result
        downloads = [{"href": RESULT, "name": RESULT, "what": "normalized result"}]
        self._publish(page.run.result_path, home / RESULT)
        withheld = []
        for raw in page.run.raw:
            name = raw_name(raw.name)
            if name is None or home / RAW / name in self.files:
                withheld.append(raw.name)
                continue
            self._publish(raw, home / RAW / name)
            downloads.append({"href": f"{RAW}/{name}", "name": raw.name,
                              "what": "raw tool output, as text"})
        return {
            "r": result, "s": page.summary, "judged": page.judged,
            "anchor": "k-" + _key_name(*page.summary.key),
            "histogram": self._histogram(page),
            "metrics": self._metrics(page),
            "measures": tool.measures if (tool := _tool(result)) else "wake-up latency",
            "environment": self._featured_environment(result),
            "other_environment": [
                (k, _environment_value(v)) for k, v in sorted(result.environment.items())
                if not any(k in keys for _, keys in FEATURED_ENVIRONMENT)],
            "downloads": downloads,
            "withheld": withheld,
        }

    def _metrics(self, page: Page) -> list[dict[str, str | None]]:
        checks = {c.metric: c for c in page.judged.checks}
        rows = []
        tool = _tool(page.result)
        if tool is not None and tool.measures != "wake-up latency":
            # Its own metrics, as the tool reads them from the result: never latency rows.
            measured = tool.measured(page.result)
            for m in tool.metrics:
                check = checks.get(m.name)
                value = measured.get(m.name)
                rows.append({
                    "name": m.name,
                    "value": "—" if value is None else f"{fmt(value)} {m.unit}",
                    "budget": f"{_OPS[check.op]} {fmt(check.budget)}{check.unit}" if check
                    else None,
                    "verdict": check.verdict.value if check else None})
            return rows
        for label, field, metric in METRICS:
            value = getattr(page.result.totals, field)
            check = checks.get(metric) if metric else None
            rows.append({
                "name": label,
                "value": str(value) if label == "samples" else _us(value),
                "budget": f"{_OPS[check.op]} {fmt(check.budget)}{check.unit}" if check else None,
                "verdict": check.verdict.value if check else None})
        return rows

    @staticmethod
    def _featured_environment(result: Result) -> list[tuple[str, str]]:
        env = {"kernel_release": result.kernel.release, "kernel_version": result.kernel.version,
               **{k: v for k, v in result.environment.items() if v not in (None, "")}}
        rows = []
        for label, keys in FEATURED_ENVIRONMENT:
            present = [(k, env[k]) for k in keys if env.get(k) not in (None, "", {}, [])]
            if len(present) == 1:
                rows.append((label, _environment_value(present[0][1])))
            else:
                rows.append((label, "; ".join(f"{k}={_environment_value(v)}"
                                              for k, v in present)))
        return rows

    def _histogram(self, page: Page) -> dict[str, str] | None:
        threads = [t for t in page.result.threads if t.histogram is not None]
        if not threads:
            return None
        columns: list[tuple[str, dict[int, int]]] = []
        for t in threads:
            assert t.histogram is not None
            name = f"CPU{t.cpu}" if t.cpu is not None else f"thread {t.thread}"
            title = f"{name} max {_us(t.max_us)} µs"
            if t.histogram.overflows:
                title += f", {t.histogram.overflows} ≥ {t.histogram.limit_us}"
            columns.append((title, bins.whole_us(t.histogram.buckets)))
        limit = max(t.histogram.limit_us for t in threads if t.histogram)
        budgets = page.judged.lines(("max", "p99.99"))
        log = self._plan("histogram.gp", f"runs/{page.summary.dir}/histogram", columns, limit,
                         budgets)
        return {"stem": "histogram",
                "bins": "log-spaced bins (20 a decade)" if log else "1 µs bins"}

    def _plan(self, template: str, stem: str, columns: list[tuple[str, dict[int, int]]],
              limit: int, budgets: list[tuple[str, float]], log: bool | None = None) -> bool:
        """A histogram plot: on log-spaced bins when asked (the columns already are) or when
        its range is wide (plots.LOG_ABOVE_US); says which."""
        xmax = plots.histogram_xmax([c for _, c in columns], limit, [v for _, v in budgets])
        log = plots.log_scale(xmax) if log is None else log
        data = Path(stem + ".dat")
        write_if_changed(self.out / data,
                         plots.histogram_table("latency_us", columns, xmax, log))
        self.plots.append(plots.Plot(template, data, Path(stem),
                                     plots.histogram_args(len(columns), xmax, budgets, log,
                                                          [c for _, c in columns])))
        return log

    def _overlays(self, latest: list[RunSummary]) -> list[dict[str, str]]:
        """Stock vs RT (every flavor) on the same board and scenario: the paper's Figure 1,
        from each newest run's digest (every thread, log-spaced bins, overflows left out)."""
        by_setup: dict[tuple[str, str], list[RunSummary]] = defaultdict(list)
        for s in latest:
            if s.digest and s.digest.hist:
                by_setup[(s.board, s.setup)].append(s)
        overlays = []
        for (board, scenario), group in sorted(by_setup.items()):
            if len(group) < 2:
                continue
            group.sort(key=lambda s: (s.flavor != "stock", s.flavor))
            columns, budgets, limit = [], [], 1
            for s in group:
                assert s.digest is not None
                hist = dict(s.digest.hist)
                if s.digest.limit_us is not None:
                    limit = max(limit, s.digest.limit_us)
                    if s.digest.overflows:
                        edge = bins.lower_edge(s.digest.limit_us)
                        hist[edge] -= s.digest.overflows
                # The kernel string is cut short so that the legend keeps the maximum.
                release = plots.gp_text(s.kernel_release or "", 32)
                columns.append((f"{plots.gp_text(s.flavor, 16)} {release}: max {_us(s.max_us)} µs",
                                {k: v for k, v in hist.items() if v > 0}))
                if "max" in s.digest.budget:
                    budgets.append((f"{s.flavor}-max", s.digest.budget["max"]))
            stem = f"plots/overlay-{_key_name(board, scenario)}"
            self._plan("histogram.gp", stem, columns, limit, budgets, log=True)
            overlays.append({"stem": stem,
                             "caption": f"{board} · {scenario}: "
                                        + " vs ".join(s.flavor for s in group)})
        return overlays

    def _key(self, key: tuple[str, str, str], group: list[RunSummary],
              pages: Mapping[str, str]) -> dict[str, Any]:
        """A key's long-term views (longterm.py) and the rows of its newest runs. Its index
        lines only ever grow at the end (or get a digest they lacked), so a key whose count,
        ends, digests and full runs are those its page was made from is kept as it is; its
        ranges are then None."""
        home = Path("keys", _key_name(*key))
        full = sum(1 for s in group if s.run_id in pages)
        fingerprint = hashlib.sha256((self.identity + json.dumps([
            len(group), group[0].model_dump_json(), group[-1].model_dump_json(),
            sum(1 for s in group if s.digest), full])).encode()).hexdigest()[:32]
        ranges = None
        if not self._current_page(home / "index.html", fingerprint):
            made = longterm.views(self.out, home, group)
            self.plots += made.plots
            self.files |= made.files | {home / "index.html"}
            ranges = made.ranges
        rows = [{"summary": s, "verdict": s.digest.verdict if s.digest else NO_BUDGET,
                 "href": pages.get(s.run_id)}
                for s in group[-longterm.LAST_RUNS:][::-1]]
        board, flavor, scenario = key
        return {"board": board, "flavor": flavor, "scenario": scenario,
                "anchor": "k-" + _key_name(*key), "home": home.as_posix(),
                "href": f"{home.as_posix()}/index.html", "ranges": ranges,
                "fingerprint": fingerprint,
                "virtual": any(s.virtual for s in group), "rows": rows, "count": len(group),
                "board_href": f"boards/{_key_name(board)}/index.html",
                "full": full}

    def _downloads(self, summaries: Sequence[RunSummary]) -> None:
        """The whole history index: as the store keeps it (JSON Lines, digests included) and as
        one CSV table of every run."""
        lines = "".join(
            json.dumps(s.model_dump(mode="json"), ensure_ascii=False) + "\n"
            for s in summaries)
        csv = longterm.csv_text(longterm.SERIES_FIELDS,
                                [longterm.series_row(s) for s in summaries])
        for name, text in ((INDEX_JSONL, lines), (INDEX_CSV, csv)):
            write_if_changed(self.out / DATA / name, text)
            self.files.add(Path(DATA, name))

    def _boards(self, summaries: Sequence[RunSummary]) -> list[dict[str, Any]]:
        """Each board's calibration page: the record of its kind (its board file's ``kind:``,
        rpi5 for rpi5-b), or a page saying the kind has none."""
        virtual: dict[str, bool] = {}
        for s in summaries:
            virtual[s.board] = virtual.get(s.board, False) or s.virtual
        boards = []
        for board in sorted(virtual):
            home = Path("boards", _key_name(board))
            self.files.add(home / "index.html")
            kind, record, problem = board, None, None
            try:
                kind = board_kind(board, paths.BOARDS)
                record = calibration.for_kind(kind, self.calibration)
            except InputError as exc:
                problem = exc.oneline()
                print(f"rtgate: {escape(problem)}", file=sys.stderr)
            boards.append({"board": board, "kind": kind, "virtual": virtual[board],
                           "record": record, "problem": problem, "home": home.as_posix(),
                           "href": f"{home.as_posix()}/index.html",
                           "source": f"bench/calibration/{kind}.json"})
        return boards


def _tool(result: Result) -> tools.MeasuringTool | None:
    """The result's measuring tool, if this rtgate knows it."""
    return tools.get(result.tool.name) if result.tool.name in tools.names() else None


def raw_name(name: str) -> str | None:
    """The name a raw output is published under (``cyclictest.json`` → ``cyclictest.json.txt``),
    or None when it is of no type in RAW_TYPES."""
    if Path(name).suffix.lower().removeprefix(".") not in RAW_TYPES:
        return None
    safe = safe_name(name)
    return safe if safe.endswith(".txt") else f"{safe}.txt"


def newest_per_key(summaries: Sequence[RunSummary], count: int = FULL_RUNS) -> list[RunSummary]:
    """The runs a site keeps in full: the newest ``count`` of each key."""
    seen: dict[tuple[str, str, str], int] = defaultdict(int)
    kept = []
    for s in reversed(summaries):
        seen[s.key] += 1
        if seen[s.key] <= count:
            kept.append(s)
    return kept[::-1]


def build(summaries: Sequence[RunSummary], full: Collection[str], load: Loader, out: Path,
          judge: Judge, failures: Sequence[Infra] = (),
          bisects: Sequence[bisectpage.BisectFiles] = (),
          calibration_dir: Path = paths.CALIBRATION) -> Path:
    """Write the site for these runs (and bisects) into ``out``; returns its index page."""
    return Site(out, judge, calibration_dir).build(summaries, full, load, failures, bisects)

