"""The bisect search (rtgate.bisect.search) with a deterministic measurement standing in for
board time.

``Model`` is a small, exact model of a series on a board: each patch adds a latency (µs), a
candidate is worse/same/better than its base by the difference of the sums against a minimum
effect; some prefixes do not build, stay unknown, or (a revert) do not apply. The search, its
confirmation, the state file and the report are the real code."""

from __future__ import annotations

import json
import math
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from clirun import RunCli

from rtgate.bisect.doc import StepMeasurement, Variant, prefix
from rtgate.bisect.patches import describe, patch_header
from rtgate.bisect.render import markdown
from rtgate.bisect.search import Conclusion, Search
from rtgate.bisect.settings import BisectSettings
from rtgate.bisect.state import Log
from rtgate.errors import InputError
from rtgate.outcome import StepOutcome

DATA = Path(__file__).parents[1] / "data" / "bisect"
MARGIN = 100.0


@dataclass
class Model:
    adds: dict[int, float]
    broken: set[Variant] = field(default_factory=set)
    undecided: set[Variant] = field(default_factory=set)
    needs: dict[int, int] = field(default_factory=dict)  # patch -> the patch it depends on
    base_over_budget: bool = False
    calls: list[tuple[Variant, Variant]] = field(default_factory=list)

    def __call__(self, base: Variant, cand: Variant) -> StepMeasurement:
        self.calls.append((base, cand))
        if any(p in cand and d not in cand for p, d in self.needs.items()):
            return StepMeasurement(outcome=StepOutcome.SKIP, summary="a patch did not apply",
                                   applies=False)
        if cand in self.broken:
            return StepMeasurement(outcome=StepOutcome.SKIP, summary="the kernel did not boot")
        if cand in self.undecided:
            return StepMeasurement(outcome=StepOutcome.UNKNOWN,
                                   summary="undecided at the step's cap")
        diff = sum(self.adds.get(p, 0.0) for p in cand) - sum(self.adds.get(p, 0.0) for p in base)
        outcome = "worse" if diff >= MARGIN else "better" if diff <= -MARGIN else "same"
        return StepMeasurement(outcome=outcome, summary=f"Δ {diff:+.0f} µs",
                               base_ok=not self.base_over_budget)


def bisect(model: Model, n: int = 8, *, good: int = 0, bad: int | None = None,
           state: Path | None = None) -> Conclusion:
    log = Log.open(state, {"n": n, "good": good, "bad": bad})
    return Search(n, good, n if bad is None else bad, model, log, explicit_bad=bad is not None,
                  progress=lambda _: None).run()


def budget(n: int, repeats: int = 2) -> int:
    """The ends, ceil(log2 n) halvings, the parent's repeats and the revert."""
    return 1 + math.ceil(math.log2(n)) + repeats + 1


def test_culprit_in_the_middle_is_named_and_confirmed() -> None:
    model = Model({5: 500.0})
    r = bisect(model)
    assert (r.outcome, r.culprit, r.exit) == ("confirmed", 5, 1)
    assert len(model.calls) <= budget(8)
    assert model.calls.count((prefix(4), prefix(5))) == 2  # culprit against parent, twice
    assert ((0, 1, 2, 3), (1, 2, 3, 4, 6, 7, 8)) not in model.calls
    assert (prefix(0), (1, 2, 3, 4, 6, 7, 8)) in model.calls  # the revert against the good end


@pytest.mark.parametrize("culprit", [1, 8])
def test_first_or_last_patch(culprit: int) -> None:
    model = Model({culprit: 500.0})
    r = bisect(model)
    assert (r.outcome, r.culprit) == ("confirmed", culprit)
    assert len(model.calls) <= budget(8)
    # The last patch's revert is its parent, which the search already found good.
    assert [s.purpose for s in r.steps].count("revert") == (culprit != 8)


def test_single_patch_series_reuses_the_ends_as_culprit_against_parent() -> None:
    model = Model({1: 500.0})
    r = bisect(model, n=1)
    assert (r.outcome, r.culprit) == ("confirmed", 1)
    # The ends are patch 1 against nothing; one repeat more; the revert is the good end itself.
    assert model.calls == [((), (1,)), ((), (1,))]


def test_whole_series_good_is_nothing_to_bisect() -> None:
    model = Model({3: 20.0})
    r = bisect(model)
    assert (r.outcome, r.exit, len(model.calls)) == ("nothing", 0, 1)


def test_explicit_bad_end_not_bad_is_an_input_error_with_the_measurements() -> None:
    r = bisect(Model({7: 500.0}), bad=5)
    assert (r.outcome, r.exit) == ("ends", 2)
    assert r.steps[0].measurement.outcome == "same"


def test_good_end_not_good_is_an_input_error() -> None:
    r = bisect(Model({5: 500.0}, base_over_budget=True))
    assert (r.outcome, r.exit) == ("ends", 2)
    assert "good end" in r.why


def test_ends_that_cannot_be_measured_are_no_verdict() -> None:
    r = bisect(Model({5: 500.0}, broken={prefix(8)}))
    assert (r.outcome, r.exit, len(r.steps)) == ("unmeasured", 3, 1)
    assert "no verdict" in markdown(describe(DATA / "series", "qemu-arm64", "stock", r))


def test_explicit_good_end_narrows_the_search() -> None:
    model = Model({6: 500.0})
    r = bisect(model, good=4)
    assert r.culprit == 6
    assert all(base == prefix(4) or base == prefix(5) for base, _ in model.calls)


@pytest.mark.parametrize("trouble", ["broken", "undecided"])
def test_a_prefix_that_fails_or_stays_unknown_is_skipped(trouble: str) -> None:
    model = Model({6: 500.0}, **{trouble: {prefix(4)}})
    r = bisect(model)
    assert (r.outcome, r.culprit, r.skipped) == ("confirmed", 6, [4])
    assert "Skipped" in markdown(describe(DATA / "series", "qemu-arm64", "stock", r))


def test_a_skipped_parent_leaves_two_candidates_as_git_bisect_does() -> None:
    r = bisect(Model({5: 500.0}, broken={prefix(4)}))
    assert (r.outcome, r.culprit, r.exit) == ("ambiguous", None, 3)
    assert "one of patches 4, 5" in r.why


def test_every_prefix_between_skipped_names_the_range_not_a_culprit() -> None:
    model = Model({5: 500.0}, broken={prefix(4), prefix(3)})
    r = bisect(model, good=2, bad=5)
    assert (r.outcome, r.exit, r.culprit) == ("ambiguous", 3, None)
    assert "one of patches 3, 4, 5" in r.why


def test_small_steps_are_reported_as_spread_not_as_a_culprit() -> None:
    model = Model({3: 40.0, 4: 40.0, 5: 40.0, 6: 40.0})
    r = bisect(model)
    assert (r.outcome, r.culprit, r.exit) == ("spread", 5, 3)
    assert "may be spread" in r.why


def test_revert_that_does_not_apply_rests_on_the_parent_evidence() -> None:
    model = Model({5: 500.0}, needs={6: 5})
    r = bisect(model)
    assert (r.outcome, r.culprit) == ("confirmed", 5)
    assert "does not apply" in r.why


def test_a_revert_still_unknown_at_the_cap_is_not_confirmation() -> None:
    r = bisect(Model({5: 500.0}, undecided={(1, 2, 3, 4, 6, 7, 8)}))
    assert (r.outcome, r.culprit, r.exit) == ("unconfirmed", 5, 3)
    assert "is unknown against the good end" in r.why


def test_a_second_regression_fails_the_revert_check() -> None:
    r = bisect(Model({3: 500.0, 7: 500.0}))
    assert (r.outcome, r.culprit, r.exit) == ("unconfirmed", 3, 3)


def test_interrupted_bisect_resumes_from_its_state_file(tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    whole = Model({5: 500.0})
    expected = bisect(whole)

    class Interrupted(Exception):
        pass

    first = Model({5: 500.0})

    def stops_after_three(base: Variant, cand: Variant) -> StepMeasurement:
        if len(first.calls) == 3:
            raise Interrupted
        return first(base, cand)

    with pytest.raises(Interrupted):
        log = Log.open(state, {"n": 8, "good": 0, "bad": None})
        Search(8, 0, 8, stops_after_three, log, progress=lambda _: None).run()
    assert len(json.loads(state.read_text())["steps"]) == 3
    second = Model({5: 500.0})
    r = bisect(second, state=state)
    assert second.calls == whole.calls[3:]  # nothing measured twice
    assert (r.outcome, r.culprit) == (expected.outcome, expected.culprit)
    assert len(r.steps) == len(expected.steps)


def test_state_of_another_bisect_is_refused(tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    bisect(Model({5: 500.0}), state=state)
    with pytest.raises(InputError, match="another bisect"):
        bisect(Model({5: 500.0}), bad=7, state=state)
    # Same identity, different measurements on record: replay notices the divergence.
    doc = json.loads(state.read_text())
    doc["steps"][1]["measurement"]["outcome"] = "same" if \
        doc["steps"][1]["measurement"]["outcome"] == "worse" else "worse"
    state.write_text(json.dumps(doc))
    with pytest.raises(InputError, match="not what this bisect asks next"):
        bisect(Model({5: 500.0}), state=state)


def test_report_names_the_patch_file_subject_and_author() -> None:
    doc = describe(DATA / "series", "qemu-arm64", "stock", bisect(Model({5: 500.0})))
    p = doc.culprit_patch
    assert p is not None and p.file.startswith("0005-")
    assert "planted latency" in p.subject and not p.subject.startswith("[PATCH")
    assert p.author == "rtgate <rtgate@localhost>"
    text = markdown(doc)
    assert "culprit found and confirmed" in text and "| 1 | ends |" in text
    json.dumps(doc.to_json())


def test_patch_header_unfolds_subject() -> None:
    h = patch_header(DATA / "0005-rtgate-planted-latency-on.patch")
    assert "\n" not in h["subject"]


def rtgate_bisect(rtgate_cli: RunCli,
                  tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return rtgate_cli("bisect", "--series", str(DATA / "series"), "--round-duration", "2s",
                      "--step-time", "1m", "--out", str(tmp_path / "out"), *args)


def test_cli_refuses_a_board_that_runs_its_own_kernel(rtgate_cli: RunCli, tmp_path: Path) -> None:
    proc = rtgate_bisect(rtgate_cli, tmp_path, "--board", "local", "--flavor", "stock")
    assert proc.returncode == 2, proc.stderr
    assert "runs its own kernel" in proc.stderr


def test_cli_refuses_ends_outside_the_series_before_any_build(rtgate_cli: RunCli,
                                                              tmp_path: Path) -> None:
    proc = rtgate_bisect(rtgate_cli, tmp_path, "--board", "qemu-arm64", "--flavor", "stock",
                         "--good", "5", "--bad", "9")
    assert proc.returncode == 2, proc.stderr
    assert "need 0 <= good < bad <= 8" in proc.stderr and "series" in proc.stderr
    assert not (tmp_path / "out" / "variants").exists()



def test_a_steps_margin_may_exceed_the_gates_100_pct_up_to_its_bound(rtgate_cli: RunCli,
                                                                      tmp_path: Path) -> None:
    # 900 % is parsed (the run goes on to check the ends, which are wrong here: exit 2 there).
    proc = rtgate_bisect(rtgate_cli, tmp_path, "--board", "qemu-arm64", "--flavor", "stock",
                         "--good", "5", "--bad", "9", "--min-effect-pct", "900")
    assert proc.returncode == 2, proc.stderr
    assert "need 0 <= good < bad <= 8" in proc.stderr
    # Past the documented bound: one line naming the option, exit 2, nothing built.
    proc = rtgate_bisect(rtgate_cli, tmp_path, "--board", "qemu-arm64", "--flavor", "stock",
                         "--min-effect-pct", "10001")
    assert proc.returncode == 2, proc.stderr
    assert "argument --min-effect-pct: must be a percentage in (0, 10000]: 10001" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_the_gates_margin_stays_at_most_100_pct(rtgate_cli: RunCli, tmp_path: Path) -> None:
    proc = rtgate_cli("ab", "--board", "local", "--scenarios", "idle", "--round-duration", "2s",
                      "--max-time", "1m", "--min-effect-pct", "900", "--out",
                      str(tmp_path / "ab"))
    assert proc.returncode == 2, proc.stderr
    assert "argument --min-effect-pct: must be a percentage in (0, 100]: 900" in proc.stderr


@pytest.mark.parametrize("pct", [0.0, -5.0, 10000.5])
def test_bisect_settings_refuse_a_margin_outside_the_bound(pct: float, tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"a bisect step's margin must be in \(0, 10000\] %"):
        BisectSettings(board="qemu-arm64", flavor="stock", series=DATA / "series-4", good=0,
                       bad=None, scenarios=None, round_duration=10, max_time=60,
                       planned_rounds=None, repeats=2, out=tmp_path, replay=None, scale=None,
                       thresholds=DATA / "thresholds.yml", min_effect_pct=pct, alpha=None,
                       runtime="host", trust=None)
