"""A bisect resolved before anything runs: the board, the series and its ends, the flavor's
fragment, every scenario and every step's A/B plan (budgets, margins, the planned rounds),
every problem found at once (exit 2, no kernel built, no step measured), printable as YAML
without a device (``--dry-run``)."""

from __future__ import annotations

from dataclasses import dataclass

import yaml
from rich.console import Console

from rtgate import paths
from rtgate.ab import plan as abplan
from rtgate.ab.plan import RoundPlan
from rtgate.bisect.measure import step_gate
from rtgate.bisect.settings import BisectSettings
from rtgate.board.spec import BoardSpec, kind_of, load_target_board, scenarios_of
from rtgate.errors import InputError, Problems
from rtgate.gate.thresholds import Thresholds, load_thresholds
from rtgate.harness.scenario import load_scenario
from rtgate.kernel.cache import trust_domain
from rtgate.kernel.patches import SeriesPatch, read_series
from rtgate.kernel.plan import flavor_fragment


@dataclass(frozen=True)
class BisectPlan:
    spec: BoardSpec
    series: list[SeriesPatch]
    good: int
    bad: int
    scenarios: list[str]
    thresholds: Thresholds
    trust: str
    """The kernel cache's trust domain the variants build in."""
    steps: RoundPlan | None
    """Every step's A/B plan (the same for each step); None for a replay, which re-makes each
    step's plan from its rounds' results."""

    def describe(self, s: BisectSettings) -> str:
        """The plan as YAML: what would be built and measured (``--dry-run``)."""
        return yaml.safe_dump({
            "board": self.spec.name, "kind": kind_of(self.spec), "driver": self.spec.driver,
            "kernel_target": self.spec.kernel_target, "flavor": s.flavor,
            "series": paths.shown(s.series), "patches": [p.name for p in self.series],
            "good": self.good, "bad": self.bad,
            "bad_from": "--bad" if s.bad is not None else "the whole series",
            "scenarios": self.scenarios, "repeats": s.repeats,
            "round_duration_s": s.round_duration, "step_time_s": s.max_time,
            "builds": {"variants": "a prefix of the series, or the series without the "
                                   "culprit (the revert)",
                       "target": self.spec.kernel_target, "runtime": s.runtime,
                       "cache_trust": self.trust},
            "replay": None if s.replay is None else paths.shown(s.replay),
            "step_plan": (abplan.summary(self.steps) if self.steps is not None else
                          "re-made at each step from its rounds' results (--replay)")},
            sort_keys=False, allow_unicode=True)


def validate(s: BisectSettings) -> BisectPlan:
    """Everything a bisect needs, resolved before its first build; every problem found is
    reported (rtgate.errors.raise_found, exit 2)."""
    spec = load_target_board(s.board, "nothing to build, nothing to bisect (use a kernel board "
                                      "such as qemu-arm64)")  # nothing else resolves without it
    problems = Problems()

    series = problems.attempt(lambda: read_series(s.series))
    n = len(series) if series is not None else 0
    good, bad = s.good, n if s.bad is None else s.bad
    if series is not None and not 0 <= good < bad <= n:
        problems.add(InputError(f"--good {good} --bad {bad}: need 0 <= good < bad <= {n} "
                                "(patches in the series)", path=s.series))
    if s.replay is not None and s.planned_rounds is None:
        problems.add(InputError("--replay needs --planned-rounds, as the bisect had it: "
                                "without a plan fixed before the first round its looks "
                                "cannot be made again"))
    thresholds = problems.attempt(lambda: load_thresholds(s.thresholds))
    trust = problems.attempt(lambda: trust_domain(s.trust))
    scenarios = scenarios_of(spec, s.scenarios)
    steps = None
    if s.replay is None:
        fragment = problems.attempt(lambda: flavor_fragment(s.flavor))
        loaded = [problems.attempt(lambda sc=sc: load_scenario(sc)) for sc in scenarios]
        if thresholds is not None and fragment is not None and all(loaded):
            # Each scenario's keys on their own first, so that every missing budget or margin
            # is named; then the whole step, whose cap holds every scenario's rounds.
            for scenario in scenarios:
                problems.attempt(lambda sc=scenario: _step_plan(spec, s, [sc], thresholds))
            if not problems:
                steps = problems.attempt(lambda: _step_plan(spec, s, scenarios, thresholds))
    problems.raise_found("any build or boot")
    assert series is not None and thresholds is not None and trust is not None
    return BisectPlan(spec, series, good, bad, scenarios, thresholds, trust, steps)


def _step_plan(spec: BoardSpec, s: BisectSettings, scenarios: list[str],
               thresholds: Thresholds) -> RoundPlan:
    return step_gate(spec, s.flavor, scenarios, thresholds, s, s.out, (None, None),
                     Console(stderr=True, quiet=True)).resolve()
