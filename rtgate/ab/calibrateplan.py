"""`rtgate calibrate` resolved before its first round: the A/B run its bank is recorded with (the
board, main's kernels, every key's budget and margin), the bank (rounds to record, or the one in
OUT to replay), the replays and where the record goes. Every problem is found at once (exit 2,
nothing measured or written), and the plan prints as YAML without a device (``--dry-run``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from rtgate import calibration, paths
from rtgate.ab import plan as abplan
from rtgate.ab.calibrate import EFFECTS, STALLS, TARGET_ALPHA, CalibrateSettings
from rtgate.ab.loop import ABRun, check
from rtgate.board.spec import kind_of
from rtgate.errors import InputError
from rtgate.layout import ROUND_RESULTS


@dataclass(frozen=True)
class CalibratePlan:
    run: ABRun
    banked: int
    """Result files already in OUT's rounds (what ``--rounds 0`` replays)."""
    record: Path

    def describe(self, s: CalibrateSettings) -> str:
        """The plan as YAML: what would be measured, replayed and written (``--dry-run``)."""
        spec, rounds = self.run.spec, s.ab.rounds
        flavors = list(dict.fromkeys(f for f, _ in self.run.targets))
        kernels = ({f: f"prebuilt: {paths.shown(s.ab.base / f)}" for f in flavors}
                   if s.ab.base and s.pairs else
                   {"none": "the bank in out is replayed, nothing booted"} if not s.pairs else
                   {"running": "the board's running kernel"})
        return yaml.safe_dump({
            "board": spec.name, "kind": kind_of(spec), "driver": spec.driver,
            "kernels": kernels,
            "bank": {"out": paths.shown(rounds.out),
                     "record_rounds": s.pairs or "none: the bank in out is replayed",
                     "results_in_out": self.banked, "round_duration_s": rounds.round_duration,
                     "scale": rounds.scale},
            "replays": s.replays, "effects": [*EFFECTS, *STALLS],
            "alpha": rounds.alpha or TARGET_ALPHA,
            "record": paths.shown(self.record),
            "keys": abplan.summary(self.run.resolve())["keys"]},
            sort_keys=False, allow_unicode=True)


def validate(s: CalibrateSettings) -> CalibratePlan:
    """The A/B run's problems (``rtgate.ab.loop.check``) and the bank's and record's, all at
    once (rtgate.errors.raise_found, exit 2)."""
    run, problems = check(s.ab, kernels_option="--kernels")
    out = s.ab.rounds.out
    banked = len(list(out.glob(ROUND_RESULTS))) if out.is_dir() else 0
    if not s.pairs and not banked:
        problems.add(InputError(f"--rounds 0 replays the bank in {out}, which holds no "
                                "rounds (A|B/round-N/FLAVOR/SCENARIO/result.json)"))
    record = s.record
    if record is None and run is not None:
        record = calibration.DIRECTORY / f"{kind_of(run.spec)}.json"
    # OUT itself is made by the run (docs/lab.md records into calibration-rpi5/rpi5.json).
    if record is not None and not record.parent.is_dir() \
            and record.parent.absolute() != out.absolute():
        problems.add(InputError("no such directory for the record", path=record.parent))
    problems.raise_found("the first round")
    assert run is not None and record is not None
    return CalibratePlan(run, banked, record)
