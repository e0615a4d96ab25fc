"""``rtgate publish``: what the publisher posts, judged again from the raw results.

A gate artifact comes from a job that built and booted a pull request's kernel: its exit-code
file, JUnit, Markdown and even its name are the untrusted side's words. The publisher keeps only
the ``result.json`` files at the places the gate writes them (``gate-BOARD/FLAVOR/SCENARIO/``),
for boards the default branch's ``bench/boards`` knows, judges each one with the default
branch's budgets and renders its own JUnit and Markdown. A run whose result is missing is an
infrastructure failure, never a pass; whatever came from an artifact reaches Markdown as a code
span (``markdown.code``).

Three outcomes are kept apart in every word it writes: a latency verdict (pass or regression),
"not decided from the data" (an incomplete measurement: measure more) and an infrastructure
failure (no measurement: re-run once the board is healthy).

A pull request's gate measures main's kernel against the PR's on each board in A/B rounds
(``rtgate ab``). For a board the run context's ``ab`` plan names, the publisher decides again
from the rounds' result files (``gate-BOARD/A|B/round-N/FLAVOR/SCENARIO/result.json``), replaying
the gate's looks with the plan the trusted plan job recorded (``rtgate.ab.loop.ABRun.replay``),
never from ab.json or ab.md. A fourth outcome belongs to it: *undecided at the time cap* (measure
longer), exit 4 — a statement about the data, not a failure of the lab.

A pull request's gate asks for board kinds (``kind:``), each job running on whichever board of the
kind is free: its context, artifacts and plans name kinds, and an artifact's results name the
board that measured (shown in the comment); a kind needs no board file of its own name.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    model_validator,
)
from rich.console import Console

from rtgate import calibration, inputfile, paths
from rtgate.ab.loop import ABRun, Side
from rtgate.ab.render import markdown as ab_markdown
from rtgate.ab.settings import RoundSettings
from rtgate.board import spec as boardspec
from rtgate.board.spec import BoardSpec, flavors_of, load_board, scenarios_of
from rtgate.errors import Exit, InputError
from rtgate.gate import budgetdiff, infrarecord, junit, markdown, written
from rtgate.gate.markdown import code
from rtgate.gate.thresholds import Thresholds, load_thresholds, thresholds_file
from rtgate.gate.verdict import Crash, Infra, Ruling, Unjudged, judge
from rtgate.jsonfile import write_output
from rtgate.layout import INFRA, RESULT, RESULT_GLOBS, RUNNING
from rtgate.outcome import (
    GATE_EXIT,
    GATE_OF_AB,
    GATE_OF_EXIT,
    ABOutcome,
    GateOutcome,
    worst_outcome,
)
from rtgate.report import compare
from rtgate.report.history import runs_of
from rtgate.report.judge import Judge
from rtgate.report.runs import load_run
from rtgate.result import load_result

MARKER = "<!-- rtgate-latency-gate -->"
# GitHub refuses a comment or a check run's summary over 65 536 characters, and a refused update
# would leave the previous push's verdict standing: the comment is kept below it.
LIMIT = 60_000
LISTED = 30  # of a list a pull request controls (changed paths, budgets, artifact names)
ARTIFACT_PREFIX = "gate-"
_NAME = re.compile(r"[a-z0-9][a-z0-9._-]*")

Name = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9._-]*$", max_length=64)]


HEADLINE = {
    GateOutcome.PASS: "✅ latency verdict: every budget met",
    GateOutcome.REGRESSION: "❌ latency verdict: regression, a budget was exceeded",
    GateOutcome.CRASHED: "💥 the kernel under test crashed: its failure (panic, oops, hang or a "
                         "reboot nobody asked for), with the board's evidence",
    GateOutcome.INCOMPLETE: "⚠️ not decided from the data: the measurement is incomplete, "
                            "measure more (no latency verdict)",
    GateOutcome.INFRASTRUCTURE: "🛠️ infrastructure failure: no measurement, re-run once the "
                                "board is healthy (no latency verdict)",
    GateOutcome.INPUT: "⚠️ input error: nothing was judged",
    GateOutcome.UNDECIDED: "❔ undecided at the time cap: the A/B rounds could not tell the "
                           "pull request's kernel from main's, measure longer (no latency "
                           "verdict)",
    GateOutcome.UNCHANGED: "✅ no kernel input changed: nothing measured, nothing to judge",
}
UNCHANGED_TEXT = ("This pull request changes nothing under `kernel/patches/` or `kernel/configs/` "
                  "(its diff from the merge base with the default branch, read by the default "
                  "branch's plan job): no kernel was built, booted or measured, and there is no "
                  "latency verdict to give. A push that changes a kernel input runs the gate.")
def kind_of(outcomes: list[Ruling]) -> GateOutcome:
    return worst_outcome({_kind(o) for o in outcomes})


def _kind(o: Ruling) -> GateOutcome:
    if isinstance(o, Crash):
        return GateOutcome.CRASHED
    if isinstance(o, Infra):
        return GateOutcome.INFRASTRUCTURE
    return GATE_OF_EXIT[o.exit]


class ABPlan(BaseModel):
    """The A/B plan of one board as the gate's plan job gave it to `rtgate ab`: the board
    kind's calibration record's plan (with the record's sha256), else latency-gate.yml's
    conservative default for a kind without one (with a note saying so)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    round_s: int = Field(ge=1)
    max_time_s: int = Field(ge=1)
    rounds: int = Field(ge=3)
    """Rounds a side the alpha spending plans for (``rtgate ab --planned-rounds``)."""
    calibration_sha256: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")] | None = None
    """The calibration record the plan came from; its primary metrics decide the replay."""
    note: Annotated[str, StringConstraints(max_length=500)] | None = None


class Context(BaseModel):
    """What the gate workflow's own (GitHub-hosted, trusted) plan job recorded about the run."""

    model_config = ConfigDict(extra="forbid", strict=True)

    event: Name
    head_sha: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{40}$")]
    pull_request: int | None = Field(None, ge=1)
    boards: list[Name] = Field(min_length=1)
    scenarios: list[Name] = []
    # Paths the pull request changes among the gate's inputs (never applied, only shown).
    changed_inputs: list[Annotated[str, StringConstraints(max_length=4096)]] = []
    # Boards measured A/B (main's kernel against the pull request's), with the gate's plan.
    ab: dict[Name, ABPlan] = {}
    # False: the pull request's base...head diff touches no kernel/patches or kernel/configs
    # file (the plan job's own git diff), so the gate measured nothing. Absent: measured.
    kernel_inputs_changed: bool = True

    @model_validator(mode="after")
    def _unchanged_is_a_pull_requests(self) -> Context:
        if not self.kernel_inputs_changed and self.event != "workflow_run":
            raise ValueError("kernel_inputs_changed: false names a pull request's gate "
                             f"(event workflow_run), not a {self.event} run")
        return self


def load_context(directory: Path) -> tuple[Context, Path | None]:
    """context.json of the run, and the pull request's thresholds.yml when it changed one."""
    path = directory / "context.json"
    try:
        context = Context.model_validate_json(inputfile.read_bytes(path, inputfile.DOCUMENT))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "document"
        raise InputError(f"{where}: {first['msg']}", path=path) from exc
    theirs = directory / "thresholds.yml"
    return context, theirs if theirs.is_file() and not theirs.is_symlink() else None


@dataclass(frozen=True)
class BoardJudgement:
    name: str
    outcomes: list[Ruling]
    ab: ABRun | None = None
    """The board's A/B decision, re-made from its rounds; ``outcomes`` are then the candidate
    rounds' budget verdicts."""
    instance: str | None = None
    """The board that measured, when ``name`` is its kind (a pull request's gate)."""

    @property
    def kind(self) -> GateOutcome:
        if self.ab is None:
            return kind_of(self.outcomes)
        if self.ab.outcome is ABOutcome.INCOMPLETE and self.ab.infra:
            return GateOutcome.INFRASTRUCTURE
        return GATE_OF_AB[self.ab.outcome]


@dataclass(frozen=True)
class Judgement:
    boards: list[BoardJudgement]
    ignored: list[str]  # artifact names that name no known board
    accepted: list[Path]  # result files that were judged where the gate writes them
    unchanged: bool = False
    """A pull request that changes no kernel input: nothing measured, nothing judged."""

    @property
    def outcomes(self) -> list[Ruling]:
        return [o for b in self.boards for o in b.outcomes]

    @property
    def kind(self) -> GateOutcome:
        if self.unchanged:
            return GateOutcome.UNCHANGED
        return worst_outcome({b.kind for b in self.boards})


def nothing_to_judge(artifacts: list[Path]) -> Judgement:
    """The judgement of a pull request that changes no kernel input. The gate measured nothing;
    an artifact that turns up anyway is listed as ignored, never judged."""
    return Judgement([], [a.name for a in artifacts], [], unchanged=True)


def judge_artifacts(artifacts: list[Path], thresholds: Thresholds, boards_root: Path,
                    expected: list[str] | None, scenarios: list[str] | None,
                    ab_plans: dict[str, ABPlan] | None = None, *,
                    by_kind: bool = False) -> Judgement:
    """Judge each board's expected runs from the result files alone.

    ``by_kind``: a pull request's gate, whose lab jobs each ask for a board KIND and run on
    whichever of its boards is free: names (artifacts, expected, plans) are kinds (a LAVA
    board's its own, ``_gated_as``), and each artifact's results are those of the board of that
    kind they name (kept for provenance). A kind needs no board file of its own name (rpi5-a
    and rpi5-b, both ``kind: rpi5``)."""

    files = {p.stem for p in boards_root.glob("*.yml")}
    kinds = {name: _gated_as(load_board(name, boards_root)) for name in files} if by_kind else {}
    known = set(kinds.values()) if by_kind else files
    found: dict[str, Path] = {}
    ignored: list[str] = []
    for directory in artifacts:
        board = directory.name.removeprefix(ARTIFACT_PREFIX)
        if (directory.name.startswith(ARTIFACT_PREFIX) and _NAME.fullmatch(board)
                and board in known and directory.is_dir() and not directory.is_symlink()):
            found[board] = directory
        else:
            ignored.append(directory.name)
    wanted = expected if expected is not None else sorted(found)
    result: list[BoardJudgement] = []
    accepted: list[Path] = []
    for name in wanted:
        if name not in known:
            raise InputError(f"{'no board of kind' if by_kind else 'board'} {name!r} "
                             f"{'in' if by_kind else 'is not in'} bench/boards")
        instances = sorted(b for b, k in kinds.items() if k == name) if by_kind else [name]
        spec = load_board(_instance(found.get(name), instances), boards_root)
        flavors = flavors_of(spec, None)
        runs = [(f or RUNNING, s) for f in flavors for s in scenarios_of(spec, scenarios)]
        if name not in found:
            result.append(BoardJudgement(name, [Infra(name, f, s, Path(f"{ARTIFACT_PREFIX}{name}"),
                                             "the gate uploaded no artifact for this board")
                                       for f, s in runs]))
            continue
        if ab_plans and name in ab_plans:
            result.append(_ab_board(name, found[name], spec, flavors,
                                    scenarios_of(spec, scenarios), thresholds, ab_plans[name]))
            continue
        outcomes = [_run(found[name], spec, f, s, thresholds, boards_root, accepted)
                    for f, s in runs]
        result.append(BoardJudgement(name, outcomes, instance=spec.name))
    return Judgement(result, ignored, accepted)


def judge_run(directory: Path, board: str, thresholds: Thresholds, boards_root: Path,
              scenarios: list[str] | None, flavors: list[str] | None = None) -> BoardJudgement:
    """One board's run directory (``rtgate pipeline --out``), judged as its gate-BOARD
    artifact would be."""
    spec = load_board(board, boards_root)
    accepted: list[Path] = []
    return BoardJudgement(board, [_run(directory, spec, f or RUNNING, s, thresholds, boards_root,
                                       accepted)
                                  for f in flavors_of(spec, flavors)
                                  for s in scenarios_of(spec, scenarios)], instance=spec.name)


def _gated_as(spec: BoardSpec) -> str:
    """The name a pull request's gate measures a board under: its kind on a lab controller (any
    free board of the kind), its own on a LAVA lab (gate-lava runs a job per board)."""
    return spec.name if spec.driver == "lava" else boardspec.kind_of(spec)


def _instance(directory: Path | None, instances: list[str]) -> str:
    """The board of a kind whose results an artifact holds: the one its first result names when
    that is an instance of the kind, else the kind's first board (its results are then refused
    as claiming another board)."""
    if directory is not None and len(instances) > 1:
        for pattern in RESULT_GLOBS:
            for path in sorted(directory.glob(pattern)):
                if path.is_symlink() or not path.is_file():
                    continue
                try:
                    claimed = load_result(path).board.name
                except InputError:
                    continue
                return claimed if claimed in instances else instances[0]
    return instances[0]


def _ab_board(name: str, directory: Path, spec: BoardSpec, flavors: list[str],
              scenarios: list[str], thresholds: Thresholds, plan: ABPlan) -> BoardJudgement:
    """Re-decide one board's A/B rounds from their results with the gate's plan, and with the
    calibration record it names (the default branch's: one that changed since is refused)."""
    record = None
    if plan.calibration_sha256:
        path = calibration.DIRECTORY / f"{boardspec.kind_of(spec)}.json"
        if not path.is_file() or calibration.sha256_of(path) != plan.calibration_sha256:
            why = (f"the plan names calibration record sha256 {plan.calibration_sha256[:12]}…, "
                   "which the default branch no longer holds: not re-decided")
            return BoardJudgement(name, [Unjudged(path, why)], instance=spec.name)
        record = calibration.load(path)
    settings = RoundSettings(out=directory, round_duration=plan.round_s,
                             max_time=plan.max_time_s, planned_rounds=plan.rounds,
                             calibration=record)
    run = ABRun(spec, (Side("A", "base", None, None), Side("B", "candidate", None, None)),
                [(f, s) for f in flavors for s in scenarios], thresholds, settings,
                Console(stderr=True, quiet=True))
    try:
        run.replay()
    except InputError as exc:
        return BoardJudgement(name, [Unjudged(Path(exc.path or directory), exc.oneline())],
                              instance=spec.name)
    # Only the candidate's rounds decide a budget; the base's are notes in the A/B section.
    return BoardJudgement(name, [v.evaluation for v in run.verdicts
                                 if v.side.role == "candidate"], run, spec.name)


def _run(directory: Path, spec: BoardSpec, flavor: str, scenario: str, thresholds: Thresholds,
         boards: Path, accepted: list[Path]) -> Ruling:
    home = directory / flavor / scenario
    path = home / RESULT
    if written.linked(directory, path):
        return Unjudged(path, f"{path}: {written.LINKED}")
    if not path.exists():
        # A crash is believed only with its evidence beside the record (infrarecord.load), and
        # only for the run where the gate writes it: the record's own names are not read.
        try:
            failed = infrarecord.load(home / INFRA) if (home / INFRA).is_file() else None
        except InputError:
            failed = None
        if isinstance(failed, Crash):
            return Crash(spec.name, flavor, scenario, home, failed.message, said=failed.said,
                         evidence=failed.evidence)
        return Infra(spec.name, flavor, scenario, home,
                     "no result.json: the run did not finish (its logs are in the artifact)")
    (outcome,) = judge([path], thresholds, boards=boards, allow_unbudgeted=False)
    result = outcome.result
    if result is None:
        return outcome
    if why := written.misplaced(result, spec.name, None if flavor == RUNNING else flavor,
                                scenario):
        return Unjudged(path, f"{path}: {why}")
    accepted.append(path)
    return outcome


def banner(context: Context, ours: Thresholds, theirs: Path | None) -> list[str]:
    """The gate inputs a pull request changed, shown first, and what its budgets would do."""
    if not context.changed_inputs:
        return []
    lines = ["> [!WARNING]",
             "> **This pull request changes gate inputs.** They are not used: the gate judges a "
             "pull request's kernel with the default branch's budgets, scenarios, boards and "
             "rtgate only. A maintainer reviews these changes (CODEOWNERS):", ">"]
    lines += _listed([f"> - {code(p)}" for p in context.changed_inputs], "> - ")
    if theirs is not None:
        try:
            changes = budgetdiff.diff(ours, load_thresholds(theirs))
        except InputError as exc:
            lines += [">", f"> Its `thresholds.yml` does not load: {code(exc.oneline())}"]
        else:
            lines += [">", "> `rtgate thresholds diff` (default branch → pull request):", ">"]
            lines += _listed([f"> - **{c.verdict}** {code(c.scope)}: {code(c.text)}"
                              for c in changes], "> - ")
            if not changes:
                lines.append("> - no budget changes")
    return lines + [""]


def render(judgement: Judgement, *, banner_lines: list[str], comparison: str | None,
           run_url: str | None) -> str:
    lines = [MARKER, "## Latency gate", ""] + banner_lines
    lines += [f"**{HEADLINE[judgement.kind]}**", ""]
    if judgement.unchanged:
        lines += [UNCHANGED_TEXT, ""]
    lines += [f"- {code(b.name)}{_on(b)}: {HEADLINE[b.kind]}" for b in judgement.boards]
    if judgement.ignored:
        why = ("nothing was to be measured" if judgement.unchanged
               else "no board of the default branch's `bench/boards`")
        lines += ["", f"Ignored ({why}): "
                  + ", ".join(_listed([code(n) for n in judgement.ignored], ""))]
    for b in judgement.boards:
        if b.ab is not None:
            lines += ["", ab_markdown(b.ab, f"### A/B on {code(b.name)}: main's kernel (A) "
                                            "against this pull request's (B)").rstrip("\n")]
    if not judgement.unchanged:
        lines += ["", "<details><summary>Every check</summary>", "",
                  markdown.render(judgement.outcomes), "</details>", ""]
    else:
        lines.append("")
    if comparison is not None:
        lines += ["### Against the latest main results", "", comparison]
    if run_url:
        lines.append(f"[Gate run]({run_url})")
    return _fit(lines, run_url)


def _on(board: BoardJudgement) -> str:
    return f" (on {code(board.instance)})" if board.instance not in (None, board.name) else ""


def _listed(items: list[str], prefix: str) -> list[str]:
    if len(items) <= LISTED:
        return items
    return [*items[:LISTED], f"{prefix}… and {len(items) - LISTED} more"]


def _fit(lines: list[str], run_url: str | None) -> str:
    """The comment, cut at a line below LIMIT when it is longer: never inside a line, where a
    code span holding a pull request's text would lose its closing backticks."""
    text = "\n".join(lines).rstrip("\n") + "\n"
    if len(text) <= LIMIT:
        return text
    cut = [f"*Cut at {LIMIT} characters (GitHub's limit). Every check is in `junit.xml` of the "
           "publisher's `latency-report` artifact"
           + (f" ([gate run]({run_url}))*." if run_url else "*.")]
    # What follows the kept lines: a closing </details>, an empty line, the note.
    room = LIMIT - len("</details>\n\n") - len(cut[0]) - 1
    kept: list[str] = []
    for line in lines:
        room -= len(line) + 1
        if room < 0:
            break
        kept.append(line)
    # Close a <details> the cut left open, so that the note shows.
    closing = ["</details>"] if kept.count("</details>") < sum(
        ln.startswith("<details>") for ln in kept) else []
    return "\n".join([*kept, *closing, "", *cut]) + "\n"


def outcome_json(judgement: Judgement) -> str:
    kind = judgement.kind
    return json.dumps({"outcome": kind.value, "exit": int(GATE_EXIT[kind]), "title": HEADLINE[kind],
                       "boards": {b.name: b.kind.value for b in judgement.boards}}, indent=1)


def exit_of(judgement: Judgement) -> Exit:
    return GATE_EXIT[judgement.kind]


@dataclass(frozen=True)
class PublishSettings:
    artifacts: tuple[Path, ...]  # gate-BOARD directories; other names are listed as ignored
    markdown: Path
    thresholds: Path | None = None  # None: thresholds.yml of the data root
    boards: Path | None = None  # None: bench/boards of the data root
    expect: tuple[str, ...] = ()  # none: the context's boards, else every known one found
    scenarios: tuple[str, ...] = ()  # none: the context's, else each board's
    context: Path | None = None  # the gate's run-context artifact
    baseline: Path | None = None  # main's history store, to compare with
    run_url: str | None = None
    junit: Path | None = None
    outcome: Path | None = None


def publish(settings: PublishSettings) -> Exit:
    """Judge the artifacts, write the comment (and JUnit, outcome JSON), print the outcome."""
    thresholds = load_thresholds(thresholds_file(settings.thresholds))
    boards = settings.boards or paths.require(paths.BOARDS, "--boards DIR")
    context, theirs = load_context(settings.context) if settings.context else (None, None)
    expected = list(settings.expect) or (context.boards if context else None)
    scenarios = list(settings.scenarios) or (context.scenarios if context else None) or None
    if context is not None and not context.kernel_inputs_changed:
        judged = nothing_to_judge(list(settings.artifacts))
    else:
        # A pull request's gate asks for kinds (latency-gate.yml's plan job); others for boards.
        judged = judge_artifacts(list(settings.artifacts), thresholds, boards, expected,
                                 scenarios, context.ab if context else None,
                                 by_kind=context is not None and context.event == "workflow_run")
    banner_lines = banner(context, thresholds, theirs) if context else []
    text = render(judged, banner_lines=banner_lines,
                  comparison=_comparison(settings.baseline, judged.accepted, thresholds, boards),
                  run_url=settings.run_url)
    write_output(settings.markdown, text)
    if settings.junit:
        write_output(settings.junit, junit.render(judged.outcomes))
    if settings.outcome:
        write_output(settings.outcome, outcome_json(judged) + "\n")
    print(outcome_json(judged))
    return exit_of(judged)


def _comparison(baseline: Path | None, accepted: list[Path], thresholds: Thresholds,
                boards: Path) -> str | None:
    if baseline is None:
        return None
    try:
        before = runs_of([baseline])
    except InputError as exc:
        return f"No main baseline to compare with: {markdown.code(exc.oneline())}"
    return compare.markdown(before, [load_run(p) for p in accepted], Judge(thresholds, boards))
