"""A bisect step on a board (a kernel build of each variant and an `rtgate ab` run), or re-decided
from the rounds a bisect left (``--replay``)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from rich.console import Console

from rtgate import inputfile
from rtgate.ab import doc as ab_doc
from rtgate.ab.loop import ABRun, Side
from rtgate.ab.settings import RoundSettings
from rtgate.bisect.doc import Detail, StepMeasurement, Variant, label
from rtgate.bisect.settings import BisectSettings
from rtgate.board.spec import BoardSpec
from rtgate.errors import Exit, InfraError, InputError
from rtgate.gate.thresholds import Thresholds
from rtgate.jsonfile import write_atomic
from rtgate.kernel.build import build
from rtgate.kernel.patches import PatchError, read_series, write_series
from rtgate.outcome import STEP_OF_AB, StepOutcome

SKIPPED = "skipped.json"
"""In a step's directory when no round was measured: the variant did not apply or build."""


def _slug(text: str) -> str:
    return text.replace(", ", "+").replace(" ", "_")


def step_dir(root: Path, number: int, base: Variant, cand: Variant, n: int) -> Path:
    """Where step ``number`` (from 1) keeps its rounds: ROOT/steps/NN_<candidate>_vs_<base>."""
    return root / "steps" / _slug(f"{number:02d} {label(cand, n)} vs {label(base, n)}")


def step_gate(spec: BoardSpec, flavor: str, scenarios: list[str], thresholds: Thresholds,
          settings: BisectSettings, out: Path, kernels: tuple[Path | None, Path | None],
          console: Console) -> ABRun:
    """The A/B gate of one step: base (A) against candidate (B) into OUT."""
    rounds = RoundSettings(out=out, round_duration=settings.round_duration,
                           max_time=settings.max_time, planned_rounds=settings.planned_rounds,
                           scale=settings.scale, min_effect_pct=settings.min_effect_pct,
                           alpha=settings.alpha)
    return ABRun(spec, (Side("A", "base", kernels[0], None),
                        Side("B", "candidate", kernels[1], None)),
                 [(flavor, s) for s in scenarios], thresholds, rounds, console)


def _measurement(gate: ABRun, **where: str | float | None) -> StepMeasurement:
    """What a step's A/B gate, run or replayed, says of the candidate; ``where``: the Detail
    fields that say where its rounds are."""
    doc = ab_doc.document(gate)
    effects = [f"{d.flavor}/{d.scenario} {d.outcome}: {e.metric} "
               f"{100 * (e.ratio - 1):+.0f} % [{100 * (e.low - 1):+.0f}, {100 * (e.high - 1):+.0f}]"
               for d in doc.decisions for e in d.effects if e.metric == d.primary_metric]
    base_ok = not any(v.side.role == "base" and v.evaluation.exit is Exit.BUDGET
                      for v in gate.verdicts)
    # A candidate over its budget, a round the lab failed: the gate's reason is the evidence.
    summary = gate.why if gate.why and gate.outcome != "same" else "; ".join(effects)
    return StepMeasurement(outcome=STEP_OF_AB[gate.outcome], summary=summary,
                           base_ok=base_ok,
                           detail=Detail(**where, ab_outcome=gate.outcome, pairs=gate.pairs))


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
    thresholds: Thresholds
    settings: BisectSettings
    console: Console
    steps: int = 0
    built: dict[Variant, Path] = field(default_factory=dict)

    def _build(self, v: Variant) -> Path:
        if v in self.built:
            return self.built[v]
        series = self.settings.series
        names = [p.name for p in read_series(series)]
        home = self.settings.out / "variants" / _slug(label(v, len(names)))
        variant = write_series(home / "patches", [(names[number - 1],
                                                    series.parent / names[number - 1])
                                                   for number in v])
        build(self.spec.name, self.flavor, series=variant,
              out=home / "kernels" / self.flavor, runtime=self.settings.runtime,
              trust=self.settings.trust)
        self.built[v] = home / "kernels"
        return self.built[v]

    def __call__(self, base: Variant, cand: Variant) -> StepMeasurement:
        self.steps += 1
        out = step_dir(self.settings.out, self.steps, base, cand,
                       len(read_series(self.settings.series)))
        try:
            kernels = [self._build(v) for v in (base, cand)]
        except PatchError as exc:
            return self._skipped(out, f"does not apply: {exc.oneline()}", applies=False)
        except (InputError, InfraError) as exc:
            return self._skipped(out, f"does not build: {exc.oneline()}", applies=True)
        gate = step_gate(self.spec, self.flavor, self.scenarios, self.thresholds, self.settings,
                         out, (kernels[0], kernels[1]), self.console)
        gate.run()
        ab_doc.write(gate, out)
        return _measurement(gate, ab=str(out / ab_doc.NAME), elapsed_s=gate.elapsed_s)

    @staticmethod
    def _skipped(out: Path, why: str, *, applies: bool) -> StepMeasurement:
        write_atomic(out / SKIPPED, json.dumps({"why": why, "applies": applies}) + "\n")
        return StepMeasurement(outcome=StepOutcome.SKIP, summary=why, applies=applies)


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
    settings: BisectSettings
    source: Path
    n: int
    used: list[Path] = field(default_factory=list)

    def __call__(self, base: Variant, cand: Variant) -> StepMeasurement:
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
                record = _Skipped.model_validate_json(
                    inputfile.read_bytes(skipped, inputfile.DOCUMENT))
            except ValidationError as exc:
                raise InputError(f"unreadable: {exc.errors()[0]['msg']}", path=skipped) from exc
            return StepMeasurement(outcome=StepOutcome.SKIP, summary=record.why,
                                   applies=record.applies, detail=Detail(step=home.name))
        gate = step_gate(self.spec, self.flavor, self.scenarios, self.thresholds, self.settings,
                         home, (None, None), Console(stderr=True, quiet=True))
        gate.replay()
        return _measurement(gate, step=home.name)

    def _entries(self) -> list[Path]:
        steps = self.source / "steps"
        if steps.is_symlink():
            raise InputError("a symbolic link where the bisect writes its steps: refused",
                             path=steps)
        return sorted(steps.iterdir()) if steps.is_dir() else []

    def unused(self) -> list[str]:
        """Step directories the search never asked for."""
        return [p.name for p in self._entries() if p not in self.used]
