"""``rtgate thresholds diff OLD NEW``: which budgets a change loosens or tightens, and by how much.

A result is judged by the most specific matching budget, so adding a narrow budget can loosen a
wide one for some results without changing a single number in it. The diff therefore compares,
for every board × flavor × scenario either file names (and "any other" board or scenario), the
budget that would judge such a result before and after, and reports each pair of budgets once.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product
from typing import get_args

from rtgate.gate.thresholds import WILDCARD, Budget, Flavor, Thresholds
from rtgate.textfmt import fmt

# (field, unit, direction): for "<=" a larger budget lets more through, for ">=" a smaller one.
FIELDS = (("max_us", " µs", "<="), ("avg_us", " µs", "<="), ("p99_us", " µs", "<="),
          ("p9999_us", " µs", "<="), ("min_samples", " samples", ">="),
          ("max_single_noise_us", " µs", "<="), ("min_cpu_available_pct", " %", ">="))
_FLAVORS = [f for f in get_args(Flavor) if f != WILDCARD]


@dataclass(frozen=True)
class FieldChange:
    field: str
    before: float | None
    after: float | None
    unit: str
    loosens: bool

    @property
    def text(self) -> str:
        if self.before is None:
            return f"{self.field} now checked ({fmt(self.after or 0)}{self.unit})"
        if self.after is None:
            return f"{self.field} no longer checked (was {fmt(self.before)}{self.unit})"
        delta = self.after - self.before
        pct = f", {delta / self.before:+.0%}" if self.before else ""
        sign = "+" if delta >= 0 else "−"
        return (f"{self.field} {fmt(self.before)} → {fmt(self.after)}{self.unit} "
                f"({sign}{fmt(round(abs(delta), 3))}{self.unit}{pct})")


@dataclass(frozen=True)
class Change:
    """Results judged by ``old`` before are judged by ``new`` after (None: no budget)."""

    old: Budget | None
    new: Budget | None
    fields: tuple[FieldChange, ...]

    @property
    def verdict(self) -> str:
        """loosens, tightens, or both (some fields each way)."""
        if self.old is None:
            return "tightens"  # no budget was an input error; now the result is judged
        if self.new is None:
            return "removes"   # judged before; now an input error
        kinds = {f.loosens for f in self.fields}
        return "loosens" if kinds == {True} else "tightens" if kinds == {False} else "mixed"

    @property
    def scope(self) -> str:
        old = self.old.label if self.old else "no budget"
        new = self.new.label if self.new else "no budget"
        return old if old == new else f"{old} → {new}"

    @property
    def text(self) -> str:
        if self.new is None:
            return "no budget any more: such results become an input error"
        if self.old is None:
            return "newly budgeted: " + ", ".join(f.text for f in self.fields)
        return ", ".join(f.text for f in self.fields)


def _fields(old: Budget | None, new: Budget | None) -> tuple[FieldChange, ...]:
    changes = []
    for field, unit, op in FIELDS:
        before = getattr(old, field) if old else None
        after = getattr(new, field) if new else None
        if before == after:
            continue
        if before is None or after is None:
            loosens = after is None
        else:
            loosens = after > before if op == "<=" else after < before
        changes.append(FieldChange(field, before, after, unit, loosens))
    return tuple(changes)


def diff(old: Thresholds, new: Thresholds) -> list[Change]:
    budgets = old.budgets + new.budgets
    boards = sorted({b.board for b in budgets} | {WILDCARD})
    scenarios = sorted({b.scenario for b in budgets} | {WILDCARD})
    changes: dict[tuple[object, object], Change] = {}
    # A budget may select a tuning profile: every profile named, and untuned results.
    profiles = sorted({b.profile for b in budgets} | {"none"})
    # And each measuring tool's budgets apart (a budget judges only its own tool's results).
    tools = sorted({b.tool for b in budgets})
    for board, flavor, scenario, profile, tool in product(boards, _FLAVORS, scenarios, profiles,
                                                          tools):
        before = old.select(board, flavor, scenario, profile, tool)
        after = new.select(board, flavor, scenario, profile, tool)
        pair = ((*before.key, tool) if before else None, (*after.key, tool) if after else None)
        if pair in changes or (before is None and after is None):
            continue
        fields = _fields(before, after)
        if fields or (before is None) != (after is None):
            changes[pair] = Change(before, after, fields)
    return sorted(changes.values(), key=lambda c: c.scope)


def text(changes: list[Change]) -> str:
    if not changes:
        return "no budget changes\n"
    return "".join(f"{c.verdict:<9} {c.scope}: {c.text}\n" for c in changes)
