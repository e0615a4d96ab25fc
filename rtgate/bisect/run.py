"""`rtgate bisect`'s engine: the series and its ends checked, the search run on a board (or
re-decided from a bisect's rounds), bisect.json and bisect.md written."""

from __future__ import annotations

import json

from rich.console import Console

from rtgate.bisect.doc import MARKDOWN, NAME
from rtgate.bisect.measure import BoardMeasure, ReplayMeasure, step_gate
from rtgate.bisect.patches import describe
from rtgate.bisect.render import markdown, refused_markdown
from rtgate.bisect.search import Measure, Search
from rtgate.bisect.settings import BisectSettings
from rtgate.bisect.state import Log
from rtgate.board.spec import load_target_board, scenarios_of
from rtgate.errors import InputError, RtgateError
from rtgate.gate.thresholds import load_thresholds
from rtgate.jsonfile import write_atomic
from rtgate.kernel.patches import read_series
from rtgate.kernel.plan import flavor_fragment


def bisect(s: BisectSettings) -> int:
    """Run (or replay) the bisect; its exit code."""
    console = Console(stderr=True)
    spec = load_target_board(s.board, "nothing to build, nothing to bisect (use a kernel board "
                                      "such as qemu-arm64)")
    n = len(read_series(s.series))
    good, bad = s.good, n if s.bad is None else s.bad
    if not 0 <= good < bad <= n:
        raise InputError(f"--good {good} --bad {bad}: need 0 <= good < bad <= {n} (patches in "
                         "the series)", path=s.series)
    if s.replay is not None and s.planned_rounds is None:
        raise InputError("--replay needs --planned-rounds, as the bisect had it: without a plan "
                         "fixed before the first round its looks cannot be made again")
    thresholds = load_thresholds(s.thresholds)
    s.out.mkdir(parents=True, exist_ok=True)
    scenarios = scenarios_of(spec, s.scenarios)
    identity = {"series": [p.model_dump() for p in read_series(s.series)], "good": good,
                "bad": bad, "board": spec.name, "flavor": s.flavor, "scenarios": scenarios,
                "repeats": s.repeats, "round_duration_s": s.round_duration,
                "max_time_s": s.max_time, "min_effect_pct": s.min_effect_pct, "alpha": s.alpha,
                # Only when given: a state file of a bisect without a plan still resumes.
                **({"planned_rounds": s.planned_rounds} if s.planned_rounds else {})}

    def progress(line: str) -> None:
        console.print(line, markup=False)

    if s.replay is None:
        log = Log.open(s.out / "state.json", identity)
        # Every step's A/B plan (scenarios, tools, budgets, margins) and the flavor's fragment
        # resolved before the first build: a usage error costs no build and no boot.
        flavor_fragment(s.flavor)
        step_gate(spec, s.flavor, scenarios, thresholds, s, s.out, (None, None),
                  console).resolve()
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
