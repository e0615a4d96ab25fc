"""The A/B plan, resolved before the first round: each key's budget, margin and primary metric,
the false-alarm rate, the rounds a side the alpha spending plans for, and what they promise.

Everything a run could refuse is found here (exit 2), never after a board minute: a key with no
budget or no minimum effect, A and B measuring with different tools, a cap that cannot hold the
rounds the first look needs. The board kind's calibration record, when there is one, names the
primary metrics, the planned rounds and the round-to-round spread, from which the plan states
P(same | unchanged) and the time to a verdict, and says when *same* is out of reach."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from rtgate import calibration, paths, tools
from rtgate.ab.settings import RoundSettings
from rtgate.board.spec import BoardSpec, kind_of
from rtgate.calibration import CalibrationRecord, KeyCalibration
from rtgate.errors import InputError
from rtgate.gate.thresholds import Budget, Thresholds
from rtgate.layout import RUNNING
from rtgate.stats import ab, oc

# Board time a round costs beyond its measurement and warm-up when no calibration record says
# (deploy, boot, collect; a reboot into the kernel and back on an SSH board): what the cap is
# divided by when no planned rounds are given. A slower board reaches the cap sooner and leaves
# the rest of alpha unspent (conservative); the record's measured pace replaces it.
OVERHEAD_S = {"local": 1.0, "qemu": 15.0, "ssh": 90.0, "lava": 180.0}
RUNNING_FLAVORS = ("stock", "rt")
# P(same | unchanged) below this: the plan says same is out of reach at the margin and cap.
REACHABLE = 0.5
# The round-to-round CVs a plan without a record shows P(same | unchanged) at.
UNMEASURED_CVS = (0.02, 0.05, 0.10, 0.20)
# What the suggested margin or rounds aim for.
SAME_GOAL_Z = 1.645  # about 90 % of unchanged kernels decided same


@dataclass(frozen=True)
class KeyPlan:
    key: ab.Key
    budget: Budget
    margin: ab.Margin
    primary: str | None
    """The record's metric; None: the first of ``ab.METRICS`` every round has."""
    calibration: KeyCalibration | None
    measured_us: tuple[float | None, float | None] = (None, None)
    """What side A's and side B's rounds measure to (the target's ``resolutions``); None: known
    only from the rounds (a replay)."""

    @property
    def stall_threshold_us(self) -> float | None:
        return self.calibration.stall_threshold_us if self.calibration else None

    @property
    def floored_to_us(self) -> float | None:
        """The record's resolution the rounds are floored to before they are judged, when the
        sides measure finer than its bank (ns rounds, a bank in µs); None: judged as measured.
        A replay, which knows no side's resolution before its rounds, floors them all the same
        (``rtgate.ab.loop.ABRun._record``)."""
        cal = self.calibration
        if cal is not None and any(m is not None and m < cal.resolution_us
                                   for m in self.measured_us):
            return cal.resolution_us
        return None


@dataclass(frozen=True)
class RoundTarget:
    """One (flavor label, scenario) the run measures, as the sides' scenario files say."""

    flavor: str
    """The kernels' flavor directory; "" for a board that measures its running kernel."""
    scenario: str
    tools: tuple[str, str]
    """The tool side A's and side B's scenario measures with."""
    warmup_s: float = 0.0
    """The longer of the sides' warm-ups (seconds the loads run before measuring)."""
    resolutions: tuple[float | None, float | None] = (None, None)
    """What side A's and side B's scenario measure to (``MeasuringTool.resolution_us``); None:
    known only from the rounds (a replay reads results only)."""


@dataclass(frozen=True)
class RoundPlan:
    keys: dict[ab.Key, KeyPlan]
    by_target: dict[tuple[str, str], list[ab.Key]]
    """Each target's possible keys (one, or stock and rt for a remote running kernel)."""
    alpha: float
    planned: int
    planned_from: str
    round_s: float
    """Board time a round of one target is taken to cost."""
    max_time: float

    def sequential(self) -> ab.Sequential:
        """The looks; each key's standard error floored at its record's bank log-sd."""
        return ab.Sequential(self.alpha, self.planned, keys=len(self.by_target),
                             floors={k: p.calibration.floor_sd for k, p in self.keys.items()
                                     if p.calibration is not None})

    @property
    def margins(self) -> dict[ab.Key, ab.Margin]:
        return {k: p.margin for k, p in self.keys.items()}

    def describe(self) -> list[str]:
        """The plan as lines a person reads before the first round."""
        seq = self.sequential()
        lines = [f"plan: {self.planned} rounds a side planned ({self.planned_from}), alpha "
                 f"{self.alpha:g} over {seq.keys} key(s) ({seq.key_alpha:.3g} each), looks "
                 f"from {ab.MIN_ROUNDS} rounds a side, cap {self.max_time:g} s"]
        bound = seq.boundary(self.planned)
        per_pair = 2 * len(self.by_target) * self.round_s
        for key, p in self.keys.items():
            stall = (f"{p.stall_threshold_us:g} µs (the record's)" if p.stall_threshold_us
                     else f"A's first {ab.MIN_ROUNDS} rounds' block-max q99, then fixed")
            head = (f"{'/'.join(key)}: budget {p.budget.label} ({p.budget.source}), same "
                    f"within {p.margin}, primary {p.primary or 'the rule default'}, stall "
                    f"threshold {stall}")
            lines.append(head)
            if p.calibration is None:
                lines.append("  no floor under the standard error (no calibration bank): the "
                             "false-alarm rate holds for one boot mode, not for two "
                             "(docs/statistics.md)")
                what_if = ", ".join(
                    f"CV {100 * cv:g} % {oc.normal(oc.log_sd_of_cv(cv), 0.0, self.planned, seq.design(key), p.margin.relative).same:.2f}"  # noqa: E501
                    for cv in UNMEASURED_CVS)
                lines.append("  no calibration record for this key: its CV is unmeasured; "
                             f"P(same | unchanged) would be, at a CV of {what_if} (normal logs)")
                continue
            sd = p.calibration.floor_sd
            c = oc.normal(sd, 0.0, self.planned, seq.design(key), p.margin.relative)
            lines.append(f"  at the record's CV {p.calibration.cv:.2f} (log-sd {sd:.3g}, its bank "
                         f"in {calibration.resolution_words(p.calibration.resolution_us)}; normal "
                         f"logs, {c.trials} simulated runs): P(same | unchanged) {c.same:.2f}"
                         f"{self._same_bound(key, p.calibration, seq)}, undecided "
                         f"{c.unknown:.2f}, about {c.mean_rounds:.1f} rounds a side to a "
                         f"verdict (~{c.mean_rounds * per_pair / 60:.0f} board minutes)")
            lines.extend(_bank_says(p.calibration))
            if p.floored_to_us is not None:
                lines.append(f"  {judged_at(p.calibration)}")
            if c.same < REACHABLE:
                need = oc.rounds_for(sd, p.margin.relative, bound, SAME_GOAL_Z)
                wider = oc.margin_for_same(sd, self.planned, bound, SAME_GOAL_Z)
                lines.append(
                    f"  same is out of reach: at this CV an unchanged kernel is decided same in "
                    f"{100 * c.same:.0f} % of runs within the cap; n ≈ 2((c + z)·s / ln(1 + m))² "
                    f"= {need:.0f} rounds a side (cap ≈ {math.ceil(need) * per_pair:.0f} s) "
                    f"at this margin, or a margin of about {100 * wider:.0f} % at "
                    f"{self.planned} rounds, would give about 90 %")
        return lines


    def _same_bound(self, key: ab.Key, cal: KeyCalibration, seq: ab.Sequential) -> str:
        """P(same | unchanged)'s lower bound when the spread is the upper confidence bound of
        the record's log-sd: a bank of a few dozen rounds knows its spread only so well."""
        if cal.rounds_banked < 2:
            return " (one banked round: no bound)"
        high = oc.log_sd_upper(cal.floor_sd, cal.rounds_banked)
        b = oc.bounds(high, cal.floor_sd, self.planned, seq.tail_alpha,
                      self.keys[key].margin.relative, 0.2)
        return (f" (at least {b.same_low:.2f} at the log-sd's {100 * oc.CONFIDENCE:g} % upper "
                f"bound {high:.3g} over the bank's {cal.rounds_banked} rounds)")


def judged_at(cal: KeyCalibration) -> str:
    """The one line saying that a key's finer rounds are floored to its record's resolution."""
    return (f"judged at the record's {cal.resolution_us:g} µs: its bank was measured in "
            f"{calibration.resolution_words(cal.resolution_us)}, so each round's ns latencies "
            "are floored to it before judging (as the tool measuring in µs reports them; "
            "docs/statistics.md, \"A record's resolution\")")


def _bank_says(cal: KeyCalibration) -> list[str]:
    """What the record's bank cannot show, in the record's own words: a plan read from a small
    or old bank must not look calibrated beyond it."""
    if cal.bounds is None:
        return [f"  the record's rates are points of an older rule's replay of "
                f"{cal.rounds_banked} rounds, without bounds (a record before 2026-11-28): "
                "they show nothing about this rule's false-alarm rate or power"]
    if cal.rounds_needed is None and cal.needed_note:
        return [f"  the record's bank cannot show a plan: {cal.needed_note}"]
    return []


def primary_of(record: CalibrationRecord | None, key: ab.Key) -> str | None:
    """The record's primary metric for the key's flavor and scenario; None: the rule's default."""
    cal = key_calibration(record, key)
    return cal.primary_metric if cal else None


def key_calibration(record: CalibrationRecord | None, key: ab.Key) -> KeyCalibration | None:
    if record is None:
        return None
    return next((k for k in record.keys if (k.flavor, k.scenario) == key[1:]), None)


def resolve(spec: BoardSpec, targets: Sequence[RoundTarget], thresholds: Thresholds,
            settings: RoundSettings) -> RoundPlan:
    """The whole plan, or an InputError naming what is missing, before any round."""
    kind = kind_of(spec)
    record = settings.calibration
    keys: dict[ab.Key, KeyPlan] = {}
    by_target: dict[tuple[str, str], list[ab.Key]] = {}
    for t in targets:
        label = f"{spec.name}/{t.flavor or RUNNING}/{t.scenario}"
        if t.tools[0] != t.tools[1]:
            raise InputError(f"{label}: A measures with {t.tools[0]}, B with {t.tools[1]}: two "
                             "ways of measuring, not a kernel's effect")
        # A running kernel is judged as its result says (stock or rt): both must resolve, since
        # a replay may read rounds measured on another machine.
        for flavor in (t.flavor,) if t.flavor else RUNNING_FLAVORS:
            key = (spec.name, flavor, t.scenario)
            budget = thresholds.select(kind, flavor, t.scenario, "none", t.tools[0])
            if budget is None:
                raise InputError(f"no budget matches {'/'.join(key)} ({t.tools[0]})")
            pct = settings.min_effect_pct or (budget.ab.min_effect_pct if budget.ab else None)
            if pct is None:
                raise InputError(f"{'/'.join(key)}: no minimum effect (ab.min_effect_pct in "
                                 f"the budget at {budget.source}, or --min-effect-pct)")
            tool = tools.get(t.tools[0])
            # A tool measuring no wake-up latency is compared on its own primary metric.
            own = None if tool.measures == "wake-up latency" else tool.primary
            cal = key_calibration(record, key)
            if cal is not None and record is not None:
                # The record calibrates rounds at its bank's resolution, or finer ones floored
                # to it; coarser rounds are a usage error of the lab's data, found before the
                # first round (docs/statistics.md).
                for side, measured in zip("AB", t.resolutions, strict=True):
                    if measured is not None:
                        calibration.check_resolution(cal, measured, f"{label}, side {side}",
                                                     record.kind)
            keys[key] = KeyPlan(key, budget, ab.Margin(pct / 100),
                                primary_of(record, key) or own, cal, t.resolutions)
            by_target.setdefault((t.flavor, t.scenario), []).append(key)
        a_res, b_res = t.resolutions
        if a_res is not None and b_res is not None and a_res != b_res:
            # µs values are ns cut down by up to 1 µs: on a single-digit tail, the margin's size.
            raise InputError(f"{label}: A measures in {calibration.resolution_words(a_res)}, "
                             f"B in {calibration.resolution_words(b_res)} (the scenarios' "
                             "nsecs): two ways of measuring, not a kernel's effect")
    budgets = [p.budget for p in keys.values()]
    alpha = settings.alpha or min((b.ab.alpha for b in budgets if b.ab), default=0.01)
    round_s, overhead_from = _pace(spec, targets, settings)
    fits = int(settings.max_time // (2 * len(targets) * round_s))
    if fits < ab.MIN_ROUNDS:
        raise InputError(f"the cap ({settings.max_time:g} s) allows {fits} round(s) a side "
                         f"at about {round_s:.0f} s a round of each of {len(targets)} target(s) "
                         f"({overhead_from}); the first look needs {ab.MIN_ROUNDS}: raise "
                         "--max-time")
    if settings.planned_rounds:
        planned, source = settings.planned_rounds, "--planned-rounds"
    elif record is not None:
        planned, source = record.plan.rounds, f"the calibration record of {record.kind}"
    else:
        planned, source = fits, f"what the cap allows at about {round_s:.0f} s a round"
    return RoundPlan(keys, by_target, alpha, planned, source, round_s, settings.max_time)


def _pace(spec: BoardSpec, targets: Sequence[RoundTarget],
          settings: RoundSettings) -> tuple[float, str]:
    """Board time a round of one target is taken to cost (the measurement, the warm-up and the
    board's overhead), and where the overhead comes from."""
    record = settings.calibration
    if record is not None:
        # The record's cap is 2 × rounds × (its rounds' board time) × 1.25 over its keys.
        wall = record.plan.max_time_s / (2.5 * record.plan.rounds * max(len(record.keys), 1))
        overhead = max(wall - record.plan.round_s, 0.0)
        source = f"{overhead:.0f} s a round beyond the measurement, from the record"
    else:
        overhead = OVERHEAD_S[spec.driver]
        source = f"{overhead:g} s a round assumed for a {spec.driver} board"
    warmup = max((t.warmup_s for t in targets), default=0.0)
    return settings.round_duration + warmup + overhead, source


def summary(plan: RoundPlan) -> dict[str, object]:
    """The plan as plain data for a printed plan (``--dry-run``): the rounds, the false-alarm
    rate and every key's budget (file:line, relative to the data root), margin and metric."""
    return {
        "planned_rounds": plan.planned, "planned_from": plan.planned_from,
        "alpha": plan.alpha, "cap_s": plan.max_time, "round_s": round(plan.round_s, 1),
        "keys": [{"key": "/".join(key), "budget": p.budget.label,
                  "source": paths.shown_source(p.budget.source), "same_within": str(p.margin),
                  "primary": p.primary or "the rule's default",
                  **({"judged_at": judged_at(p.calibration)}
                     if p.floored_to_us is not None and p.calibration is not None else {})}
                 for key, p in plan.keys.items()]}

