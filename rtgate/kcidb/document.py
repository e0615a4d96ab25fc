"""A gate run as one KCIDB report (kcidb-io schema v5.3, ``kcidb_io.schema.LATEST``).

What goes where (docs/kcidb.md):

- a **checkout** per kernel source and patch series: tree name, repository URL and commit for a
  git source, KCIDB's ``patchset_hash`` over the series (``record.patchset_hash``); a Debian
  ``linux-source`` package has no git commit, so its checkout names the package and version and
  carries no commit hash;
- a **build** per board target × flavor, from the build record kept with the results
  (``rtgate.kernel.record``): architecture, config name, compiler, duration, .config and log;
- per board run (board × flavor × scenario, or an A/B round) a **test** ``boot`` and tests
  ``rt-tests.TOOL.SCENARIO.GROUP.METRIC`` (GROUP ``all``, ``threadN`` or rtla's context; METRIC
  ``max``, ``p99_99``, ``avg``, ``pwcet``) whose ``number`` is the latency in seconds;
- per A/B board a test ``rt-tests.ab``;
- per exceeded budget an **issue** (the budget of that key on that checkout) and an
  **incident** (this run's test that exceeded it).

Statuses: a budget met PASS, exceeded FAIL, a number the gate could not trust (incomplete,
exit 3) or a run the lab did not measure ERROR, a number without a budget DONE, an A/B run
undecided at its time cap (exit 4) DONE with the reason in ``misc``; a kernel that crashed fails
its boot test. Ids are made from the origin, the gate run and the place of each run in its
artifact, never from a clock: sending the same run twice sends the same objects.

Everything from a result or build record is a gate artifact's, which a pull request's kernel
build and boot wrote: strings are cut, NULs and lone surrogates dropped, times and compatible
strings kept only when well formed, names in paths reduced to KCIDB's path characters. It is
JSON data, never markup; the document carries results and links, never a pull request's text.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from rtgate.gate.thresholds import flavor_of
from rtgate.gate.verdict import Check, Crash, Evaluation, Infra, Ruling, Verdict
from rtgate.kernel.record import BuildRecord
from rtgate.outcome import ABOutcome
from rtgate.report.site import raw_name
from rtgate.report.summary import safe_name
from rtgate.result import Result, Totals

SCHEMA_VERSION = {"major": 5, "minor": 3}
ORIGIN = re.compile(r"[a-z0-9_]+")
MAX_TEXT = 1000
MAX_COMPATIBLE = 16
# KCIDB's test.environment.compatible item pattern (kcidb-io v05_03).
_COMPATIBLE = re.compile(r"[^ \0]+(,[^ \0]+)*")
_PATH_PART = re.compile(r"[^A-Za-z0-9_-]+")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_COMMIT = re.compile(r"[0-9a-f]{40}")
# A series entry a link may name: plain segments below kernel/patches/.
_PATCH_NAME = re.compile(r"[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*")
# What a metric test reads (Totals field) and which budget check judges it.
METRICS = (("max", "max_us", "max_us"), ("p99_99", "p99_99", "p9999_us"),
           ("avg", "avg_us", "avg_us"))
AB_STATUS = {ABOutcome.SAME: "PASS", ABOutcome.BETTER: "PASS", ABOutcome.WORSE: "FAIL",
             ABOutcome.BUDGET: "FAIL", ABOutcome.CRASHED: "FAIL", ABOutcome.INCOMPLETE: "ERROR",
             ABOutcome.UNDECIDED: "DONE"}
_VERDICT_STATUS = {Verdict.PASS: "PASS", Verdict.FAIL: "FAIL", Verdict.INCOMPLETE: "ERROR"}


@dataclass(frozen=True)
class Submitter:
    """Who sends, and what names the run: the lab's settings and the trusted run context."""

    origin: str
    run_id: str
    """The gate run (a workflow run id): part of every test's id."""
    tool_version: str
    commit: str | None = None
    """The repository commit the gate measured (a push's, a pull request's head)."""
    pull_request: int | None = None
    run_url: str | None = None
    site_url: str | None = None
    """The results site, where the run's pages are (main's runs only)."""
    files_url: str | None = None
    """Where the build files this report links are published (``rtgate kcidb --files``)."""
    repository_url: str | None = None
    """The repository at ``commit``, for links to the patches of the series."""


@dataclass(frozen=True)
class ABSummary:
    outcome: ABOutcome
    why: str
    pairs: int
    infra: bool


@dataclass(frozen=True)
class Build:
    """One flavor's build as the run's directory kept it: its record, or why there is none."""

    flavor: str
    record: BuildRecord | None
    why: str = ""
    files: tuple[str, ...] = ()
    """Names of the files published under ``files_url``/builds/<id>/ (config, log)."""


@dataclass(frozen=True)
class BoardRun:
    """One board (or board kind) of the gate run, judged by the publisher."""

    name: str
    instance: str
    kind: str
    virtual: bool
    root: Path
    """The board's artifact directory: runs are named by their place in it."""
    rulings: list[Ruling]
    builds: dict[str, Build]
    ab: ABSummary | None = None


def text(value: object, limit: int = MAX_TEXT) -> str:
    """A string from an artifact, fit for KCIDB: no NUL (its patterns forbid it), no lone
    surrogate (no UTF-8 spells one), at most ``limit`` characters."""
    s = _LONE_SURROGATE.sub("\ufffd", str(value).replace("\0", ""))
    return s if len(s) <= limit else s[: limit - 1] + "…"


def part(name: str) -> str:
    """A name as one component of a KCIDB test path (``[a-zA-Z0-9_-]+``)."""
    return _PATH_PART.sub("_", name).strip("_")[:64] or "_"


def _time(value: str | None) -> str | None:
    """An RFC 3339 date-time (KCIDB's format), or None for anything else."""
    if not value or len(value) > 40:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed.isoformat() if parsed.tzinfo is not None else None


def _seconds(us: float) -> dict[str, Any]:
    return {"value": us / 1e6, "unit": "s", "prefix": "metric"}


def digest(*parts: str) -> str:
    return hashlib.sha256("\n".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _compatible(result: Result) -> list[str]:
    """The device tree's root compatible strings the board recorded, when well formed."""
    found = result.environment.get("dt_compatible")
    if not isinstance(found, list):
        return []
    return [s for s in found[:MAX_COMPATIBLE]
            if isinstance(s, str) and len(s) <= 128 and _COMPATIBLE.fullmatch(s)]


class _Report:
    def __init__(self, sub: Submitter) -> None:
        if not ORIGIN.fullmatch(sub.origin):
            raise ValueError(f"origin {sub.origin!r}: KCIDB origins are [a-z0-9_]+")
        self.sub = sub
        self.checkouts: dict[str, dict[str, Any]] = {}
        self.builds: dict[str, dict[str, Any]] = {}
        self.tests: list[dict[str, Any]] = []
        self.issues: dict[str, dict[str, Any]] = {}
        self.incidents: list[dict[str, Any]] = []

    def id(self, *parts: str) -> str:
        return f"{self.sub.origin}:" + ":".join(parts)

    # -- checkouts and builds ---------------------------------------------------------------

    def _context_misc(self) -> dict[str, Any]:
        s = self.sub
        return {k: v for k, v in {"run_id": s.run_id, "run_url": s.run_url, "commit": s.commit,
                                  "pull_request": s.pull_request}.items() if v is not None}

    def checkout(self, board: BoardRun, build: Build, result: Result | None) -> str:
        rec = build.record
        if rec is None:
            release = text(result.kernel.release if result and result.kernel.release else "")
            key = digest("unbuilt", board.instance, release,
                          text(result.kernel.version or "") if result else "")
            what = (f"the kernel {board.instance} runs" if not build.why
                    else f"unknown: {build.why}")
            body = {"tree_name": "unknown", "comment": text(f"{what}; release {release or '?'}"),
                    "patchset_hash": ""}
        else:
            source = rec.plan.source
            key = digest(source.kind, source.location, source.ref, rec.patchset_hash)
            body = {"patchset_hash": rec.patchset_hash, **self._source(rec)}
            files = self._patch_files(rec)
            if files:
                body["patchset_files"] = files
        cid = self.id("checkout", key)
        if cid not in self.checkouts:
            # valid: the source was checked out and built; unsaid when no record tells.
            self.checkouts[cid] = {"id": cid, "origin": self.sub.origin, **body,
                                   **({"valid": True} if rec is not None else {}),
                                   "misc": self._context_misc()}
        return cid

    def _source(self, rec: BuildRecord) -> dict[str, Any]:
        source = rec.plan.source
        if source.kind == "git":
            url = text(source.location, 500)
            body: dict[str, Any] = {"tree_name": text(_tree(url), 100)}
            if url.startswith("https://") and _uri(url):
                body["git_repository_url"] = url
            if _COMMIT.fullmatch(source.ref):
                body["git_commit_hash"] = source.ref
            else:
                body["git_repository_branch"] = text(source.ref, 200)
            return body
        if source.kind == "debian":
            package, version = text(source.location, 100), text(source.ref, 100)
            return {"tree_name": f"debian:{package}",
                    "comment": f"Debian source package {package} {version}: a release "
                               "tarball with Debian's patches, no git commit"}
        return {"tree_name": "tarball",
                "comment": f"a source tarball, sha256 {text(source.ref, 100)}: no git commit"}

    def _patch_files(self, rec: BuildRecord) -> list[dict[str, str]]:
        s = self.sub
        if not (s.repository_url and s.commit and rec.plan.patches):
            return []
        base = f"{s.repository_url.rstrip('/')}/blob/{s.commit}/kernel/patches/"
        files = []
        for p in rec.plan.patches:
            if not _PATCH_NAME.fullmatch(p.name) or ".." in p.name.split("/"):
                return []  # a name no plain path below kernel/patches: no links at all
            files.append({"name": p.name.rsplit("/", 1)[-1], "url": base + p.name})
        return files

    def build(self, board: BoardRun, flavor: str, result: Result | None) -> str:
        build = board.builds.get(flavor) or Build(flavor, None, "")
        checkout = self.checkout(board, build, result)
        rec = build.record
        if rec is None:
            bid = self.id("build", digest(checkout, board.instance, flavor))
            body: dict[str, Any] = {
                "config_name": part(flavor),
                "status": "PASS" if result is not None else "MISS",
                "comment": text(build.why or f"{board.instance} measures its running kernel: "
                                             "rtgate built none"),
            }
        else:
            plan = rec.plan
            bid = self.id("build", plan.cache_key[:32])
            body = {
                "architecture": plan.target.arch,
                "config_name": "+".join([plan.base_config, *(f.name for f in plan.fragments)]),
                "compiler": text(plan.toolchain.gcc, 300),
                "status": "PASS",
                "comment": text(f"{plan.target.name} {plan.flavor}: kernel "
                                f"{rec.kernel_release}"),
                "misc": {k: v for k, v in {"target": plan.target.name, "flavor": plan.flavor,
                                           "kernel_release": text(rec.kernel_release, 200),
                                           "runtime": rec.runtime,
                                           "cache_key": plan.cache_key}.items()
                         if v is not None},
            }
            if rec.build_seconds is not None:
                body["duration"] = rec.build_seconds
            if (start := _time(rec.built_at)) is not None:
                body["start_time"] = start
            body |= self._build_files(build)
        if bid not in self.builds:
            self.builds[bid] = {"id": bid, "origin": self.sub.origin, "checkout_id": checkout,
                                **body}
        return bid

    def _build_files(self, build: Build) -> dict[str, Any]:
        if not self.sub.files_url or not build.files or build.record is None:
            return {}
        base = f"{self.sub.files_url.rstrip('/')}/builds/{files_dir(build.record)}/"
        files = [{"name": n, "url": base + quote(n)} for n in build.files]
        body: dict[str, Any] = {"output_files": files}
        for f in files:
            if f["name"] == "config.txt":
                body["config_url"] = f["url"]
            if f["name"] == "build.log.txt":
                body["log_url"] = f["url"]
        return body

    # -- tests --------------------------------------------------------------------------------

    def board(self, board: BoardRun) -> None:
        for ruling in board.rulings:
            self.ruling(board, ruling)
        if board.ab is not None:
            self.ab(board)

    def _where(self, board: BoardRun, ruling: Ruling) -> tuple[str, str, str]:
        """(flavor, scenario, place): the run's place in its artifact, e.g. ``rt.net`` or
        ``B.round-3.rt.net``."""
        if isinstance(ruling, Infra):
            return ruling.flavor, ruling.scenario, f"{ruling.flavor}.{ruling.scenario}"
        source = Path(ruling.source)
        try:
            parts = source.parent.relative_to(board.root).parts
        except ValueError:
            parts = source.parent.parts[-2:]
        result = ruling.result
        flavor = flavor_of(result) if result else (parts[-2] if len(parts) >= 2 else "?")
        scenario = result.scenario if result else (parts[-1] if parts else "?")
        return flavor, scenario, ".".join(part(p) for p in parts) or "run"

    def _misc(self, board: BoardRun, result: Result | None) -> dict[str, Any]:
        misc: dict[str, Any] = {**self._context_misc(), "board": board.instance,
                                "board_kind": board.kind, "virtual": board.virtual,
                                "rtgate_version": self.sub.tool_version}
        if result is not None:
            misc |= {"tool": text(result.tool.name, 50),
                     "tool_version": text(result.tool.version or "", 100),
                     "result_run_id": text(result.run_id, 200),
                     "kernel_release": text(result.kernel.release or "", 200)}
        return misc

    def _environment(self, board: BoardRun, result: Result | None) -> dict[str, Any]:
        env: dict[str, Any] = {
            "comment": (f"{board.instance}: a virtual board (emulator), its latencies are no "
                        "real-time claim" if board.virtual else f"{board.instance}: hardware"),
            "misc": {"board": board.instance, "board_kind": board.kind,
                     "virtual": board.virtual},
        }
        if result is not None and (compatible := _compatible(result)):
            env["compatible"] = compatible
        return env

    def _links(self, result: Result | None) -> list[dict[str, str]]:
        """The run's page, result and histogram data (and trace outputs) on the results site."""
        if result is None or not self.sub.site_url:
            return []
        home = f"{self.sub.site_url.rstrip('/')}/runs/{quote(safe_name(result.run_id))}/"
        links = [{"name": "run.html", "url": home + "index.html"},
                 {"name": "result.json", "url": home + "result.json"}]
        raws = [Path(s.path).name for s in result.sources if s.format in ("histogram",
                                                                          "timerlat-hist")]
        raws += [Path(r).name for r in (result.trace.raw if result.trace else [])]
        for raw in dict.fromkeys(raws):
            name = raw_name(raw)
            if name is not None:
                links.append({"name": name, "url": f"{home}raw/{quote(name)}"})
        return links

    def _test(self, board: BoardRun, tid: str, build_id: str, path: str, status: str,
              result: Result | None, **extra: Any) -> dict[str, Any]:
        test: dict[str, Any] = {"id": tid, "origin": self.sub.origin, "build_id": build_id,
                                "path": path, "status": status,
                                "environment": self._environment(board, result),
                                "misc": self._misc(board, result) | extra.pop("misc", {})}
        if result is not None and (start := _time(result.start)) is not None:
            test["start_time"] = start
        if (links := self._links(result)):
            test["output_files"] = links
            test["log_url"] = links[0]["url"]
        test.update(extra)
        self.tests.append(test)
        return test

    def ruling(self, board: BoardRun, ruling: Ruling) -> None:
        flavor, scenario, place = self._where(board, ruling)
        result = ruling.result
        build_id = self.build(board, flavor, result)
        base = [self.sub.run_id, part(board.name), place]
        if isinstance(ruling, Infra):
            crashed = isinstance(ruling, Crash)
            self._test(board, self.id(*base, "boot"), build_id, "boot",
                       "FAIL" if crashed else "ERROR", None,
                       comment=text(("the kernel under test crashed: " if crashed else
                                     "the lab did not measure: ") + ruling.message),
                       misc={"reason": text(ruling.message)})
            return
        self._test(board, self.id(*base, "boot"), build_id, "boot",
                   "PASS" if result is not None else "ERROR", result,
                   **({} if result is not None else
                      {"comment": text(f"no readable result: {ruling.message}")}))
        if result is None:
            return
        tool = part(result.tool.name.split()[-1] if result.tool.name else "cyclictest")
        prefix = f"rt-tests.{tool}.{part(scenario)}"
        checks = ({c.metric: c for c in ruling.checks} if isinstance(ruling, Evaluation)
                  else {})
        why = ("; ".join(ruling.incomplete) if isinstance(ruling, Evaluation)
               else text(ruling.message))
        untrusted = isinstance(ruling, Evaluation) and bool(ruling.incomplete)
        groups: list[tuple[str, Totals, bool]] = [("all", result.totals, True)]
        groups += [(part(ctx), series.totals, False) for ctx, series in result.contexts.items()
                   if ctx != "thread"]
        for t in result.threads:
            if t.max_us is not None or t.avg_us is not None:
                groups.append((f"thread{t.thread}" + (f"_cpu{t.cpu}" if result.contexts
                                                      and t.cpu is not None else ""),
                               Totals(samples=t.samples, max_us=t.max_us, avg_us=t.avg_us,
                                      avg_truncated=t.avg_truncated), False))
        for group, totals, judged in groups:
            for metric, field, budget in METRICS:
                value = getattr(totals, field)
                if value is None:
                    continue
                relation = "="
                if not isinstance(value, float | int):
                    value, relation = value.value_us, value.relation
                check = checks.get(budget) if judged else None
                self._metric(board, base, build_id, f"{prefix}.{group}.{metric}", metric, group,
                             float(value), relation, check, untrusted, why, result, flavor,
                             scenario)
        if (pwcet := checks.get("pwcet_us")) is not None:
            self._metric(board, base, build_id, f"{prefix}.all.pwcet", "pwcet", "all",
                         pwcet.measured, "=", pwcet, untrusted, why, result, flavor, scenario)

    def _metric(self, board: BoardRun, base: list[str], build_id: str, path: str, metric: str,
                group: str, value: float | None, relation: str, check: Check | None,
                untrusted: bool, why: str, result: Result, flavor: str, scenario: str) -> None:
        misc: dict[str, Any] = {"unit_measured": "µs"}
        if relation != "=":
            misc["relation"] = relation  # the value is only known as at least this
        if check is not None:
            status = _VERDICT_STATUS[check.verdict]
            misc |= {"budget_us": check.budget, "op": check.op,
                     "verdict": check.verdict.value}
            if check.interval is not None:
                misc["interval_us"] = list(check.interval)
                misc["estimate"] = check.context
            if check.verdict is Verdict.INCOMPLETE:
                misc["reason"] = text(check.why)
            comment = text(check.detail)
        else:
            status = "ERROR" if untrusted else "DONE"
            comment = f"{metric} of {group}" + ("" if not untrusted else f": not judged: {why}")
            if untrusted:
                misc["reason"] = text(why)
        tid = self.id(*base, path.removeprefix("rt-tests."))
        extra: dict[str, Any] = {"comment": text(comment), "misc": misc}
        if value is not None:
            extra["number"] = _seconds(value)
        self._test(board, tid, build_id, path, status, result, **extra)
        if check is not None and check.verdict is Verdict.FAIL:
            self.breach(board, tid, build_id, check, result, flavor, scenario)

    def breach(self, board: BoardRun, test_id: str, build_id: str, check: Check,
               result: Result, flavor: str, scenario: str) -> None:
        """An issue per budget of a key on a checkout, an incident per test that broke it."""
        checkout = self.builds[build_id]["checkout_id"]
        key = ".".join(part(p) for p in (board.kind, flavor, scenario, check.metric))
        iid = self.id("budget", digest(checkout)[:16], key)
        s = self.sub
        where = (f"pull request #{s.pull_request}" if s.pull_request
                 else f"commit {s.commit}" if s.commit else f"run {s.run_id}")
        if iid not in self.issues:
            issue: dict[str, Any] = {
                "id": iid, "version": 1, "origin": s.origin,
                "report_subject": text(f"{board.kind}/{flavor}/{scenario}: {check.metric} over "
                                       f"its budget of {check.budget:g} µs ({where})", 300),
                "culprit": {"code": True, "tool": False, "harness": False},
                "comment": text(f"rtgate latency budget {check.name} µs exceeded on "
                                f"{board.instance}"
                                + (" (a virtual board: no real-time claim)" if board.virtual
                                   else "")),
                "misc": {"budget_us": check.budget, "metric": check.metric,
                         "board_kind": board.kind, "flavor": flavor, "scenario": scenario},
            }
            if (url := s.run_url or (self._links(result) or [{}])[0].get("url")):
                issue["report_url"] = url
            self.issues[iid] = issue
        comment = f"{check.detail} ({where}, run {s.run_id})"
        if result.trace is not None and result.trace.breaches:
            first = result.trace.breaches[0]
            parts = ", ".join(f"{c.name} {c.us:g} µs" for c in first.components[:6])
            comment += (f"; traced ({text(result.trace.tool, 50)}): {first.total_us:g} µs"
                        + (f", {parts}" if parts else "")
                        + (f", blocking task {first.blocking_task}" if first.blocking_task
                           else ""))
        self.incidents.append({"id": f"{test_id}:incident", "origin": s.origin, "issue_id": iid,
                               "issue_version": 1, "test_id": test_id, "build_id": build_id,
                               "present": True, "comment": text(comment)})

    def ab(self, board: BoardRun) -> None:
        ab = board.ab
        assert ab is not None
        flavor = next(iter(sorted(board.builds)), None) or "running"
        cand = [r for r in board.rulings if r.result is not None]
        flavor = flavor_of(cand[0].result) if cand and cand[0].result else flavor
        build_id = self.build(board, flavor, cand[0].result if cand else None)
        misc = {"outcome": ab.outcome.value, "rounds_per_side": ab.pairs,
                "reason": text(ab.why) if ab.why else ""}
        self._test(board, self.id(self.sub.run_id, part(board.name), "ab"), build_id,
                   "rt-tests.ab", AB_STATUS[ab.outcome], None,
                   comment=text(f"A/B against the base kernel: {ab.outcome.value}"
                                + (f": {ab.why}" if ab.why else "")),
                   misc=misc)

    def document(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"version": dict(SCHEMA_VERSION),
                               "checkouts": list(self.checkouts.values()),
                               "builds": list(self.builds.values()), "tests": self.tests}
        if self.issues:
            doc["issues"] = list(self.issues.values())
            doc["incidents"] = self.incidents
        return doc


def _tree(url: str) -> str:
    """A tree's name from its repository URL: ``raspberrypi/linux`` for
    https://github.com/raspberrypi/linux."""
    path = urlsplit(url).path.strip("/").removesuffix(".git")
    return "/".join(path.split("/")[-2:]) or url


def _uri(url: str) -> bool:
    return not any(c in url for c in " <>\"{}|\\^`\n\r\t")


def files_dir(rec: BuildRecord) -> str:
    """The directory a build's published files go to (``--files``): its cache key's start."""
    return rec.plan.cache_key[:32]


def render(boards: list[BoardRun], sub: Submitter) -> dict[str, Any]:
    report = _Report(sub)
    for board in boards:
        report.board(board)
    return report.document()


def validate(doc: dict[str, Any]) -> None:
    """kcidb-io's own check of the document (schema v5.3 and its formats); ValueError naming
    the first problem."""
    try:
        import jsonschema
        from kcidb_io.schema import LATEST  # the kcidb extra; imported where a report is made
    except ImportError as exc:
        raise RuntimeError("kcidb-io is not installed: pip install 'rtgate[kcidb]'") from exc
    try:
        LATEST.validate(doc)
    except jsonschema.exceptions.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "document"
        raise ValueError(f"not a valid KCIDB v{LATEST.major}.{LATEST.minor} report at "
                         f"{where}: {exc.message[:300]}") from exc
