"""The A/B plan, fixed after the first pair and before any look at the latencies: each key's
minimum effect, the false-alarm rate, and the rounds a side the alpha spending plans for."""

from __future__ import annotations

from rtgate.ab.settings import RoundSettings
from rtgate.errors import InputError
from rtgate.gate.thresholds import Budget
from rtgate.stats import ab


def plan(budgets: dict[ab.Key, Budget], settings: RoundSettings,
         pair_s: float) -> tuple[dict[ab.Key, float], ab.Sequential]:
    """Every key's margin and the sequential test: the settings' minimum effect and alpha over
    the budgets'; the planned rounds given, else what the cap allows at the first pair's pace."""
    margins: dict[ab.Key, float] = {}
    for key, budget in budgets.items():
        stated = budget.ab
        margin = settings.min_effect_us or (stated.min_effect_us if stated else None)
        if margin is None:
            raise InputError(f"{'/'.join(key)}: no minimum effect (ab.min_effect_us in "
                             f"the budget at {budget.source}, or --min-effect-us)")
        margins[key] = margin
    alpha = settings.alpha or min((b.ab.alpha for b in budgets.values() if b.ab), default=0.01)
    planned = settings.planned_rounds or int(settings.max_time // max(pair_s, 1e-9))
    return margins, ab.Sequential(alpha, planned)
