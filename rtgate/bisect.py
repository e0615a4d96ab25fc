"""`rtgate bisect`: which patch of a series made the latency worse, and the proof that it did.

A *variant* is a set of the series' patches (numbers from 1, applied in series order): the prefix
``1..k``, or the whole series without the culprit (the revert). Every step compares a variant, the
candidate, against a base variant with a ``Measure`` function — on a board that is a kernel build
and an ``rtgate ab`` run (interleaved rounds until same, worse, better or unknown at the step's time
cap, and the budgets); in the unit tests a deterministic function. The search itself is pure.

The search (like ``git bisect``, over prefixes):

1. the ends: the bad end against the good end. Same or better with the default ends: the whole
   series is good, "nothing to bisect". Not worse with an explicit ``--bad``, or the good end's
   own rounds over their budget: the ends are wrong (exit 2, with the measurements).
2. binary search for the first prefix worse than the good end. A prefix that does not build or
   boot, or is still *unknown* at the step's cap, is skipped (``git bisect skip``): the next
   untested prefix nearest the middle is measured instead; when every prefix between the known
   good and bad ones is skipped the culprit is one of them and the report says which.
3. confirmation (KernelCI's rule), before a culprit is named: the culprit against its parent is
   *worse* in ``repeats`` separate measurements, and the bad end without the culprit is same as the
   good end. When the revert does not apply (a later patch depends on the culprit) the report says
   so and rests on the culprit-against-parent evidence. When the culprit against its parent is not
   worse, the first worse prefix is reported with "the regression may be spread" — never a guess.

An interrupted bisect resumes from its state file: the log of every measurement made. The search
is replayed against the log (a deterministic search asks for the same measurements in the same
order) and only the first measurement not in the log goes to the board.

The same determinism lets a publisher that did not run the bisect re-decide it (``--replay``): a
pull request's bisect ran the PR's series on a lab board, so everything it wrote is untrusted
data. The search runs again with a measure that re-decides step k from the rounds' result files
in ``steps/NN_…/`` (``rtgate.ab.loop.ABRun.replay``, with the planned rounds fixed before the bisect
began, ``--planned-rounds``), after checking that directory is the step the search asks for at
that point. Its state file, ab.json, ab.md and bisect.json are never read.
"""

from __future__ import annotations

import argparse
import email.parser
import json
import math
import re
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from rich.console import Console

from rtgate import paths
from rtgate.ab import doc as ab_doc
from rtgate.ab.loop import ABRun, Side
from rtgate.ab.settings import RoundSettings
from rtgate.board.spec import BoardSpec, load_kernel_board, scenarios_of
from rtgate.cli.args import comma_list, count, duration, positive, rate, rounds_at_least, scale
from rtgate.errors import Exit, InfraError, InputError, RtgateError
from rtgate.gate.markdown import cell, code
from rtgate.gate.thresholds import Thresholds, load_thresholds
from rtgate.jsonfile import write_atomic
from rtgate.kernel.build import build
from rtgate.kernel.cache import TRUST_DOMAINS
from rtgate.kernel.patches import PatchError, read_series, write_series
from rtgate.kernel.runtime import RUNTIMES
from rtgate.stats.ab import MIN_ROUNDS

SCHEMA_ID = "rtgate/bisect/v1"

Variant = tuple[int, ...]
"""The patch numbers (from 1) a kernel carries, ascending."""

# What a measurement can say of a candidate against its base.
WORSE, SAME, BETTER, UNKNOWN, SKIP = "worse", "same", "better", "unknown", "skip"
_GOOD = (SAME, BETTER)


@dataclass(frozen=True)
class Measurement:
    outcome: str
    """worse, same, better, unknown (undecided at the step's cap) or skip (no build, no boot,
    a round the lab failed)."""
    summary: str
    """One line for the evidence table: the effect and its interval, or why it was skipped."""
    base_ok: bool = True
    """The base's own rounds were within their budget."""
    applies: bool = True
    """False when skipped because a patch of the candidate did not apply."""
    detail: dict[str, Any] = field(default_factory=dict)
    """Where the raw measurement is (the A/B output directory), the effect: for the JSON."""


Measure = Callable[[Variant, Variant], Measurement]
"""measure(base, candidate)."""


@dataclass(frozen=True)
class Step:
    purpose: str  # ends, search, parent, revert
    base: Variant
    cand: Variant
    measurement: Measurement
    seconds: float


def prefix(k: int) -> Variant:
    return tuple(range(1, k + 1))


def label(v: Variant, n: int) -> str:
    """1-5, 1-7 without 5, none."""
    if not v:
        return "none"
    missing = [p for p in range(1, max(v) + 1) if p not in v]
    span = f"1-{max(v)}" if max(v) > 1 else "1"
    return span + (f" without {', '.join(map(str, missing))}" if missing else "")


@dataclass
class Log:
    """The measurements made, in order: the state file. Replayed first, then measured."""

    path: Path | None
    identity: dict[str, Any]
    steps: list[Step] = field(default_factory=list)
    replayed: int = 0

    @classmethod
    def open(cls, path: Path | None, identity: dict[str, Any]) -> Log:
        log = cls(path, identity)
        if path is None or not path.exists():
            return log
        try:
            data = json.loads(path.read_text())
            if data.get("identity") != identity:
                raise InputError("the state file is of another bisect (series, ends, board or "
                                 "settings differ): give another --out or remove it", path=path)
            log.steps = [Step(s["purpose"], tuple(s["base"]), tuple(s["cand"]),
                              Measurement(**s["measurement"]), s["seconds"])
                         for s in data["steps"]]
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise InputError(f"unreadable bisect state: {exc}", path=path) from exc
        return log

    def save(self) -> None:
        if self.path is not None:
            write_atomic(self.path, json.dumps(
                {"schema": SCHEMA_ID + "/state", "identity": self.identity,
                 "steps": [asdict(s) for s in self.steps]}, indent=2) + "\n")


Progress = Callable[[str], None]


@dataclass
class Bisect:
    n: int
    good: int
    bad: int
    measure: Measure
    log: Log
    explicit_bad: bool = False
    repeats: int = 2
    progress: Progress = print
    clock: Callable[[], float] = time.monotonic
    started: float = 0.0
    _search_left: int = 0

    def _measure(self, purpose: str, base: Variant, cand: Variant) -> Measurement:
        index = self.log.replayed
        if index < len(self.log.steps):
            step = self.log.steps[index]
            if (step.purpose, step.base, step.cand) != (purpose, base, cand):
                raise InputError(f"the state file's step {index + 1} ({step.purpose} "
                                 f"{label(step.cand, self.n)} vs {label(step.base, self.n)}) is "
                                 "not what this bisect asks next: it is of another bisect",
                                 path=self.log.path)
            self.log.replayed += 1
            self.progress(f"step {index + 1}: {purpose} {label(cand, self.n)} vs "
                          f"{label(base, self.n)}: {step.measurement.outcome} (from the state "
                          "file)")
            return step.measurement
        self.progress(f"step {index + 1} ({self._left()}): {purpose}: measuring "
                      f"{label(cand, self.n)} against {label(base, self.n)}")
        start = self.clock()
        m = self.measure(base, cand)
        self.log.steps.append(Step(purpose, base, cand, m, round(self.clock() - start, 1)))
        self.log.replayed += 1
        self.log.save()
        self.progress(f"  → {m.outcome}: {m.summary}")
        return m

    def _left(self) -> str:
        """Step k of ~total, builds left, time spent: the search's remaining halvings plus the
        confirmation's measurements (the parent's repeats and the revert) are the estimate."""
        done = len(self.log.steps)
        confirming = sum(s.purpose in ("parent", "revert") for s in self.log.steps)
        left = self._search_left + max(self.repeats + 1 - confirming, 0)
        spent = sum(s.seconds for s in self.log.steps)
        return (f"of ~{done + left} · ~{left} build(s) left · {spent:.0f} s measured, "
                f"{self.clock() - self.started:.0f} s this session")

    def run(self) -> dict[str, Any]:
        self.started = self.clock()
        g, b = prefix(self.good), prefix(self.bad)
        self._search_left = math.ceil(math.log2(max(self.bad - self.good, 1)))
        ends = self._measure("ends", g, b)
        if not ends.base_ok:
            return self._end("ends", f"the good end ({label(g, self.n)}) is not good: its own "
                             "rounds exceed their budget", Exit.INPUT)
        if ends.outcome == SKIP:
            return self._end("unmeasured", "the ends could not be measured (the evidence below)",
                             Exit.INCOMPLETE)
        if ends.outcome in _GOOD and not self.explicit_bad:
            return self._end("nothing", f"the whole series is {ends.outcome} as the good end: "
                             "nothing to bisect", Exit.OK)
        if ends.outcome != WORSE:
            return self._end("ends", f"the bad end ({label(b, self.n)}) is not worse than the "
                             f"good end ({label(g, self.n)}): {ends.outcome}", Exit.INPUT)
        lo, hi, skipped = self.good, self.bad, []
        while True:
            untried = [k for k in range(lo + 1, hi) if k not in skipped]
            if not untried:
                break
            self._search_left = math.ceil(math.log2(len(untried) + 1))
            mid = min(untried, key=lambda k: (abs(k - (lo + hi) / 2), k))
            m = self._measure("search", g, prefix(mid))
            if m.outcome == WORSE:
                hi = mid
            elif m.outcome in _GOOD:
                lo = mid
            else:
                skipped.append(mid)
        self._search_left = 0
        if hi - lo > 1:
            between = ", ".join(str(p) for p in range(lo + 1, hi + 1))
            return self._end("ambiguous", f"prefixes {lo + 1}..{hi - 1} were skipped: the "
                             f"culprit is one of patches {between} (not confirmed)",
                             Exit.INCOMPLETE, skipped=skipped)
        return self._confirm(hi, skipped)

    def _confirm(self, culprit: int, skipped: list[int]) -> dict[str, Any]:
        parent, cand = prefix(culprit - 1), prefix(culprit)
        g = prefix(self.good)
        # The ends step already is culprit against parent when they are the ends.
        earlier = [s.measurement for s in self.log.steps[:self.log.replayed]
                   if (s.base, s.cand) == (parent, cand)]
        for _ in range(self.repeats - len(earlier)):
            earlier.append(self._measure("parent", parent, cand))
        worse = sum(m.outcome == WORSE for m in earlier)
        revert = tuple(p for p in prefix(self.bad) if p != culprit)
        revert_ok: bool | None  # None: the revert does not apply
        if revert == parent:
            # The culprit is the bad end's last patch: the revert is the parent, which the
            # search found good (or which is the good end).
            reverted = f"the bad end without it is {label(parent, self.n)}, good above"
            revert_ok = True
        else:
            r = self._measure("revert", g, revert)
            revert_ok = r.outcome in _GOOD if r.applies else None
            reverted = (f"the bad end without patch {culprit} is {r.outcome} against the good "
                        "end" if r.applies else
                        f"the revert ({label(revert, self.n)}) does not apply (a later patch "
                        f"depends on patch {culprit}): the evidence is the culprit against its "
                        "parent alone")
        if worse < self.repeats:
            return self._end("spread", f"prefix {label(cand, self.n)} is the first that is "
                             f"worse than the good end, but patch {culprit} against its parent "
                             f"was worse in {worse} of {self.repeats} measurements: the "
                             "regression may be spread over several patches (not confirmed); "
                             + reverted, Exit.INCOMPLETE, culprit=culprit, skipped=skipped)
        if revert_ok is False:
            return self._end("unconfirmed", f"patch {culprit} against its parent was worse "
                             f"{worse} of {self.repeats} times, but {reverted} (worse: another "
                             "patch regresses too; unknown: measure longer): not confirmed",
                             Exit.INCOMPLETE, culprit=culprit, skipped=skipped)
        return self._end("confirmed", f"patch {culprit} is the culprit: worse than its parent in "
                         f"{worse} of {self.repeats} measurements, and {reverted}", Exit.BUDGET,
                         culprit=culprit, skipped=skipped)

    def _end(self, outcome: str, why: str, exit: Exit, *, culprit: int | None = None,
             skipped: list[int] | None = None) -> dict[str, Any]:
        self.progress(why)
        return {"outcome": outcome, "why": why, "exit": int(exit), "culprit": culprit,
                "skipped": skipped or [],
                "steps": [asdict(s) for s in self.log.steps],
                "elapsed_s": round(self.clock() - self.started, 1),
                "measured_s": round(sum(s.seconds for s in self.log.steps), 1)}


def patch_header(path: Path) -> dict[str, str]:
    """Subject and author of a `git format-patch` file; empty when the header has none."""
    with path.open(errors="replace") as f:
        head = email.parser.Parser().parse(f, headersonly=True)
    subject = re.sub(r"^\[PATCH[^\]]*\]\s*", "", " ".join(str(head["Subject"] or "").split()))
    return {"subject": subject, "author": " ".join(str(head["From"] or "").split())}


def describe(series: Path, result: dict[str, Any]) -> dict[str, Any]:
    """The result with the patches named: file, subject, author."""
    names = [p.name for p in read_series(series)]
    patches = [{"number": i, "file": name, **patch_header(series.parent / name)}
               for i, name in enumerate(names, start=1)]
    culprit = result["culprit"]
    return {"schema": SCHEMA_ID, "series": str(series), **result, "patches": patches,
            "culprit_patch": patches[culprit - 1] if culprit else None}


_HEADLINE = {"confirmed": "❌ culprit found and confirmed", "nothing": "✅ nothing to bisect",
             "spread": "❔ not confirmed: the regression may be spread",
             "unconfirmed": "❔ not confirmed", "ambiguous": "❔ not confirmed: skipped patches",
             "ends": "⚠️ the ends are wrong",
             "unmeasured": "⚠️ no verdict: the ends could not be measured"}


_REPLAYED = ("Re-decided from the rounds' result files (`rtgate bisect --replay`): the "
             "measuring job's verdicts, reports, state and times were not read.")


def markdown(doc: dict[str, Any], *, replayed: bool = False) -> str:
    """The report; ``replayed``: re-decided from the rounds, which took no board time here."""
    n = len(doc["patches"])
    lines = [f"## rtgate bisect: {_HEADLINE[doc['outcome']]} (exit {doc['exit']})", "",
             doc["why"], ""]
    if (p := doc["culprit_patch"]) is not None:
        lines += [f"Patch {p['number']}: {code(p['file'])} — {cell(p['subject'])} "
                  f"({cell(p['author'])})", ""]
    if doc["skipped"]:
        lines += [f"Skipped (no build, no boot, or unknown at the step's cap): prefixes "
                  f"{', '.join(map(str, doc['skipped']))}", ""]
    lines += _table(doc["steps"], n, replayed=replayed) + [""]
    lines.append(f"{len(doc['steps'])} measurements. " + (_REPLAYED if replayed else
                 f"{doc['measured_s']:.0f} s measured, {doc['elapsed_s']:.0f} s this session."))
    return "\n".join(lines) + "\n"


def _table(steps: list[dict[str, Any]], n: int, *, replayed: bool) -> list[str]:
    lines = ["| step | purpose | candidate | base | outcome | evidence | s |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for i, s in enumerate(steps, start=1):
        m = s["measurement"]
        lines.append(f"| {i} | {s['purpose']} | {label(tuple(s['cand']), n)} | "
                     f"{label(tuple(s['base']), n)} | {m['outcome']} | {cell(m['summary'])} | "
                     f"{'—' if replayed else format(s['seconds'], '.0f')} |")
    return lines


def refused_markdown(error: RtgateError, steps: list[Step], n: int) -> str:
    """A replay that stopped on its input: the error (untrusted text: the artifact's names) and
    the steps re-decided before it. No outcome: nothing was concluded."""
    headline = ("⚠️ input error: the bisect's rounds were refused, nothing was concluded"
                if error.code is Exit.INPUT else
                "🛠️ no verdict: the bisect's rounds end before it finished (the lab job's log "
                "says why)")
    lines = [f"## rtgate bisect: {headline} (exit {int(error.code)})", "",
             code(error.oneline()), ""]
    if steps:
        lines += ["Re-decided before that:", ""]
        lines += _table([asdict(s) for s in steps], n, replayed=True)
    return "\n".join(lines) + "\n"


# --- on a board: a kernel build of each variant and an `rtgate ab` run of each step ---------

_AB_OUTCOME = {"worse": WORSE, "budget": WORSE, "same": SAME, "better": BETTER,
               "undecided": UNKNOWN, "incomplete": SKIP}


SKIPPED = "skipped.json"
"""In a step's directory when no round was measured: the variant did not apply or build."""


def step_dir(root: Path, number: int, base: Variant, cand: Variant, n: int) -> Path:
    """Where step ``number`` (from 1) keeps its rounds: ROOT/steps/NN_<candidate>_vs_<base>."""
    return root / "steps" / _slug(f"{number:02d} {label(cand, n)} vs {label(base, n)}")


def _gate(spec: BoardSpec, flavor: str, scenarios: list[str], thresholds: Thresholds,
          args: argparse.Namespace, out: Path, kernels: tuple[Path | None, Path | None],
          console: Console) -> ABRun:
    """The A/B gate of one step: base (A) against candidate (B) into OUT."""
    settings = RoundSettings(out=out, round_duration=args.round_duration,
                             max_time=args.max_time, planned_rounds=args.planned_rounds,
                             scale=args.scale, min_effect_us=args.min_effect_us, alpha=args.alpha)
    return ABRun(spec, (Side("A", "base", kernels[0], None),
                        Side("B", "candidate", kernels[1], None)),
                 [(flavor, s) for s in scenarios], thresholds, settings, console)


def _measurement(gate: ABRun, detail: dict[str, Any]) -> Measurement:
    """What a step's A/B gate, run or replayed, says of the candidate."""
    doc = ab_doc.document(gate)
    effects = [f"{d.flavor}/{d.scenario} {d.outcome}: Δ {e.metric} "
               f"{e.delta_us:+.0f} µs [{e.low_us:+.0f}, {e.high_us:+.0f}]"
               for d in doc.decisions for e in d.effects if e.metric == d.headline]
    base_ok = not any(v.side.role == "base" and v.evaluation.exit is Exit.BUDGET
                      for v in gate.verdicts)
    # A candidate over its budget, a round the lab failed: the gate's reason is the evidence.
    summary = gate.why if gate.why and gate.outcome != "same" else "; ".join(effects)
    return Measurement(_AB_OUTCOME[gate.outcome], summary, base_ok=base_ok,
                       detail={**detail, "ab_outcome": gate.outcome, "pairs": gate.pairs})


@dataclass
class BoardMeasure:
    """measure(base, candidate) on a board: build both variants (the kernel cache and ccache make
    a repeated or neighbouring variant cheap), then the A/B gate's rounds until decided or the
    step's cap. A variant that does not build is skipped; one whose patch does not apply is
    skipped with ``applies=False`` (the revert's test: patch(1) on the real tree tells). Either
    is recorded in the step's directory (skipped.json), for a replay."""

    spec: BoardSpec
    flavor: str
    scenarios: list[str]
    series: Path
    thresholds: Thresholds
    args: argparse.Namespace
    """`rtgate ab`'s settings (round_duration, max_time, …) and the build's (runtime, trust)."""
    console: Console
    steps: int = 0
    built: dict[Variant, Path] = field(default_factory=dict)

    def _build(self, v: Variant) -> Path:
        if v in self.built:
            return self.built[v]
        names = [p.name for p in read_series(self.series)]
        home = self.args.out / "variants" / _slug(label(v, len(names)))
        series = write_series(home / "patches", [(names[number - 1],
                                                   self.series.parent / names[number - 1])
                                                  for number in v])
        build(self.spec.name, self.flavor, series=series,
              out=home / "kernels" / self.flavor, runtime=self.args.runtime,
              trust=self.args.trust)
        self.built[v] = home / "kernels"
        return self.built[v]

    def __call__(self, base: Variant, cand: Variant) -> Measurement:
        self.steps += 1
        out = step_dir(self.args.out, self.steps, base, cand, len(read_series(self.series)))
        try:
            kernels = [self._build(v) for v in (base, cand)]
        except PatchError as exc:
            return self._skipped(out, f"does not apply: {exc.oneline()}", applies=False)
        except (InputError, InfraError) as exc:
            return self._skipped(out, f"does not build: {exc.oneline()}", applies=True)
        gate = _gate(self.spec, self.flavor, self.scenarios, self.thresholds, self.args, out,
                     (kernels[0], kernels[1]), self.console)
        gate.run()
        ab_doc.write(gate, out)
        return _measurement(gate, {"ab": str(out / ab_doc.NAME), "elapsed_s": gate.elapsed_s})

    @staticmethod
    def _skipped(out: Path, why: str, *, applies: bool) -> Measurement:
        write_atomic(out / SKIPPED, json.dumps({"why": why, "applies": applies}) + "\n")
        return Measurement(SKIP, why, applies=applies)


class _Skipped(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    why: str = Field(max_length=4096)
    applies: bool


@dataclass
class ReplayMeasure:
    """measure(base, candidate) from the rounds a bisect left in SOURCE/steps/: step k must be
    the directory the search asks for at step k, and is re-decided from its rounds' result files
    with the plan fixed before the bisect began (``ABRun.replay``). A step without rounds is
    skipped only with its skipped.json (its reason quoted, never believed further); with no
    directory at all the bisect stopped there, and no outcome is drawn."""

    spec: BoardSpec
    flavor: str
    scenarios: list[str]
    thresholds: Thresholds
    args: argparse.Namespace
    source: Path
    n: int
    used: list[Path] = field(default_factory=list)

    def __call__(self, base: Variant, cand: Variant) -> Measurement:
        number = len(self.used) + 1
        home = step_dir(self.source, number, base, cand, self.n)
        others = [p.name for p in self._entries() if p.name.startswith(f"{number:02d}_")
                  and p.name != home.name]
        if others:
            raise InputError(f"{others[0]} is not step {number} of this bisect: the search asks "
                             f"for {home.name} there: refused", path=home.parent)
        if not home.exists() and not home.is_symlink():
            raise InfraError(f"no {home.name}: the bisect's rounds end before step {number}",
                             path=home.parent)
        if home.is_symlink() or not home.is_dir():
            raise InputError("not a directory the bisect wrote: refused", path=home)
        self.used.append(home)
        skipped = home / SKIPPED
        if not any((home / side).exists() or (home / side).is_symlink() for side in "AB") \
                and skipped.is_file() and not skipped.is_symlink():
            try:
                record = _Skipped.model_validate_json(skipped.read_bytes())
            except ValidationError as exc:
                raise InputError(f"unreadable: {exc.errors()[0]['msg']}", path=skipped) from exc
            return Measurement(SKIP, record.why, applies=record.applies,
                               detail={"step": home.name})
        gate = _gate(self.spec, self.flavor, self.scenarios, self.thresholds, self.args, home,
                     (None, None), Console(stderr=True, quiet=True))
        gate.replay()
        return _measurement(gate, {"step": home.name})

    def _entries(self) -> list[Path]:
        steps = self.source / "steps"
        if steps.is_symlink():
            raise InputError("a symbolic link where the bisect writes its steps: refused",
                             path=steps)
        return sorted(steps.iterdir()) if steps.is_dir() else []

    def unused(self) -> list[str]:
        """Step directories the search never asked for."""
        return [p.name for p in self._entries() if p not in self.used]


EPILOG = """\
Each step builds a prefix of the series (a temporary series file of the first k patches; the
kernel cache and ccache rebuild only what changed), then runs the A/B gate (`rtgate ab`) of it
against the good end until same, worse or better, or --step-time: unknown at the cap is skipped
like `git bisect skip`, as is a prefix that does not build or boot. A culprit is named only when
confirmed: worse than its parent in --repeats measurements, and the bad end without it same as the
good end (when that revert applies; otherwise the report says so).

Outputs in OUT: state.json (the measurements so far: run the same command again to resume),
steps/NN_…/ (each step's A/B rounds, ab.json, ab.md; skipped.json when it did not build),
variants/…/ (series and kernels), bisect.json (schema rtgate/bisect/v1) and bisect.md, also
printed.

--replay DIR re-decides a finished bisect from the rounds in DIR/steps/ (a pull request's, from
an artifact: untrusted data) and measures nothing: the same command with the same settings, and
--planned-rounds as the bisect had it, writes bisect.json and bisect.md in OUT from them alone.
A step directory that is not the one the search asks for is refused (exit 2, bisect.md says
why); rounds that end before the bisect finished are no verdict (exit 3).

exit codes:
  0  nothing to bisect: the whole series is same as (or better than) the good end
  1  culprit found and confirmed
  2  usage or input error, or the ends are wrong (the good end over its budget, an explicit bad
     end not worse), with the measurements
  3  no confirmed culprit: skipped prefixes leave several, the regression may be spread, the
     revert is still worse, or a step could not be measured
"""


def _slug(text: str) -> str:
    return text.replace(", ", "+").replace(" ", "_")


def handler(args: argparse.Namespace) -> int:
    console = Console(stderr=True)
    spec = load_kernel_board(args.board, "nothing to build, nothing to bisect (use a kernel "
                                          "board such as qemu-arm64)")
    n = len(read_series(args.series))
    good, bad = args.good or 0, n if args.bad is None else args.bad
    if not 0 <= good < bad <= n:
        raise InputError(f"--good {good} --bad {bad}: need 0 <= good < bad <= {n} (patches in "
                         "the series)", path=args.series)
    if args.replay is not None and args.planned_rounds is None:
        raise InputError("--replay needs --planned-rounds, as the bisect had it: without a plan "
                         "fixed before the first round its looks cannot be made again")
    thresholds = load_thresholds(args.thresholds)
    args.out.mkdir(parents=True, exist_ok=True)
    scenarios = scenarios_of(spec, args.scenarios)
    identity = {"series": [p.model_dump() for p in read_series(args.series)], "good": good,
                "bad": bad, "board": spec.name, "flavor": args.flavor, "scenarios": scenarios,
                "repeats": args.repeats, "round_duration_s": args.round_duration,
                "max_time_s": args.max_time, "min_effect_us": args.min_effect_us,
                "alpha": args.alpha,
                # Only when given: a state file of a bisect without a plan still resumes.
                **({"planned_rounds": args.planned_rounds} if args.planned_rounds else {})}

    def progress(line: str) -> None:
        console.print(line, markup=False)

    if args.replay is None:
        log = Log.open(args.out / "state.json", identity)
        measure: Measure = BoardMeasure(spec, args.flavor, scenarios, args.series, thresholds,
                                        args, console, steps=len(log.steps))
        result = Bisect(n, good, bad, measure, log, explicit_bad=args.bad is not None,
                        repeats=args.repeats, progress=progress).run()
    else:
        # Nothing of the measuring job's own bookkeeping: no state file, no clock.
        log = Log(None, identity)
        replay = ReplayMeasure(spec, args.flavor, scenarios, thresholds, args, args.replay, n)
        try:
            result = Bisect(n, good, bad, replay, log, explicit_bad=args.bad is not None,
                            repeats=args.repeats, progress=progress, clock=lambda: 0.0).run()
            if unused := replay.unused():
                raise InputError(f"{unused[0]} is not a step the search asks for (it ends after "
                                 f"step {len(replay.used)}): refused", path=args.replay / "steps")
        except RtgateError as exc:
            text = refused_markdown(exc, log.steps, n)
            (args.out / "bisect.json").unlink(missing_ok=True)
            write_atomic(args.out / "bisect.md", text)
            print(text)
            raise
    doc = describe(args.series, {"board": spec.name, "flavor": args.flavor, **result})
    write_atomic(args.out / "bisect.json", json.dumps(doc, indent=2) + "\n")
    text = markdown(doc, replayed=args.replay is not None)
    write_atomic(args.out / "bisect.md", text)
    print(text)
    print(f"bisect.json: {args.out / 'bisect.json'}\nbisect.md: {args.out / 'bisect.md'}")
    return int(result["exit"])


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser(
        "bisect", help="find the patch of a series that made latency worse, and confirm it",
        description="Binary search over prefixes of a patch series with the A/B gate against "
                    "the good end; names a culprit only when confirmed.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--board", required=True, help="a kernel board from bench/boards/")
    p.add_argument("--flavor", required=True, help="the kernel flavor to build (stock, rt)")
    p.add_argument("--series", type=Path, required=True, metavar="FILE",
                   help="quilt series file; its patches beside it")
    p.add_argument("--good", type=count, metavar="N",
                   help="the first N patches are good (default 0: the unpatched kernel)")
    p.add_argument("--bad", type=count, metavar="M",
                   help="the first M patches are bad (default: the whole series)")
    p.add_argument("--scenarios", type=comma_list, help="comma-separated; `board`: the board's own")
    p.add_argument("--round-duration", type=duration, required=True,
                   help="measurement per A/B round, e.g. 20s")
    p.add_argument("--step-time", dest="max_time", type=duration, required=True,
                   help="time cap of one step's A/B rounds, e.g. 10m: unknown (skipped) after")
    p.add_argument("--planned-rounds", type=rounds_at_least(MIN_ROUNDS), metavar="N",
                   help="rounds a side every step's alpha spending plans for, fixed before the "
                        "first round (as `rtgate ab`; needed to --replay); default: what "
                        "--step-time allows at each step's first pair's pace")
    p.add_argument("--repeats", type=int, default=2,
                   help="culprit-against-parent measurements that must all be worse (default 2)")
    p.add_argument("--out", type=Path, required=True, help="output directory (and state)")
    p.add_argument("--replay", type=Path, metavar="DIR",
                   help="measure nothing: re-decide the bisect whose rounds are in DIR/steps/ "
                        "(e.g. a pull request's, from an artifact) into OUT")
    p.add_argument("--scale", type=scale, default=None, help="multiply load instances/streams")
    p.add_argument("--thresholds", type=Path, default=paths.THRESHOLDS, metavar="FILE")
    p.add_argument("--min-effect-us", type=positive, metavar="US",
                   help="minimum effect worth reporting (overrides ab.min_effect_us)")
    p.add_argument("--alpha", type=rate, metavar="RATE",
                   help="false-alarm rate of each step (overrides ab.alpha; default 0.01)")
    p.add_argument("--runtime", choices=RUNTIMES, default="host",
                   help="where the kernels build (as `rtgate kernel build`)")
    p.add_argument("--cache-trust", dest="trust", choices=TRUST_DOMAINS,
                   help="the kernel cache's trust domain: untrusted for a pull request's series")
    p.set_defaults(func=handler)
