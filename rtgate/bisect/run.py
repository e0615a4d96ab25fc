"""`rtgate bisect`'s engine: the series and its ends checked, the search run on a board (or
re-decided from a bisect's rounds), bisect.json and bisect.md written."""

from __future__ import annotations

import json

from rich.console import Console

from rtgate.bisect.doc import MARKDOWN, NAME
from rtgate.bisect.measure import BoardMeasure, ReplayMeasure
from rtgate.bisect.patches import describe
from rtgate.bisect.plan import validate
from rtgate.bisect.render import markdown, refused_markdown
from rtgate.bisect.search import Measure, Search
from rtgate.bisect.settings import BisectSettings
from rtgate.bisect.state import Log
from rtgate.errors import InputError, RtgateError
from rtgate.jsonfile import write_atomic


def bisect(s: BisectSettings) -> int:
    """Run (or replay) the bisect; its exit code."""
    console = Console(stderr=True)
    plan = validate(s)
    if s.dry_run:
        print(plan.describe(s), end="")
        return 0
    spec, thresholds, scenarios = plan.spec, plan.thresholds, plan.scenarios
    n, good, bad = len(plan.series), plan.good, plan.bad
    s.out.mkdir(parents=True, exist_ok=True)
    identity = {"series": [p.model_dump() for p in plan.series], "good": good,
                "bad": bad, "board": spec.name, "flavor": s.flavor, "scenarios": scenarios,
                "repeats": s.repeats, "round_duration_s": s.round_duration,
                "max_time_s": s.max_time, "min_effect_pct": s.min_effect_pct, "alpha": s.alpha,
                # Only when given: a state file of a bisect without a plan still resumes.
                **({"planned_rounds": s.planned_rounds} if s.planned_rounds else {})}

    def progress(line: str) -> None:
        console.print(line, markup=False)

    if s.replay is None:
        log = Log.open(s.out / "state.json", identity)
        measure: Measure = BoardMeasure(spec, s.flavor, scenarios, thresholds, s, console,
                                        steps=len(log.steps))
        found = Search(n, good, bad, measure, log, explicit_bad=s.bad is not None,
                       repeats=s.repeats, progress=progress).run()
    else:
        # Nothing of the measuring job's own bookkeeping: no state file, no clock.
        log = Log(None, identity)
        replay = ReplayMeasure(spec, s.flavor, scenarios, thresholds, s, s.replay, n)
        try:
            found = Search(n, good, bad, replay, log, explicit_bad=s.bad is not None,
                           repeats=s.repeats, progress=progress, clock=lambda: 0.0).run()
            if unused := replay.unused():
                raise InputError(f"{unused[0]} is not a step the search asks for (it ends after "
                                 f"step {len(replay.used)}): refused", path=s.replay / "steps")
        except RtgateError as exc:
            text = refused_markdown(exc, log.steps, n)
            (s.out / NAME).unlink(missing_ok=True)
            write_atomic(s.out / MARKDOWN, text)
            print(text)
            raise
    doc = describe(s.series, spec.name, s.flavor, found)
    write_atomic(s.out / NAME, json.dumps(doc.to_json(), indent=2) + "\n")
    text = markdown(doc, replayed=s.replay is not None)
    write_atomic(s.out / MARKDOWN, text)
    print(text)
    print(f"{NAME}: {s.out / NAME}\n{MARKDOWN}: {s.out / MARKDOWN}")
    return int(found.exit)
