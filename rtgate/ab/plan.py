"""The A/B plan, fixed after the first pair and before any look at the latencies: each key's
margin and primary metric, the false-alarm rate, and the rounds a side the alpha spending plans
for. The board kind's calibration record, when there is one, names the primary metrics and the
planned rounds it measured the error rates at."""

from __future__ import annotations

from rtgate.ab.settings import RoundSettings
from rtgate.calibration import CalibrationRecord
from rtgate.errors import InputError
from rtgate.gate.thresholds import Budget
from rtgate.stats import ab


def primary_of(record: CalibrationRecord | None, key: ab.Key) -> str | None:
    """The record's primary metric for the key's flavor and scenario; None: the rule's default."""
    if record is None:
        return None
    return next((k.primary_metric for k in record.keys
                 if (k.flavor, k.scenario) == key[1:]), None)


def plan(budgets: dict[ab.Key, Budget], settings: RoundSettings,
         pair_s: float) -> tuple[dict[ab.Key, ab.Margin], ab.Sequential]:
    """Every key's margin and the sequential test: the settings' minimum effect and alpha over
    the budgets'; the planned rounds given, else the record's, else what the cap allows at the
    first pair's pace."""
    margins: dict[ab.Key, ab.Margin] = {}
    for key, budget in budgets.items():
        stated = budget.ab
        pct = settings.min_effect_pct or (stated.min_effect_pct if stated else None)
        if pct is None:
            raise InputError(f"{'/'.join(key)}: no minimum effect (ab.min_effect_pct in "
                             f"the budget at {budget.source}, or --min-effect-pct)")
        margins[key] = ab.Margin(pct / 100)
    alpha = settings.alpha or min((b.ab.alpha for b in budgets.values() if b.ab), default=0.01)
    record = settings.calibration
    planned = (settings.planned_rounds or (record.plan.rounds if record else None)
               or int(settings.max_time // max(pair_s, 1e-9)))
    return margins, ab.Sequential(alpha, planned, keys=len(budgets))
