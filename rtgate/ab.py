"""`rtgate ab`: the base kernel (A) against the candidate (B) on one board, in interleaved rounds,
until the A/B decision is made or the time is up.

A round is one boot and run of one side for every flavor × scenario still undecided
(``rtgate.board.cli.measure``, the pipeline's own measurement). Rounds alternate A B B A A B …,
so a drift of the board (heat, a neighbour's load) falls on both sides alike. After each pair, once
both sides have the three rounds a test needs, ``rtgate.stats.ab.Sequential`` looks at every
undecided key with its share of the false-alarm rate; a key's first decision is final and it is
not measured again. The loop stops when some key is worse (the check fails whatever the others
do), when every key is decided, or at the time cap: *undecided*, its own outcome, exit 4.

The planned number of rounds a side (the spending function's information scale) is fixed before
any look at the latencies: ``--planned-rounds`` (the gate's plan), else after the first pair from
its wall time and the cap; when later rounds are slower the cap comes earlier and the alpha
planned for the missing looks is left unspent (conservative, never more than alpha). With the
plan given, ``Gate.replay`` re-makes every look from the rounds' result files alone: how the
publisher decides a pull request's A/B rounds without taking ab.json on trust.

Each round is also judged against its budget as ``rtgate check`` would, except ``min_samples``,
which applies to a side's rounds pooled (short rounds are the point). Only the candidate's
rounds decide: a candidate round over budget fails the check (exit 1); a base round over budget
is a note, since only the PR's kernel may change the PR's verdict. A round that is incomplete or
that the lab failed to measure ends the loop with exit 3: no verdict rests on it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn

from rtgate.bench.scenario import load_scenario
from rtgate.board.base import KernelArtifacts
from rtgate.board.measure import measure
from rtgate.board.spec import BoardSpec, flavors_of, load_board, scenarios_of
from rtgate.cli.args import add_ab_options, comma_list, duration
from rtgate.errors import Exit, InfraError, InputError
from rtgate.gate import infrarecord
from rtgate.gate.markdown import cell, code
from rtgate.gate.thresholds import Budget, Thresholds, flavor_of, load_thresholds
from rtgate.gate.verdict import Evaluation, Infra, Verdict, evaluate
from rtgate.jsonfile import write_atomic
from rtgate.layout import RUNNING, round_home
from rtgate.report.compare import EFFECT_REPORTED
from rtgate.result import Result, load_result
from rtgate.stats import ab
from rtgate.textfmt import fmt

SCHEMA_ID = "rtgate/ab/v1"

EPILOG = f"""\
Rounds alternate A B B A A B … (one boot and run each) on the one board; after each pair, once
each side has {ab.MIN_ROUNDS} rounds, every undecided board × flavor × scenario is decided with
its share of the false-alarm rate ({ab.SPENDING}; the
shares add up to at most the rate). A decided key is not measured again. min_samples apply to a
side's rounds together; every other budget applies to each round as in `rtgate check`.

The `local` board measures its running kernel: both sides are that kernel (no --base/--cand);
with --cand-scenario-dir B runs each scenario from that directory instead (e.g. the same
scenario plus an added load: a planted regression), otherwise it is an A/A check.

Outputs in OUT: A/round-N/<flavor>/<scenario>/ and B/round-N/… (result.json, raw/, or infra.json),
ab.json (schema {SCHEMA_ID}: outcome, effects with intervals, rounds, looks, alpha spent) and
ab.md (for the pull-request comment), also printed.

exit codes:
  0  same or better: every key decided, none worse, every candidate round within budget
  1  worse: a regression (the A/B test, or a candidate round over its budget)
  2  usage or input error (unknown board/scenario/flavor, no kernels, no budget or minimum effect)
  3  a round is incomplete or the infrastructure failed: no verdict
  4  undecided at the time cap: the rounds measured could not tell same from worse or better;
     measure longer (--max-time) — a statement about the data, not a lab failure
"""

_HEADLINE = {
    "same": "🟰 same", "better": "✅ better", "worse": "❌ worse",
    "budget": "❌ a candidate round exceeded its budget",
    "undecided": "❔ undecided at the time cap (measure longer)",
    "incomplete": "⚠️ not decided from the data: a round is incomplete, measure more",
}
_INFRA = "🛠️ infrastructure failure: a round has no measurement, re-run once the board is healthy"
_EXIT = {"same": Exit.OK, "better": Exit.OK, "worse": Exit.BUDGET, "budget": Exit.BUDGET,
         "undecided": Exit.UNDECIDED, "incomplete": Exit.INCOMPLETE}


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
class Gate:
    spec: BoardSpec
    sides: tuple[Side, Side]
    targets: list[tuple[str, str]]  # (flavor label, scenario) to measure
    thresholds: Thresholds
    args: argparse.Namespace
    console: Console
    rounds: dict[str, dict[ab.Key, list[ab.Round]]] = field(
        default_factory=lambda: {"A": {}, "B": {}})
    keys: dict[tuple[str, str], ab.Key] = field(default_factory=dict)
    budgets: dict[ab.Key, Budget] = field(default_factory=dict)
    verdicts: list[RoundVerdict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seq: ab.Sequential | None = None
    margins: dict[ab.Key, float] = field(default_factory=dict)
    pairs: int = 0
    elapsed_s: float | None = 0.0
    """Wall time of the rounds; None when re-decided from files (``replay``)."""
    outcome: str = "undecided"
    why: str = ""
    infra: bool = False
    """The loop ended on a round the lab failed to measure (outcome "incomplete")."""

    def _ref(self, side: Side, scenario: str) -> str:
        return str(side.scenarios / f"{scenario}.yml") if side.scenarios else scenario

    def _home(self, side: Side, n: int, flavor: str, scenario: str) -> Path:
        return round_home(self.args.out, side.name, n, flavor, scenario)

    def _round(self, side: Side, n: int, targets: list[tuple[str, str]]) -> str | None:
        """One round of one side; the outcome that ends the loop, if any."""
        for flavor, scenario in targets:
            out = self._home(side, n, flavor, scenario)
            kernel = KernelArtifacts.from_dir(side.kernels / flavor) if side.kernels else None
            self.console.rule(f"[bold]{side.name} ({side.role}) round {n}[/] {self.spec.name} "
                              f"{flavor or 'running kernel'} {scenario}")
            started = time.monotonic()
            try:
                m = measure(self.spec, kernel, self._ref(side, scenario),
                            self.args.round_duration, out, flavor=flavor or None,
                            scale=self.args.scale)
            except InfraError as exc:
                infrarecord.save(Infra(self.spec.name, flavor or RUNNING, scenario,
                                       Path(exc.path) if exc.path else out, exc.oneline()), out)
                return self._infra(side, n, flavor, scenario, exc.oneline())
            stop = self._record(side, n, flavor, m.result, m.result_path,
                                time.monotonic() - started)
            if stop:
                return stop
        return None

    def _infra(self, side: Side, n: int, flavor: str, scenario: str, why: str) -> str:
        self.infra = True
        self.why = f"{side.role} round {n} ({flavor or RUNNING}/{scenario}): infrastructure " \
                   f"failure: {why}"
        return "incomplete"

    def _record(self, side: Side, n: int, flavor: str, result: Result, path: Path,
                wall_s: float | None = None) -> str | None:
        """Judge one round's result against its budget and keep it for the A/B test."""
        key = (result.board.name, flavor_of(result), result.scenario)
        budget = self.thresholds.for_result(result)
        if budget is None:
            raise InputError(f"no budget matches {'/'.join(key)}", path=path)
        # min_samples is for the pooled rounds (rtgate.stats.ab), not for one short round.
        judged = evaluate(result, budget.model_copy(update={"min_samples": None}), path)
        self.verdicts.append(RoundVerdict(side, n, key, judged, wall_s))
        self.keys[(flavor, result.scenario)] = key
        self.budgets[key] = budget
        problems = "; ".join(c.detail for c in judged.checks if c.verdict is not Verdict.PASS)
        if judged.exit is Exit.INCOMPLETE:
            self.why = f"{side.role} round {n} ({'/'.join(key)}) is incomplete: {problems}"
            return "incomplete"
        if judged.exit is Exit.BUDGET:
            if side.role == "candidate":
                self.why = f"candidate round {n} ({'/'.join(key)}): {problems}"
                return "budget"
            self.notes.append(f"base round {n} ({'/'.join(key)}) is over its budget (only "
                              f"the candidate's rounds decide): {problems}")
        self.rounds[side.name].setdefault(key, []).append(ab.Round.of(result))
        return None

    def _plan(self, pair_s: float) -> ab.Sequential:
        """The A/B parameters of every key, and the rounds a side: --planned-rounds, else what
        the cap allows at the first pair's pace."""
        for key in self.budgets:
            stated = self.budgets[key].ab
            margin = self.args.min_effect_us or (stated.min_effect_us if stated else None)
            if margin is None:
                raise InputError(f"{'/'.join(key)}: no minimum effect (ab.min_effect_us in "
                                 f"the budget at {self.budgets[key].source}, or --min-effect-us)")
            self.margins[key] = margin
        alpha = self.args.alpha or min((b.ab.alpha for b in self.budgets.values() if b.ab),
                                       default=0.01)
        planned = self.args.planned_rounds or int(self.args.max_time // max(pair_s, 1e-9))
        return ab.Sequential(alpha, planned)

    def _targets(self) -> list[tuple[str, str]]:
        decided = self.seq.final if self.seq else {}
        return [t for t in self.targets if self.keys.get(t) not in decided]

    def _order(self) -> tuple[Side, Side]:
        a, b = self.sides
        return (a, b) if self.pairs % 2 else (b, a)

    def _look(self, pair_s: float) -> bool:
        """After a pair: plan (after the first), look, and say whether the loop is done."""
        if self.seq is None:
            self.seq = self._plan(pair_s)
        seq = self.seq
        if ab.MIN_ROUNDS <= self.pairs <= seq.planned:
            seq.look(self.pairs, [
                ab.Comparison(key, self.rounds["A"][key], self.rounds["B"][key],
                              self.margins[key], self.budgets[key].min_samples)
                for key in self.budgets if key not in seq.final])
        if seq.stopped(list(self.budgets)):
            worse = any(d.outcome is ab.Outcome.WORSE for d in seq.final.values())
            better = any(d.outcome is ab.Outcome.BETTER for d in seq.final.values())
            self.outcome = "worse" if worse else "better" if better else "same"
            return True
        return False

    def run(self) -> None:
        start = time.monotonic()
        while True:
            self.pairs += 1
            targets = self._targets()
            for side in self._order():
                stop = self._round(side, self.pairs, targets)
                if stop:
                    self.outcome = stop
                    self.elapsed_s = time.monotonic() - start
                    return
            done = self._look(time.monotonic() - start)
            self.elapsed_s = elapsed = time.monotonic() - start
            self._progress(elapsed)
            assert self.seq is not None
            seq = self.seq
            if done:
                return
            next_pair_ends = elapsed * (1 + 1 / self.pairs)
            if self.pairs >= seq.planned or seq.planned < ab.MIN_ROUNDS \
                    or next_pair_ends > self.args.max_time:
                self.why = (f"the time cap ({fmt(self.args.max_time)} s) was reached after "
                            f"{self.pairs} round(s) a side with some key still unknown")
                if seq.planned < ab.MIN_ROUNDS:
                    self.why = (f"the time cap ({fmt(self.args.max_time)} s) allows only "
                                f"{seq.planned} round(s) a side at this board's pace; the test "
                                f"needs {ab.MIN_ROUNDS}")
                return

    def replay(self) -> None:
        """Decide again from the rounds' results under --out, as ``run`` measured them: the
        same order, looks and plan (--planned-rounds; required), so the same decisions. What
        the measuring job wrote besides the results (ab.json, ab.md) is never read. Rounds past
        the point where the procedure stops are not looked at."""
        assert self.args.planned_rounds, "a replay needs the plan the gate used"
        self.elapsed_s = None
        while True:
            self.pairs += 1
            targets = self._targets()
            for side in self._order():
                for flavor, scenario in targets:
                    stop = self._load(side, self.pairs, flavor, scenario)
                    if stop:
                        self.outcome = stop
                        return
            if self._look(0.0):
                return
            assert self.seq is not None
            if self.pairs >= self.seq.planned or not any(
                    (self.args.out / s.name / f"round-{self.pairs + 1}").is_dir()
                    for s in self.sides):
                self.why = (f"the rounds end after {self.pairs} a side (the time cap) with some "
                            "key still unknown")
                return

    def _load(self, side: Side, n: int, flavor: str, scenario: str) -> str | None:
        home = self._home(side, n, flavor, scenario)
        path = home / "result.json"
        chain = [self.args.out / side.name, home.parents[1], home.parent, home, path]
        if any(p.is_symlink() for p in chain):
            raise InputError("a symbolic link where the gate writes a directory or a result: "
                             "refused", path=path)
        if not path.is_file():
            return self._infra(side, n, flavor, scenario, f"no {path.name} (the lab failed to "
                               "measure; infra.json and the logs are beside it)")
        result = load_result(path)
        claimed = (result.board.name, flavor_of(result), result.scenario)
        if claimed[0] != self.spec.name or claimed[2] != scenario or (flavor and
                                                                      claimed[1] != flavor):
            raise InputError(f"the result claims {'/'.join(claimed)}, where the gate writes "
                             f"{self.spec.name}/{flavor or RUNNING}/{scenario}: refused",
                             path=path)
        return self._record(side, n, flavor, result, path)

    def _progress(self, elapsed: float) -> None:
        """A bar per pair, printed between rounds: the bench runner draws its own while one
        measures, and two live displays on one terminal garble each other."""
        assert self.seq is not None
        so_far = ", ".join(f"{'/'.join(k)} {d.outcome.value}" for k in self.budgets
                           if (d := self.seq.latest(k)) is not None) or "no look yet"
        cap = float(self.args.max_time)
        with Progress(TextColumn("{task.description}"), BarColumn(), console=self.console,
                      auto_refresh=False) as bar:
            bar.add_task(f"round {self.pairs}/{self.seq.planned} a side · "
                         f"{elapsed:.0f}/{cap:.0f} s · {so_far}",
                         total=cap, completed=min(elapsed, cap))

    @property
    def exit(self) -> Exit:
        return _EXIT[self.outcome]

    def to_json(self) -> dict[str, Any]:
        seq = self.seq
        return {
            "schema": SCHEMA_ID, "board": self.spec.name, "outcome": self.outcome,
            "exit": int(self.exit), "why": self.why, "notes": self.notes,
            "sides": {s.name: {"role": s.role, "kernels": str(s.kernels) if s.kernels else None,
                               "scenarios": str(s.scenarios) if s.scenarios else None}
                      for s in self.sides},
            "round_duration_s": self.args.round_duration, "max_time_s": self.args.max_time,
            "elapsed_s": None if self.elapsed_s is None else round(self.elapsed_s, 1),
            "pairs": self.pairs,
            "alpha": seq.alpha if seq else None, "spending": ab.SPENDING,
            "planned_rounds": seq.planned if seq else None,
            "alpha_spent": seq.alpha_spent if seq else 0.0,
            "looks": [{"rounds": look.rounds, "alpha": look.alpha,
                       "decisions": {"/".join(d.key): d.outcome.value for d in look.decisions}}
                      for look in (seq.looks if seq else [])],
            "effect_reported": EFFECT_REPORTED,
            "decisions": [self._decision_json(key) for key in self.budgets],
            "rounds": [{"side": v.side.name, "round": v.round, "key": "/".join(v.key),
                        "verdict": v.evaluation.exit.name.lower(),
                        "wall_s": None if v.wall_s is None else round(v.wall_s, 1),
                        "result": str(v.evaluation.source)} for v in self.verdicts],
        }

    def _decision_json(self, key: ab.Key) -> dict[str, Any]:
        d = self.seq.latest(key) if self.seq else None
        budget = self.budgets[key]
        return {
            "board": key[0], "flavor": key[1], "scenario": key[2],
            "outcome": d.outcome.value if d else "unknown",
            "final": bool(self.seq and key in self.seq.final),
            "rounds": {"A": len(self.rounds["A"].get(key, [])),
                       "B": len(self.rounds["B"].get(key, []))},
            "look_alpha": d.alpha if d else None,
            "min_effect_us": self.margins.get(key),
            "effects": [{"metric": e.metric, "delta_us": e.estimate_us, "low_us": e.low_us,
                         "high_us": e.high_us, "confidence": e.confidence,
                         "base_mean_us": e.a_mean_us, "candidate_mean_us": e.b_mean_us}
                        for e in (d.effects if d else [])],
            "headline": d.headline.metric if d and d.headline else None,
            "rejected": [t.name for t in d.tests if t.rejected] if d else [],
            "reasons": d.reasons if d else [],
            "budget": {"key": budget.label, "source": budget.source,
                       "min_samples_pooled": budget.min_samples},
        }

    def markdown(self, heading: str = "## rtgate ab") -> str:
        seq = self.seq
        said = _INFRA if self.outcome == "incomplete" and self.infra else _HEADLINE[self.outcome]
        lines = [f"{heading}: {said} (exit {int(self.exit)})", ""]
        if self.why:
            lines += [f"{code(self.why)}", ""]
        if not self.spec.kernel_board:
            b = self.sides[1].scenarios
            lines += [f"> ⚠️ {code(self.spec.name)} measures its running kernel: A and B are the "
                      "same kernel" + (f", B with the scenarios of {code(str(b))}" if b else
                                       " (an A/A check)")
                      + ". Not a comparison of two kernels.", ""]
        if any(v.evaluation.result.board.virtual for v in self.verdicts):
            lines += [f"> ⚠️ {code(self.spec.name)} is a virtual board — not a real-time claim.",
                      ""]
        spent = f"{seq.alpha_spent:.3g} of {seq.alpha:g}" if seq else "0"
        took = ("re-decided from the rounds' results" if self.elapsed_s is None
                else f"{self.elapsed_s:.0f} s")
        if walls := [v.wall_s for v in self.verdicts if v.wall_s is not None]:
            # What a round costs beyond its measurement (boots, reboots) is the board's pace.
            took += (f"; board time a round: median {statistics.median(walls):.0f} s, "
                     f"{min(walls):.0f}–{max(walls):.0f} s")
        planned = seq.planned if seq else "—"
        lines += [f"Rounds interleaved A B B A …: {self.pairs} a side of "
                  f"{fmt(self.args.round_duration)} s ({took}; cap {fmt(self.args.max_time)} s, "
                  f"{planned} planned); {len(seq.looks) if seq else 0} look(s), "
                  f"false-alarm rate spent {spent} (Pocock-type alpha spending). Effect: "
                  f"{EFFECT_REPORTED}.", "",
                  "| board | flavor | scenario | outcome | effect (µs, interval) | rounds A/B "
                  "| budget | candidate rounds within budget |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        for key in self.budgets:
            d = seq.latest(key) if seq else None
            e = d.headline if d else None
            effect = (f"{e.metric} {e.estimate_us:+.1f} [{e.low_us:+.1f}, {e.high_us:+.1f}] at "
                      f"{e.confidence:.4g}" if e else "—")
            mine = [v for v in self.verdicts if v.key == key and v.side.role == "candidate"]
            within = sum(v.evaluation.exit is Exit.OK for v in mine)
            budget = self.budgets[key]
            text = " · ".join(f"{n} ≤ {fmt(v)}" for n, v in (
                ("max", budget.max_us), ("avg", budget.avg_us), ("p99", budget.p99_us),
                ("p99.99", budget.p9999_us)) if v is not None) + " µs"
            if budget.min_samples:
                text += f"; ≥ {budget.min_samples} samples pooled"
            margin = self.margins.get(key)
            if margin is not None:
                text += f"; same within ± {fmt(margin)} µs"
            lines.append("| " + " | ".join([
                *(cell(k) for k in key), f"**{d.outcome.value if d else 'unknown'}**",
                effect, f"{len(self.rounds['A'].get(key, []))}/"
                f"{len(self.rounds['B'].get(key, []))}", cell(text),
                f"{within}/{len(mine)}"]) + " |")
        lines.append("")
        for key in self.budgets:
            d = seq.latest(key) if seq else None
            lines += [f"- {cell('/'.join(key))}: {code(r)}" for r in (d.reasons if d else [])]
        lines += [f"- {code(n)}" for n in self.notes]
        return "\n".join(lines).rstrip("\n") + "\n"


def _sides(spec: BoardSpec, args: argparse.Namespace) -> tuple[Side, Side]:
    if spec.kernel_board and (args.base is None or args.cand is None):
        raise InputError(f"board {spec.name!r} boots the kernels it measures: give --base and "
                         "--cand (DIR/<flavor>/ from `rtgate kernel build --out`)")
    if not spec.kernel_board and (args.base or args.cand):
        raise InputError(f"board {spec.name!r} measures its running kernel: both sides are it; "
                         "give no --base/--cand (--cand-scenario-dir plants a difference)")
    return (Side("A", "base", args.base, None),
            Side("B", "candidate", args.cand, args.cand_scenario_dir))


def handler(args: argparse.Namespace) -> int:
    console = Console(stderr=True)
    spec = load_board(args.board)
    sides = _sides(spec, args)
    flavors = flavors_of(spec, args.flavors)
    scenarios = scenarios_of(spec, args.scenarios)
    thresholds = load_thresholds(args.thresholds)
    # Everything a round needs is checked before the first boot.
    for side in sides:
        for flavor in flavors if side.kernels else []:
            KernelArtifacts.from_dir(side.kernels / flavor)
        for scenario in scenarios if side.scenarios else []:
            ref = str(side.scenarios / f"{scenario}.yml")
            named = load_scenario(ref)[0].name
            if named != scenario:
                raise InputError(f"names scenario {named!r}, not {scenario!r}: its rounds would "
                                 "not pair with the base's", path=ref)
    gate = Gate(spec, sides, [(f, s) for f in flavors for s in scenarios], thresholds, args,
                console)
    gate.run()
    args.out.mkdir(parents=True, exist_ok=True)
    write_atomic(args.out / "ab.json", json.dumps(gate.to_json(), indent=2) + "\n")
    text = gate.markdown()
    write_atomic(args.out / "ab.md", text)
    console.rule("[bold]A/B")
    print(text)
    print(f"ab.json: {args.out / 'ab.json'}\nab.md: {args.out / 'ab.md'}")
    return int(gate.exit)



def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser(
        "ab", help="base kernel against candidate on one board, interleaved rounds until decided",
        description="The A/B gate: rounds of the base kernel (A) and the candidate (B) on one "
                    "board, interleaved, until same, worse or better is decided or time is up.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--board", required=True, help="board name from bench/boards/")
    p.add_argument("--base", type=Path, metavar="KERNELS_A",
                   help="the base kernels: DIR/<flavor>/ from `rtgate kernel build --out`")
    p.add_argument("--cand", type=Path, metavar="KERNELS_B", help="the candidate kernels, alike")
    p.add_argument("--cand-scenario-dir", type=Path, metavar="DIR",
                   help="B runs DIR/<scenario>.yml instead of bench/scenarios/ (same name; "
                        "e.g. an added load to plant a regression)")
    p.add_argument("--flavors", type=comma_list, help="comma-separated (default for kernel boards: "
                   "stock,rt)")
    p.add_argument("--scenarios", type=comma_list, help="comma-separated; `board`: the board's own")
    p.add_argument("--max-time", type=duration, required=True,
                   help="time cap for all rounds, e.g. 10m: undecided after it (exit 4)")
    p.add_argument("--out", type=Path, required=True, help="output directory")
    add_ab_options(
        p, min_rounds=ab.MIN_ROUNDS, round_help="measurement per round, e.g. 20s",
        planned_help="rounds a side the alpha spending plans for, fixed before the first "
                     "round (the gate's, so the publisher can replay the looks); default: what "
                     "--max-time allows at the first pair's pace",
        min_effect_help="minimum effect worth reporting, every key (overrides "
                        "ab.min_effect_us)",
        alpha_help="false-alarm rate of the whole run (overrides ab.alpha; default 0.01)")
    p.set_defaults(func=handler)
