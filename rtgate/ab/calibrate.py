"""`rtgate calibrate`: the A/B gate's error rates measured on the board it judges.

An A/A BANK is recorded first: real rounds of main's kernel as the gate runs them (the A/B
loop's own rounds, ``ABRun.pair``: deploy, boot, run, collect, interleaved A B B A …, both sides
the same kernel; on ``local`` the running kernel, a check of the procedure rather than of a
board). The bank is then REPLAYED through the gate's exact decision code
(``rtgate.stats.ab.Sequential``, look by look, stopping as the loop stops) on resampled splits:

- A/A: two sides drawn from the bank (without replacement while it lasts): *worse* or *better*
  is a false alarm, *same* within the cap is what a maintainer hopes for;
- planted effects on side B's draws: every latency of the round scaled by +10/20/50 %, or rare
  stalls (a few blocks and samples at a few ms): *worse* is a detection.

Resamples of one bank are not independent trials: the interval of every replayed rate is
Clopper-Pearson on the bank's INDEPENDENT units, the disjoint trials the bank holds (its rounds
over the rounds a trial uses), with the resampled rate as the point: a bank of 24 rounds says
little, and a bank smaller than one trial says nothing on its own, and says so.

What the record CLAIMS rests instead on the bank's spread with its interval (issue 36): the
rule's operating characteristics simulated at the one-sided upper confidence bound of the
bank's log-sd (chi-square on its rounds; ``rtgate.stats.oc.search``), the bank's own replay as a
check of that model (modes, tails): the record's false-alarm rate is an upper bound, its power a
lower one. The rounds a side the plan asks for are the fewest whose bounds meet a false-alarm
rate ≤ 1 % and power ≥ 90 % at +20 %, searched from n ≈ 2((c + z)·s / ln(1 + m))², or "this
bank cannot show it: record N more rounds" (the plan then keeps its cap).

Each key's primary metric is, among those whose replayed A/A false-alarm rate holds alpha, the one
with the most power at +20 % in these replays (registered in the record before any pull request
is measured).
"""

from __future__ import annotations

import math
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.progress import Progress
from scipy import stats

from rtgate import calibration, paths
from rtgate.ab.loop import ABRun
from rtgate.ab.settings import ABSettings
from rtgate.board.spec import kind_of
from rtgate.calibration import Bounds, CalibrationRecord, GatePlan, KeyCalibration, Power, Rate
from rtgate.errors import InputError
from rtgate.gate.thresholds import Thresholds, flavor_of
from rtgate.jsonfile import write_atomic
from rtgate.layout import ROUND_RESULTS
from rtgate.outcome import Comparison
from rtgate.result import Result, load_result
from rtgate.stats import ab, oc, stalls
from rtgate.tools.rounds import round_of

EFFECTS = {"+10%": 0.10, "+20%": 0.20, "+50%": 0.50}
STALL_US = 3000.0
STALL_EVERY = (10, 20)
STALLS = {f"stalls {STALL_US / 1000:g}ms 1/{every} blocks": every for every in STALL_EVERY}
"""Rare stalls: one block in ``every`` of each B round holds a sample at ``STALL_US`` (its
maximum raised to it), the regression the stall test is for."""
TARGET_ALPHA = 0.01
TARGET_POWER = 0.9
POWER_AT = "+20%"
# The default plan's rounds a side and the replays the primary metric is chosen with.
DEFAULT_PLANNED = 6
SEARCH_REPLAYS = 300
SEED = 20261125
CONFIDENCE = 0.95


@dataclass(frozen=True)
class CalibrateSettings:
    ab: ABSettings
    """The bank's rounds are the A/B loop's, both sides main's kernel (``ab.base``)."""
    pairs: int
    """Rounds a side to record (0: replay an existing bank in ``ab.rounds.out``)."""
    replays: int
    record: Path | None
    """Where the record goes; None: ``bench/calibration/<kind>.json``."""
    dry_run: bool = False
    """Print the resolved plan as YAML and stop: nothing measured, nothing written."""


@dataclass
class Bank:
    """A/A rounds per key, in the order measured, the board time a round took, each key's
    margin as the gate's plan takes it from the budgets, and what the results say of the
    kernel and the board."""

    rounds: dict[ab.Key, list[ab.Round]]
    wall_s: dict[ab.Key, list[float]]
    margins: dict[ab.Key, ab.Margin]
    round_s: int
    kernel: str
    virtual: bool
    measured_at: datetime | None = None
    """When the bank's last round ended, as its results say (None: they do not say)."""
    resolutions: dict[ab.Key, float] = field(default_factory=dict)
    """Each key's rounds' resolution (one per key: ``read_bank`` refuses a mix); a key not
    named: whole µs."""

    @cached_property
    def stall_limits(self) -> dict[ab.Key, float]:
        """Each key's stall threshold as the record states it (its bank's block-max q99)."""
        return {k: limit for k, rs in self.rounds.items()
                if (limit := stalls.threshold([r.blocks for r in rs])) is not None}


def record_bank(run: ABRun, pairs: int, console: Console) -> list[str]:
    """``pairs`` rounds a side of the same kernel, the loop's own rounds. A pair cut short by a
    round the gate could not use (incomplete, over budget, the lab failing) is said and the
    bank goes on: such rounds are left out of the replay, and their count is part of the
    board's story (returned)."""
    lost = []
    for _ in range(pairs):
        stop = run.pair()
        if stop is not None:
            lost.append(f"{stop.value}: {run.why}")
            console.print(f"[bold]round not banked[/]: {lost[-1]}")
            run.why, run.infra = "", False
    return lost


def read_bank(out: Path, round_s: int, thresholds: Thresholds,
              min_effect_pct: float | None, *, boards: Path) -> Bank:
    """Every complete round under OUT/{A,B}/round-N/<flavor>/<scenario>/ (both sides: one
    kernel), keyed as the gate keys them."""
    rounds: dict[ab.Key, list[ab.Round]] = {}
    walls: dict[ab.Key, list[float]] = {}
    margins: dict[ab.Key, ab.Margin] = {}
    kernels = set()
    resolutions: dict[ab.Key, float] = {}
    virtual = False
    last: float | None = None
    loaded = [(path, load_result(path)) for path in out.glob(ROUND_RESULTS)]
    # In the order measured: the results' own end times (a copied or unpacked bank keeps them,
    # where file times do not), else the files' modification times.
    loaded.sort(key=lambda pr: (_ended(pr[1]) or pr[0].stat().st_mtime))
    for path, result in loaded:
        if result.status != "complete":
            continue
        key = (result.board.name, flavor_of(result), result.scenario)
        budget = thresholds.for_result(result, boards)
        pct = min_effect_pct or (budget.ab.min_effect_pct if budget and budget.ab else None)
        if pct is None:
            raise InputError(f"{'/'.join(key)}: no minimum effect (ab.min_effect_pct in its "
                             "budget, or --min-effect-pct)", path=path)
        margins[key] = ab.Margin(pct / 100)
        # One resolution a key: a record holds for rounds at its bank's, and a bank of both
        # would describe neither (the µs rounds of before -N beside the ns rounds of after).
        if resolutions.setdefault(key, result.resolution_us) != result.resolution_us:
            raise InputError(f"{'/'.join(key)}: the bank mixes rounds in whole µs and in ns "
                             "(cyclictest -N); bank one resolution in a directory of its own",
                             path=path)
        virtual |= result.board.virtual
        rounds.setdefault(key, []).append(round_of(result))
        # Board time of the round (deploy, boot, run, collect): the bank's rounds ran one after
        # another, so it is the time since the previous round ended.
        written = _ended(result) or path.stat().st_mtime
        if last is not None and written > last:
            walls.setdefault(key, []).append(written - last)
        last = written
        kernels.add(result.kernel.release)
    if not rounds:
        raise InputError("no complete A/A round to calibrate from", path=out)
    ends = [e for _, r in loaded if (e := _ended(r)) is not None]
    measured_at = datetime.fromtimestamp(max(ends), UTC) if ends else None
    return Bank(rounds, walls, margins, round_s, ", ".join(sorted(k for k in kernels if k)),
                virtual, measured_at, resolutions)


def _ended(result: Result) -> float | None:
    """The result's end of measurement (POSIX seconds), None when it does not say."""
    try:
        return datetime.fromisoformat(result.end).timestamp() if result.end else None
    except ValueError:
        return None


def scaled(r: ab.Round, factor: float) -> ab.Round:
    """The round with every latency ``factor`` times larger (a planted relative shift), kept to
    the round's resolution: whole µs, or whole ns for -N rounds (whole µs would erase a +10 %
    shift of a 5 µs tail's sub-µs part)."""
    digits = round(-math.log10(r.resolution_us))
    return replace(r, values_us=np.round(r.values_us * factor, digits),
                   limit_us=None if r.limit_us is None else math.ceil(r.limit_us * factor),
                   blocks={t: np.round(b * factor, digits) for t, b in r.blocks.items()},
                   summaries={})


def stalled(r: ab.Round, rng: np.random.Generator, every: int) -> ab.Round:
    """The round with one sample at ``STALL_US`` in one block of ``every`` (at least one)."""
    blocks = {t: b.copy() for t, b in r.blocks.items()}
    flat = [(t, i) for t, b in blocks.items() for i in range(len(b))]
    hit = max(1, len(flat) // every)
    for j in rng.choice(len(flat), size=min(hit, len(flat)), replace=False):
        t, i = flat[j]
        blocks[t][i] = max(blocks[t][i], STALL_US)
    values = np.append(r.values_us, STALL_US)
    counts = np.append(r.counts, hit)
    order = np.argsort(values, kind="stable")
    return replace(r, values_us=values[order], counts=counts[order], samples=r.samples + hit,
                   limit_us=None if r.limit_us is None else max(r.limit_us, int(STALL_US) + 1),
                   blocks=blocks, summaries={})


def variants(bank: Bank, rng: np.random.Generator) -> dict[str, dict[ab.Key, list[ab.Round]]]:
    """Side B's rounds for every planted effect ("A/A": the bank as it is)."""
    out = {"A/A": bank.rounds}
    for name, shift in EFFECTS.items():
        out[name] = {k: [scaled(r, 1 + shift) for r in rs] for k, rs in bank.rounds.items()}
    for name, every in STALLS.items():
        out[name] = {k: [stalled(r, rng, every) for r in rs] for k, rs in bank.rounds.items()}
    return out


def trial(bank: Bank, b_side: dict[ab.Key, list[ab.Round]], planned: int, alpha: float,
          primary: dict[ab.Key, str | None], rng: np.random.Generator
          ) -> dict[ab.Key, Comparison]:
    """One resampled A/B run of every key, looked at as the gate looks (the same Sequential,
    the same stopping): each key's final word, unknown when the cap came first."""
    picks = {}
    for key, rounds in bank.rounds.items():
        n = len(rounds)
        draw = rng.permutation(n)[:2 * planned] if n >= 2 * planned \
            else rng.integers(0, n, 2 * planned)
        picks[key] = ([rounds[i] for i in draw[:planned]],
                      [b_side[key][i] for i in draw[planned:]])
    seq = ab.Sequential(alpha, planned, keys=len(bank.rounds),
                        floors={k: f for k in bank.rounds
                                if (f := log_sd(bank.rounds[k], primary[k])) is not None})
    keys = list(bank.rounds)
    for n in range(ab.MIN_ROUNDS, planned + 1):
        seq.look(n, [ab.KeyRounds(k, picks[k][0][:n], picks[k][1][:n], bank.margins[k],
                                  primary=primary[k], stall_threshold_us=bank.stall_limits.get(k))
                     for k in keys if k not in seq.final])
        if seq.stopped(keys):
            break
    return {k: (seq.final[k].outcome if k in seq.final else Comparison.UNKNOWN) for k in keys}


def rates(bank: Bank, b_side: dict[ab.Key, list[ab.Round]], planned: int, alpha: float,
          primary: dict[ab.Key, str | None], replays: int,
          seed: int) -> dict[ab.Key, dict[Comparison, int]]:
    rng = np.random.default_rng(seed)
    counts = {k: dict.fromkeys(Comparison, 0) for k in bank.rounds}
    for _ in range(replays):
        for key, outcome in trial(bank, b_side, planned, alpha, primary, rng).items():
            counts[key][outcome] += 1
    return counts


UNCHECKED = "unchecked"
"""How a record's model check begins when the bank could not check the model."""


def rate(events: float, replays: int, bank_rounds: int, planned: int) -> Rate:
    """A resampled rate with the Clopper-Pearson interval of the bank's independent units: the
    disjoint trials it holds, the events scaled to them; a bank smaller than one trial (its A
    and B resamples share rounds) has no interval of its own, and its method says so."""
    per_trial = 2 * planned
    share = events / replays
    if bank_rounds < per_trial:
        return Rate(events=round(share, 3), trials=1, value=share, low=0.0, high=1.0,
                    method=f"no interval: the bank's {bank_rounds} rounds are fewer than one "
                           f"independent trial's {per_trial}, so its resampled sides share "
                           f"rounds; point: {replays} resampled trials, a check of the model "
                           "only")
    units = bank_rounds // per_trial
    x = share * units
    low = 0.0 if x <= 0 else float(stats.beta.ppf((1 - CONFIDENCE) / 2, x, units - x + 1))
    high = 1.0 if x >= units else float(stats.beta.ppf(1 - (1 - CONFIDENCE) / 2, x + 1,
                                                          units - x))
    return Rate(events=round(x, 3), trials=units, value=share, low=low, high=high,
                method=f"Clopper-Pearson {100 * CONFIDENCE:g} % on the bank's {units} "
                       f"independent trial(s) ({bank_rounds} rounds / {per_trial} a trial); "
                       f"point: {replays} resampled trials")


def false_alarms(c: dict[Comparison, int]) -> int:
    return c[Comparison.WORSE] + c[Comparison.BETTER]


def log_sd(rounds: Sequence[ab.Round], metric: str | None) -> float | None:
    """The bank's pooled sd of the metric's per-round logs (rule 3's floor under the standard
    error); None when some round lacks the metric or the bank has one round."""
    logs = ab.log_values(rounds, metric or ab.METRICS[-1])
    return float(logs.std(ddof=1)) if logs is not None and len(logs) > 1 else None


def cv(rounds: Sequence[ab.Round], metric: str) -> float:
    values = np.array([r.metric(metric) for r in rounds], dtype=float)
    return float(values.std(ddof=1) / values.mean()) if len(values) > 1 else math.inf


@dataclass
class Replay:
    bank: Bank
    alpha: float
    console: Console
    replays: int = SEARCH_REPLAYS
    """Replays behind each choice (the primary metric, the rounds needed)."""
    seed: int = SEED

    def choose_primary(self, effects: dict[str, dict[ab.Key, list[ab.Round]]]
                       ) -> dict[ab.Key, str | None]:
        """Per key, among the metrics known in every banked round whose replayed A/A false-alarm
        rate holds the key's alpha, the one with the most power at +20 % at the default plan;
        ties, or no metric holding it, go to the rule's order of preference."""
        chosen: dict[ab.Key, str | None] = {}
        share = self.alpha / len(self.bank.rounds)
        for key, rounds in self.bank.rounds.items():
            known = [m for m in ab.METRICS if all(r.metric(m) is not None for r in rounds)]
            score = {}
            sub = replace(self.bank, rounds={key: rounds})
            for m in known:
                aa = rates(sub, {key: effects["A/A"][key]}, DEFAULT_PLANNED, share, {key: m},
                           self.replays, self.seed)[key]
                hit = rates(sub, {key: effects[POWER_AT][key]}, DEFAULT_PLANNED, share,
                            {key: m}, self.replays, self.seed + 1)[key]
                holds = false_alarms(aa) <= share * self.replays
                score[m] = (holds, hit[Comparison.WORSE], -known.index(m))
            chosen[key] = max(known, key=lambda m: score[m]) if known else None
            self.console.print(f"{'/'.join(key)}: by metric (A/A alarms within alpha, power at "
                               f"+20 % of {self.replays} replays, {DEFAULT_PLANNED} rounds a "
                               f"side): {score}")
        return chosen


def searches(bank: Bank, primary: dict[ab.Key, str | None],
             alpha: float) -> dict[ab.Key, oc.PlanSearch | None]:
    """Per key, the smallest plan whose bounds meet the targets, from the bank's log-sd and its
    size (None: the primary metric's log-sd is unknown or zero)."""
    key_alpha = alpha / len(bank.rounds)
    out: dict[ab.Key, oc.PlanSearch | None] = {}
    for key, rounds in bank.rounds.items():
        sd = log_sd(rounds, primary[key])
        out[key] = None if not sd else oc.search(
            sd, len(rounds), key_alpha * (1 - stalls.STALL_SHARE), bank.margins[key].relative,
            effect=EFFECTS[POWER_AT], target_alpha=TARGET_ALPHA, target_power=TARGET_POWER,
            stall_alpha=key_alpha * stalls.STALL_SHARE)
    return out


def checked(model: oc.BoundedRates, search: oc.PlanSearch, aa: dict[Comparison, int],
            hit: dict[Comparison, int], replays: int, bank_rounds: int) -> Bounds:
    """The model's bounds at the plan, checked against the bank's replay there: the false-alarm
    rate the larger of the two, the power and P(same) the smaller, and what the check found.
    A bank smaller than one independent trial checks nothing: its resampled sides share rounds,
    which makes them alike and hides exactly the false alarms the check is for."""
    fa, same, power = (false_alarms(aa) / replays, aa[Comparison.SAME] / replays,
                       hit[Comparison.WORSE] / replays)
    said = []
    if fa > model.false_alarm_high:
        said.append(f"the replay's false alarms {fa:.4f} exceed the model's bound "
                    f"{model.false_alarm_high:.4f}")
    if power < model.power_low:
        said.append(f"the replay's power {power:.3f} is below the model's bound "
                    f"{model.power_low:.3f}")
    per_trial = 2 * model.planned
    if bank_rounds < per_trial:
        check = (f"{UNCHECKED}: the bank's {bank_rounds} rounds are fewer than one independent "
                 f"trial's {per_trial}, so its resampled sides share rounds (replay: false "
                 f"alarms {fa:.4f}, power {power:.3f}, same {same:.3f})")
    elif said:
        check = "the replay contradicts the normal model (modes or tails): " + "; ".join(said)
    else:
        check = (f"the replay agrees (false alarms {fa:.4f}, power {power:.3f}, same "
                 f"{same:.3f}, {replays} resampled trials)")
    return Bounds(planned=model.planned, log_sd_high=search.log_sd_high,
                  confidence=oc.CONFIDENCE, false_alarm_high=max(model.false_alarm_high, fa),
                  same_low=min(model.same_low, same), power_low=min(model.power_low, power),
                  model_check=check)


def _commit() -> str:
    try:
        return subprocess.run(["git", "-C", str(paths.ROOT), "rev-parse", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def calibrate(run: ABRun, settings: CalibrateSettings, console: Console) -> CalibrationRecord:
    """Record the bank (unless asked to replay one), replay it, write and return the record."""
    out = settings.ab.rounds.out
    if settings.pairs:
        lost = record_bank(run, settings.pairs, console)
        console.print(f"bank: {settings.pairs} pair(s) measured, {len(lost)} cut short")
    bank = read_bank(out, settings.ab.rounds.round_duration, run.thresholds,
                     settings.ab.rounds.min_effect_pct, boards=paths.BOARDS)
    alpha = settings.ab.rounds.alpha or TARGET_ALPHA
    replay = Replay(bank, alpha, console, min(SEARCH_REPLAYS, settings.replays))
    effects = variants(bank, np.random.default_rng(SEED))
    primary = replay.choose_primary(effects)
    found = searches(bank, primary, alpha)
    needed = {k: s.needed if s else None for k, s in found.items()}
    for key, search in found.items():
        console.print(f"{'/'.join(key)}: {search.note if search else 'no log-sd: no plan'}")
    reachable = [n for n in needed.values() if n is not None]
    planned = max(reachable) if len(reachable) == len(needed) else oc.MAX_PLANNED
    keys = []
    outcomes = {}
    with Progress(console=console, transient=True) as bar:
        task = bar.add_task("replaying", total=len(effects))
        for i, (name, b_side) in enumerate(effects.items()):
            outcomes[name] = rates(bank, b_side, planned, alpha, primary, settings.replays,
                                   SEED + 10 + i)
            bar.advance(task)
    per_round_s = {k: float(np.median(w)) for k, w in bank.wall_s.items()}
    key_alpha = alpha / len(bank.rounds)
    for key, rounds in bank.rounds.items():
        n = len(rounds)
        aa = outcomes["A/A"][key]
        metric = primary[key] or ab.METRICS[-1]
        search = found[key]
        bounds, note = None, search.note if search else "no log-sd of the primary metric"
        if search is not None:
            sd = log_sd(rounds, primary[key]) or 0.0
            bounds = checked(
                oc.bounds(search.log_sd_high, sd, planned, key_alpha * (1 - stalls.STALL_SHARE),
                          bank.margins[key].relative, EFFECTS[POWER_AT],
                          key_alpha * stalls.STALL_SHARE),
                search, aa, outcomes[POWER_AT][key], settings.replays, n)
            if needed[key] is not None and bounds.model_check.startswith(UNCHECKED):
                note = (f"not shown: record {2 * planned - n} more rounds so the bank holds one "
                        f"independent trial to check the model against ({bounds.model_check}); "
                        f"the model alone: {note}")
                needed[key] = None
            elif needed[key] is not None and (bounds.false_alarm_high > TARGET_ALPHA
                                               or bounds.power_low < TARGET_POWER):
                note = f"not shown at the plan's {planned} rounds: {bounds.model_check}"
                needed[key] = None
        minutes = None
        if needed[key] is not None:
            # Every round of a plan at the cap: both sides, each with the board's pace.
            minutes = 2 * needed[key] * per_round_s.get(key, bank.round_s) / 60
        logs = ab.log_values(rounds, metric)
        modes = oc.mode_check(logs)[1] if logs is not None else None
        if modes:
            console.print(f"{'/'.join(key)}: {modes}")
        keys.append(KeyCalibration(
            flavor=key[1], scenario=key[2], primary_metric=metric, rounds_banked=n,
            cv=cv(rounds, metric) if primary[key] else 0.0,
            log_sd=log_sd(rounds, metric) if primary[key] else None, modes=modes,
            stall_threshold_us=bank.stall_limits.get(key),
            resolution_us=bank.resolutions.get(key, ab.RESOLUTION_US),
            false_alarm=rate(false_alarms(aa), settings.replays, n, planned),
            same_within_cap=rate(aa[Comparison.SAME], settings.replays, n, planned),
            power=[Power(effect=name, detected=rate(outcomes[name][key][Comparison.WORSE],
                                                    settings.replays, n, planned))
                   for name in effects if name != "A/A"],
            rounds_needed=needed[key], minutes_needed=minutes, bounds=bounds,
            rounds_start=search.start if search else None, needed_note=note,
            more_rounds=search.more_rounds if search else None))
    wall = sum(per_round_s.values()) or bank.round_s * len(bank.rounds)
    record = CalibrationRecord(
        schema=calibration.SCHEMA_ID, kind=kind_of(run.spec), measured_on=run.spec.name,
        virtual=bank.virtual,
        # A replay of a banked record keeps the bank's date (its rounds are what was measured).
        measured_at=(bank.measured_at if not settings.pairs and bank.measured_at
                     else datetime.now(UTC)), rtgate_commit=_commit(), kernel=bank.kernel,
        rule=ab.RULE, replays=settings.replays,
        plan=GatePlan(round_s=bank.round_s, rounds=planned,
                      max_time_s=math.ceil(2 * planned * wall * 1.25)),
        keys=keys)
    path = settings.record or calibration.DIRECTORY / f"{kind_of(run.spec)}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, record.model_dump_json(by_alias=True, indent=2) + "\n")
    console.print(f"calibration record: {path} (sha256 {calibration.sha256_of(path)})")
    return record
