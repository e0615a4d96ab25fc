"""A sweep resolved before anything runs: each model's build and label, every scenario, the
base tuning and the kernels of the builds it expects, every problem found at once (exit 2),
printable as YAML without a device (``--dry-run``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from rtgate import inputfile, paths
from rtgate.board.base import KernelArtifacts
from rtgate.board.spec import BoardSpec, kind_of, scenarios_of
from rtgate.board.tuning import Profile, load_profile
from rtgate.errors import InfraError, InputError, Problems
from rtgate.harness.scenario import load_scenario
from rtgate.kernel.plan import flavor_fragment
from rtgate.pipeline.kernels import dynamic, kernel_of
from rtgate.pipeline.settings import MODELS, STATIC_FLAVOR, SweepSettings


@dataclass(frozen=True)
class SweepRun:
    """One model as the sweep measures it: on which build, under which label."""

    model: str
    flavor: str
    """The build: stock (PREEMPT_DYNAMIC, the model chosen at boot) or the model's own."""
    label: str
    """What its results and table rows are called: dynamic-<model>, or the static flavor."""
    boot: str | None
    """The command-line word that chooses the model on a dynamic build."""


def runs_of(models: list[str], use_dynamic: bool) -> list[SweepRun]:
    """Each model's build and label: one PREEMPT_DYNAMIC stock build for none, voluntary and full
    when ``use_dynamic``, else one build per model; RT is its own build either way."""
    return [SweepRun(m, "stock", f"dynamic-{m}", f"preempt={m}") if m != "rt" and use_dynamic
            else SweepRun(m, STATIC_FLAVOR[m], STATIC_FLAVOR[m], None) for m in models]


@dataclass(frozen=True)
class SweepScenario:
    ref: str
    """As asked for (a name, or a file)."""
    name: str
    source: Path
    tool: str


@dataclass(frozen=True)
class SweepPlan:
    """A sweep resolved before anything runs: its scenarios, base tuning, the builds it expects
    and every model × scenario."""

    spec: BoardSpec
    base: Profile | None
    scenarios: list[SweepScenario]
    dynamic: bool
    """Expected: a PREEMPT_DYNAMIC stock build serves none, voluntary and full. The built stock
    kernel's own .config decides when the sweep runs (without it: one build per model)."""
    dynamic_from: str
    kernels: dict[str, str]
    """Per expected build, where its kernel comes from."""

    def describe(self, s: SweepSettings) -> str:
        """The plan as YAML: what would be built, booted and measured (``--dry-run``)."""
        return yaml.safe_dump({
            "board": self.spec.name, "kind": kind_of(self.spec), "driver": self.spec.driver,
            "duration_s": s.duration, "scale": s.scale,
            "tuning": self.base.name if self.base else "none",
            "models": "dynamic" if self.dynamic else "static", "models_from": self.dynamic_from,
            "kernels": self.kernels,
            "runs": [{"model": r.model, "label": r.label, "kernel": r.flavor, "boot": r.boot,
                      "scenario": sc.name, "file": paths.shown(sc.source), "tool": sc.tool}
                     for r in runs_of(s.models, self.dynamic) for sc in self.scenarios]},
            sort_keys=False, allow_unicode=True)


def _expects_dynamic(s: SweepSettings) -> tuple[bool, str]:
    """Whether the sweep expects one PREEMPT_DYNAMIC stock build, and what says so; the sweep
    itself asks the stock kernel it built or was given (``dynamic``)."""
    if s.static:
        return False, "--static: one compiled-in build per model"
    if all(m == "rt" for m in s.models):
        return False, "rt only: its own build"
    if s.kernel.kernels:
        try:
            stock = KernelArtifacts.from_dir(s.kernel.kernels / "stock")
        except InfraError as exc:
            return False, f"the prebuilt stock kernel does not load ({exc.oneline()}): one " \
                          "build per model"
        if dynamic(stock):
            return True, f"the prebuilt stock kernel ({paths.shown(stock.dir)}) has PREEMPT_DYNAMIC"
        return False, f"the prebuilt stock kernel ({paths.shown(stock.dir)}) has no " \
                      "PREEMPT_DYNAMIC: one build per model"
    fragment = flavor_fragment("stock")
    text = inputfile.read_text(fragment, inputfile.KCONFIG)
    if "CONFIG_PREEMPT_DYNAMIC=y" in text.splitlines():
        return True, (f"{paths.shown(fragment)} sets CONFIG_PREEMPT_DYNAMIC=y (the built "
                      ".config decides: without it, one build per model)")
    return False, f"{paths.shown(fragment)} does not set CONFIG_PREEMPT_DYNAMIC: one build " \
                  "per model"


def validate(spec: BoardSpec, s: SweepSettings) -> SweepPlan:
    """The models, the tuning profile, every scenario and the kernels of the builds it expects,
    resolved before the first build or boot (rtgate.errors.raise_found, exit 2)."""
    problems = Problems()

    unknown = [m for m in s.models if m not in MODELS]
    if unknown:
        problems.add(InputError(f"unknown preemption model(s) {', '.join(unknown)} "
                                f"(known: {', '.join(MODELS)})"))
    base = problems.attempt(lambda: load_profile(s.tuning) if s.tuning else None)
    scenarios = []
    for ref in scenarios_of(spec, s.scenarios):
        if loaded := problems.attempt(lambda r=ref: load_scenario(r)):
            scenarios.append(SweepScenario(ref, loaded[0].name, loaded[1], loaded[0].tool))
    # A dynamic sweep falls back to one build per model: every fragment either way.
    flavors = {"stock", *(STATIC_FLAVOR[m] for m in s.models if m in MODELS)}
    for flavor in sorted(flavors) if s.kernel.kernels is None else []:
        problems.attempt(lambda f=flavor: flavor_fragment(f))
    expected = problems.attempt(lambda: _expects_dynamic(s)) or (False, "")
    models = [m for m in s.models if m in MODELS]
    kernels = {flavor: where for flavor in dict.fromkeys(r.flavor for r in runs_of(
                   models, expected[0]))
               if (where := problems.attempt(lambda f=flavor: kernel_of(spec, f, s.kernel)))}
    problems.raise_found("any build or boot")
    return SweepPlan(spec, base, scenarios, expected[0], expected[1], kernels)
