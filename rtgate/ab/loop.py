"""The A/B loop: rounds of the base kernel (A) and the candidate (B) on one board, interleaved,
until the A/B decision is made or the time is up.

A round is one boot and run of one side for every flavor × scenario still undecided
(``rtgate.board.measure``, the pipeline's own measurement). Rounds alternate A B B A A B …,
so a drift of the board (heat, a neighbour's load) falls on both sides alike. After each pair, once
both sides have the three rounds a test needs, ``rtgate.stats.ab.Sequential`` looks at every
undecided key with its share of the false-alarm rate; a key's first decision is final and it is
not measured again. The loop stops when some key is worse (the check fails whatever the others
do), when every key is decided, or at the time cap: *undecided*, its own outcome, exit 4.

The plan — every key's budget, margin and primary metric, and the planned number of rounds a
side (the spending function's information scale) — is resolved before the first round
(``rtgate.ab.plan``, ``ABRun.resolve``): a usage error costs no board minute. The planned rounds
are those given (the gate's plan), else the calibration record's, else what the cap allows at a
stated pace; when rounds are slower the cap comes earlier and the alpha planned for the
missing looks is left unspent (conservative, never more than alpha). With the plan given,
``ABRun.replay`` re-makes every look from the rounds' result files alone: how the publisher
decides a pull request's A/B rounds without taking ab.json on trust.

Each round is also judged against its budget as ``rtgate check`` would, except ``min_samples``,
which applies to a side's rounds pooled (short rounds are the point). Only the candidate's
rounds decide: a candidate round over budget fails the check (exit 1); a base round over budget
is a note, since only the PR's kernel may change the PR's verdict. A round that is incomplete or
that the lab failed to measure ends the loop with exit 3: no verdict rests on it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn

from rtgate import calibration, tools
from rtgate.ab import plan as planning
from rtgate.ab.settings import ABSettings, RoundSettings
from rtgate.board.base import KernelArtifacts
from rtgate.board.measure import measure
from rtgate.board.spec import BoardSpec, flavors_of, kind_of, load_board, scenarios_of
from rtgate.errors import Exit, InfraError, InputError, KernelCrash, Problems
from rtgate.gate import infrarecord, written
from rtgate.gate.thresholds import Budget, Thresholds, flavor_of, load_thresholds
from rtgate.gate.verdict import Crash, Evaluation, Infra, Verdict, evaluate
from rtgate.harness.scenario import load_scenario
from rtgate.kernel import record
from rtgate.layout import RUNNING, round_dir, round_home
from rtgate.outcome import AB_EXIT, ABOutcome, Comparison
from rtgate.result import Result, load_result
from rtgate.stats import ab
from rtgate.textfmt import fmt
from rtgate.tools.rounds import round_of


@dataclass(frozen=True)
class Side:
    name: str  # "A" or "B": the directory of its rounds
    role: str  # "base" or "candidate"
    kernels: Path | None  # DIR/<flavor>/ from `rtgate kernel build --out`; None: running kernel
    scenarios: Path | None  # a directory of this side's scenario files; None: bench/scenarios


@dataclass(frozen=True)
class RoundVerdict:
    side: Side
    round: int
    key: ab.Key
    evaluation: Evaluation
    wall_s: float | None = None
    """Board time of the round: deploy, boot, run, collect, restore (None when replayed)."""


@dataclass
class ABRun:
    spec: BoardSpec
    sides: tuple[Side, Side]
    targets: list[tuple[str, str]]  # (flavor label, scenario) to measure
    thresholds: Thresholds
    settings: RoundSettings
    console: Console
    rounds: dict[str, dict[ab.Key, list[ab.Round]]] = field(
        default_factory=lambda: {"A": {}, "B": {}})
    keys: dict[tuple[str, str], ab.Key] = field(default_factory=dict)
    budgets: dict[ab.Key, Budget] = field(default_factory=dict)
    verdicts: list[RoundVerdict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seq: ab.Sequential | None = None
    plan: planning.RoundPlan | None = None
    """Resolved before the first round (``resolve``): every key's budget, margin and metric."""
    margins: dict[ab.Key, ab.Margin] = field(default_factory=dict)
    pairs: int = 0
    elapsed_s: float | None = 0.0
    """Wall time of the rounds; None when re-decided from files (``replay``)."""
    outcome: ABOutcome = ABOutcome.UNDECIDED
    why: str = ""
    infra: bool = False
    """The loop ended on a round the lab failed to measure (outcome "incomplete")."""

    def resolve(self) -> planning.RoundPlan:
        """The plan, every usage error found before any round (InputError, exit 2)."""
        if self.plan is None:
            targets = [self._target(flavor, scenario) for flavor, scenario in self.targets]
            self.plan = planning.resolve(self.spec, targets, self.thresholds, self.settings)
            self.margins = self.plan.margins
            self.seq = self.plan.sequential()
        return self.plan

    def _target(self, flavor: str, scenario: str) -> planning.RoundTarget:
        """What each side measures with and to what resolution, and the longer warm-up: from
        the sides' scenario files, or in a replay (``elapsed_s`` None) the tools from the first
        rounds' results, since a replay reads only results (the publisher's checkout need not
        hold the scenarios); each round's resolution is checked as it is read (``_record``)."""
        if self.elapsed_s is None:
            names = []
            for side in self.sides:
                path = self._result_path(side, 1, flavor, scenario)
                names.append(load_result(path).tool.name if path.is_file() else "cyclictest")
            return planning.RoundTarget(flavor, scenario, (names[0], names[1]))
        read = [load_scenario(self._ref(side, scenario))[0] for side in self.sides]
        res = [tools.get(s.tool).resolution_us(s.options()) for s in read]
        return planning.RoundTarget(flavor, scenario, (read[0].tool, read[1].tool),
                                    max(s.warmup_s for s in read), (res[0], res[1]))

    def _ref(self, side: Side, scenario: str) -> str:
        return str(side.scenarios / f"{scenario}.yml") if side.scenarios else scenario

    def _home(self, side: Side, n: int, flavor: str, scenario: str) -> Path:
        return round_home(self.settings.out, side.name, n, flavor, scenario)

    def _round(self, side: Side, n: int, targets: list[tuple[str, str]]) -> ABOutcome | None:
        """One round of one side; the outcome that ends the loop, if any."""
        for flavor, scenario in targets:
            out = self._home(side, n, flavor, scenario)
            kernel = KernelArtifacts.from_dir(side.kernels / flavor) if side.kernels else None
            self.console.rule(f"[bold]{side.name} ({side.role}) round {n}[/] {self.spec.name} "
                              f"{flavor or 'running kernel'} {scenario}")
            started = time.monotonic()
            try:
                m = measure(self.spec, kernel, self._ref(side, scenario),
                            self.settings.round_duration, out, flavor=flavor or None,
                            scale=self.settings.scale)
            except InfraError as exc:
                infrarecord.save(Infra(self.spec.name, flavor or RUNNING, scenario,
                                       Path(exc.path) if exc.path else out, exc.oneline()), out)
                return self._infra(side, n, flavor, scenario, exc.oneline())
            except KernelCrash as exc:
                infrarecord.save(Crash(self.spec.name, flavor or RUNNING, scenario,
                                       Path(exc.path) if exc.path else out, exc.oneline(),
                                       said=exc.said, evidence=exc.evidence), out)
                return self._crashed(side, n, flavor, scenario, exc.said)
            stop = self._record(side, n, flavor, m.result, m.result_path,
                                time.monotonic() - started)
            if stop:
                return stop
        return None

    def _infra(self, side: Side, n: int, flavor: str, scenario: str, why: str) -> ABOutcome:
        self.infra = True
        self.why = f"{side.role} round {n} ({flavor or RUNNING}/{scenario}): infrastructure " \
                   f"failure: {why}"
        return ABOutcome.INCOMPLETE

    def _crashed(self, side: Side, n: int, flavor: str, scenario: str, said: str) -> ABOutcome:
        """The candidate's kernel crashing is its failure; the base's (main's kernel) says
        nothing about the candidate: no verdict, and not the lab's fault either."""
        where = f"{side.role} round {n} ({flavor or RUNNING}/{scenario})"
        if side.role == "candidate":
            self.why = f"{where}: the kernel under test crashed: {said}"
            return ABOutcome.CRASHED
        self.why = f"{where}: the base kernel crashed, so nothing is compared: {said}"
        return ABOutcome.INCOMPLETE

    def _record(self, side: Side, n: int, flavor: str, result: Result, path: Path,
                wall_s: float | None = None) -> ABOutcome | None:
        """Judge one round's result against its budget and keep it for the A/B test."""
        key = (result.board.name, flavor_of(result), result.scenario)
        planned = self.resolve().keys.get(key)
        if planned is None or key not in self.resolve().by_target.get((flavor, result.scenario),
                                                                      []):
            raise InputError(f"the result is {'/'.join(key)}, which the plan does not hold "
                             f"(it planned {', '.join('/'.join(k) for k in self.resolve().keys)})",
                             path=path)
        budget = planned.budget
        # min_samples is for the pooled rounds (rtgate.stats.ab), not for one short round.
        judged = evaluate(result, budget.model_copy(update={"min_samples": None}), path)
        self.verdicts.append(RoundVerdict(side, n, key, judged, wall_s))
        self.keys[(flavor, result.scenario)] = key
        self.budgets[key] = budget
        problems = "; ".join(c.detail for c in judged.checks if c.verdict is not Verdict.PASS)
        if judged.exit is Exit.INCOMPLETE:
            self.why = f"{side.role} round {n} ({'/'.join(key)}) is incomplete: {problems}"
            return ABOutcome.INCOMPLETE
        if judged.exit is Exit.BUDGET:
            if side.role == "candidate":
                self.why = f"candidate round {n} ({'/'.join(key)}): {problems}"
                return ABOutcome.BUDGET
            self.notes.append(f"base round {n} ({'/'.join(key)}) is over its budget (only "
                              f"the candidate's rounds decide): {problems}")
        cal = planned.calibration
        got = result.resolution_us
        expected = planned.measured_us[0 if side.name == "A" else 1]
        if cal is not None and expected is not None and got != expected:
            # A tool that could not measure as planned (a cyclictest without -N): the plan's
            # judging of the key (floored or not) was not made for such a round.
            self.why = (f"{side.role} round {n} ({'/'.join(key)}) measured in "
                        f"{calibration.resolution_words(got)}, its scenario in "
                        f"{calibration.resolution_words(expected)}: the plan's use of the "
                        "calibration record does not hold for it")
            return ABOutcome.INCOMPLETE
        if cal is not None and got > cal.resolution_us:
            # A replayed result coarser than the record's bank: no round can be made finer, and
            # the record says nothing of such a round (its budget is judged above all the same).
            self.why = (f"{side.role} round {n} ({'/'.join(key)}) measured in "
                        f"{calibration.resolution_words(got)}, its calibration record's bank in "
                        f"{calibration.resolution_words(cal.resolution_us)}: the record's error "
                        "rates, floor and stall threshold do not hold for it")
            return ABOutcome.INCOMPLETE
        this = round_of(result)
        if cal is not None and got < cal.resolution_us:
            # Finer than the bank: judged as the bank's rounds were measured (plan.judged_at).
            this = ab.floored(this, cal.resolution_us)
            said = f"{'/'.join(key)}: {planning.judged_at(cal)}"
            if said not in self.notes:
                self.notes.append(said)
        self.rounds[side.name].setdefault(key, []).append(this)
        return None

    def _targets(self) -> list[tuple[str, str]]:
        decided = self.seq.final if self.seq else {}
        return [t for t in self.targets if self.keys.get(t) not in decided]

    def _order(self) -> tuple[Side, Side]:
        a, b = self.sides
        return (a, b) if self.pairs % 2 else (b, a)

    def _look(self) -> bool:
        """After a pair: look, and say whether the loop is done."""
        plan = self.resolve()
        seq = self.seq
        assert seq is not None
        if ab.MIN_ROUNDS <= self.pairs <= seq.planned:
            seq.look(self.pairs, [
                ab.KeyRounds(key, self.rounds["A"][key], self.rounds["B"][key],
                             self.margins[key], self.budgets[key].min_samples,
                             plan.keys[key].primary, plan.keys[key].stall_threshold_us)
                for key in self.budgets if key not in seq.final])
        if seq.stopped(list(self.budgets)):
            final = {d.outcome for d in seq.final.values()}
            self.outcome = (ABOutcome.WORSE if Comparison.WORSE in final
                            else ABOutcome.BETTER if Comparison.BETTER in final
                            else ABOutcome.SAME)
            return True
        return False

    def pair(self) -> ABOutcome | None:
        """Measure the next pair of rounds (every target still undecided), in the loop's order;
        the outcome that ends the loop, if any. `rtgate calibrate` records its bank with it."""
        self.resolve()
        self.pairs += 1
        targets = self._targets()
        for side in self._order():
            stop = self._round(side, self.pairs, targets)
            if stop:
                return stop
        return None

    def run(self) -> None:
        start = time.monotonic()
        cap = self.settings.max_time
        while True:
            stop = self.pair()
            if stop:
                self.outcome = stop
                self.elapsed_s = time.monotonic() - start
                return
            done = self._look()
            self.elapsed_s = elapsed = time.monotonic() - start
            self._progress(elapsed)
            assert self.seq is not None
            seq = self.seq
            if done:
                return
            next_pair_ends = elapsed * (1 + 1 / self.pairs)
            if self.pairs >= seq.planned or next_pair_ends > cap:
                self.why = (f"the time cap ({fmt(cap)} s) was reached after "
                            f"{self.pairs} round(s) a side with some key still unknown")
                return

    def replay(self) -> None:
        """Decide again from the rounds' results under the settings' out, as ``run`` measured
        them: the same order, looks and plan (the planned rounds; required), so the same
        decisions. What the measuring job wrote besides the results (ab.json, ab.md) is never
        read. Rounds past the point where the procedure stops are not looked at."""
        assert self.settings.planned_rounds, "a replay needs the plan the gate used"
        self.elapsed_s = None
        self.resolve()
        while True:
            self.pairs += 1
            targets = self._targets()
            for side in self._order():
                for flavor, scenario in targets:
                    stop = self._load(side, self.pairs, flavor, scenario)
                    if stop:
                        self.outcome = stop
                        return
            if self._look():
                return
            assert self.seq is not None
            if self.pairs >= self.seq.planned or not any(
                    round_dir(self.settings.out, s.name, self.pairs + 1).is_dir()
                    for s in self.sides):
                self.why = (f"the rounds end after {self.pairs} a side (the time cap) with some "
                            "key still unknown")
                return

    def _result_path(self, side: Side, n: int, flavor: str, scenario: str) -> Path:
        """Where a replayed round's result is; a symbolic link on the way is refused."""
        return written.result_path(self.settings.out, self._home(side, n, flavor, scenario))

    def _load(self, side: Side, n: int, flavor: str, scenario: str) -> ABOutcome | None:
        read = written.read_back(self.settings.out, self._home(side, n, flavor, scenario),
                                 self.spec.name, flavor, scenario)
        if read.refused is not None:
            raise read.refused
        if read.record_error is not None:
            raise read.record_error
        if read.result is None:
            if isinstance(read.failed, Crash):  # its evidence beside it checked (confirmed)
                return self._crashed(side, n, flavor, scenario, read.failed.said)
            return self._infra(side, n, flavor, scenario, f"no {read.path.name} (the lab "
                               "failed to measure; infra.json and the logs are beside it)")
        return self._record(side, n, flavor, read.result, read.path)

    def _progress(self, elapsed: float) -> None:
        """A bar per pair, printed between rounds: the bench runner draws its own while one
        measures, and two live displays on one terminal garble each other."""
        assert self.seq is not None
        so_far = ", ".join(f"{'/'.join(k)} {d.outcome.value}" for k in self.budgets
                           if (d := self.seq.latest(k)) is not None) or "no look yet"
        cap = float(self.settings.max_time)
        with Progress(TextColumn("{task.description}"), BarColumn(), console=self.console,
                      auto_refresh=False) as bar:
            bar.add_task(f"round {self.pairs}/{self.seq.planned} a side · "
                         f"{elapsed:.0f}/{cap:.0f} s · {so_far}",
                         total=cap, completed=min(elapsed, cap))

    @property
    def exit(self) -> Exit:
        return AB_EXIT[self.outcome]


def check(settings: ABSettings, kernels_option: str = "--base and --cand"
          ) -> tuple[ABRun | None, Problems]:
    """The run `rtgate ab` asks for, resolved with its plan, and every problem found on the way:
    the board, its sides' kernels and scenarios, the budgets, each target's keys. Nothing is
    written or measured; the run is None when a problem leaves no plan to make.
    ``kernels_option`` is how the calling command takes the kernels, for its error."""
    spec = load_board(settings.board)  # nothing else resolves without the board
    problems = Problems()
    if spec.kernel_target and (settings.base is None or settings.cand is None) \
            and not settings.plan_only:
        problems.add(InputError(f"board {spec.name!r} boots the kernels it measures: give "
                                f"{kernels_option} (DIR/<flavor>/ from `rtgate kernel build "
                                "--out`)"))
    if not spec.kernel_target and (settings.base or settings.cand):
        problems.add(InputError(f"board {spec.name!r} measures its running kernel: both "
                                "sides are it; give no --base/--cand (--cand-scenario-dir "
                                "plants a difference)"))
    sides = (Side("A", "base", settings.base, None),
             Side("B", "candidate", settings.cand, settings.cand_scenario_dir))
    flavors = problems.attempt(lambda: flavors_of(
        spec, list(settings.flavors) if settings.flavors else None)) or []
    scenarios = scenarios_of(spec, list(settings.scenarios) if settings.scenarios else None)
    thresholds = problems.attempt(lambda: load_thresholds(settings.thresholds))
    for scenario in scenarios:
        problems.attempt(lambda sc=scenario: load_scenario(sc))
    for side in sides:
        for flavor in flavors if side.kernels and not settings.plan_only else []:
            problems.attempt(lambda d=side.kernels / flavor: KernelArtifacts.from_dir(d))
        for scenario in scenarios if side.scenarios else []:
            ref = str(side.scenarios / f"{scenario}.yml")
            named = problems.attempt(lambda r=ref: load_scenario(r)[0].name)
            if named is not None and named != scenario:
                problems.add(InputError(f"names scenario {named!r}, not {scenario!r}: its "
                                        "rounds would not pair with the base's", path=ref))
    rounds = settings.rounds
    notes = []
    if rounds.calibration is None and rounds.use_record:
        rounds = replace(rounds, calibration=problems.attempt(
            lambda: calibration.for_kind(kind_of(spec))))
    if rounds.calibration is None and rounds.use_record:
        notes.append(f"no calibration record for {kind_of(spec)!r} (bench/calibration/): each "
                     "key's primary metric is the rule's default, and the false-alarm rate and "
                     "power are unmeasured on this board (`rtgate calibrate`)")
    if problems or thresholds is None:
        return None, problems
    targets = [(f, s) for f in flavors for s in scenarios]

    def run_of(some: list[tuple[str, str]]) -> ABRun:
        return ABRun(spec, sides, some, thresholds, rounds, Console(stderr=True),
                     notes=list(notes))

    # Each target's keys on their own first, so that every missing budget or minimum effect is
    # named; then the whole run, whose cap must hold every target's rounds.
    for target in targets:
        problems.attempt(lambda t=target: run_of([t]).resolve())
    if problems:
        return None, problems
    run = run_of(targets)
    return (run, problems) if problems.attempt(run.resolve) is not None else (None, problems)


def prepare(settings: ABSettings, console: Console) -> ABRun:
    """The run `rtgate ab` asks for, with everything a round needs checked before the first
    boot (every problem at once, exit 2), its plan printed."""
    run, problems = check(settings)
    problems.raise_found("the first round")
    assert run is not None
    return ready(run, settings, console)


def ready(run: ABRun, settings: ABSettings, console: Console) -> ABRun:
    """A checked run (``check``) made ready for its first round: each side's build record kept
    with its rounds, the plan printed."""
    run.console = console
    for side in run.sides if not settings.plan_only else ():
        for flavor in dict.fromkeys(f for f, _ in run.targets) if side.kernels else []:
            # What a report needs of each side's build, kept with its rounds (rtgate kcidb).
            record.keep(side.kernels / flavor, settings.rounds.out / side.name / record.BUILDS
                        / flavor)
    for line in run.resolve().describe():
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    return run
