"""rtla osnoise as a scenario's measuring tool (issue 38): its plan and guest script, the result
assembled from a real guest capture, budgets on its own metrics (thresholds v3; v2 still read),
and the gate's checks in JUnit and the comment, through the real `rtgate check`."""

from __future__ import annotations

import math
import shlex
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from clirun import RunCli
from junitparser import JUnitXml
from pydantic import ValidationError

from rtgate.ab import plan as planning
from rtgate.ab.settings import RoundSettings
from rtgate.board.qemu import guestscript
from rtgate.board.spec import load_board
from rtgate.cyclictest.version import parse_help
from rtgate.errors import InputError
from rtgate.gate import budgetdiff
from rtgate.gate.thresholds import Budget, Thresholds, load_thresholds
from rtgate.gate.verdict import Verdict, evaluate
from rtgate.harness.assemble import RunInfo, assemble
from rtgate.harness.environment import Environment
from rtgate.harness.plan import Params, make_plan
from rtgate.harness.runner import RunLog
from rtgate.harness.scenario import load_scenario
from rtgate.outcome import Comparison
from rtgate.result import Result
from rtgate.stats import ab
from rtgate.tools.osnoise import OsnoiseCommand
from rtgate.tools.rounds import round_of
from rtgate.trace import autoanalysis

ROOT = Path(__file__).resolve().parents[2]
CAPTURE = ROOT / "tests" / "data" / "rtla" / "guest-osnoise-top.stdout"  # rtla 6.12, the guest
CAPS = parse_help((ROOT / "tests" / "data" / "help" / "cyclictest-2.40.txt").read_text())
# CPU, max single noise, % CPU available, as the capture prints them.
CPUS = [(0, 21178, 13.94567), (1, 14635, 17.74519)]


def _plan(duration_s: int = 20):
    scenario, source = load_scenario("osnoise-net")
    params = Params(cpus=2, port=5201, tmpdir="/t", scale=1.0, timeout_s=60)
    return make_plan(scenario, source, CAPS, duration_s=duration_s, params=params,
                     outdir=guestscript.RAW)


def test_the_shipped_scenario_runs_rtla_osnoise_top_in_the_guest() -> None:
    plan = _plan()
    assert plan.tool == "osnoise" and isinstance(plan.measure, OsnoiseCommand)
    assert plan.command.argv == ["rtla", "osnoise", "top", "-q", "-d", "20s", "-p", "1000000",
                                 "-r", "900000"]
    script = guestscript.render(plan, ["iperf3-server", "iperf3-client"], epoch=0)
    assert (f"  {shlex.join(plan.command.argv)} >{guestscript.RAW}/osnoise.stdout "
            f"2>{guestscript.RAW}/osnoise.stderr &\n  ct=$!") in script
    assert f"{guestscript.STATE}/osnoise-rc" in script and "cyclictest " not in script
    assert f"available_tracers >{guestscript.STATE}/tracers" in script


def _assembled(tmp_path: Path, capture: Path = CAPTURE, rc: int = 0, duration_s: int = 5,
               cpus: str | None = None, cpus_online: int = 2) -> Result:
    """The capture as a run of the shipped scenario planned for ``duration_s`` (the capture
    is of ``-d 5s``; its screen says 6 s) on a guest with ``cpus_online`` CPUs."""
    rawdir = tmp_path / "raw"
    rawdir.mkdir(exist_ok=True)
    (rawdir / "osnoise.stdout").write_bytes(capture.read_bytes())
    (rawdir / "osnoise.stderr").write_text("" if rc == 0 else "osnoise: tracer busy\n")
    plan = _plan(duration_s)
    measure = replace(plan.measure, stdout=str(rawdir / "osnoise.stdout"))
    host = replace(plan, measure=measure if cpus is None else replace(measure, cpus=cpus))
    env = Environment(kernel_release="6.12.117", kernel_version="#1 SMP PREEMPT_RT",
                      machine="aarch64", preempt_rt=True, tools={"iperf3": "3.12"},
                      cpus_online=cpus_online)
    info = RunInfo(run_id="r", board="qemu-arm64", virtual=True, flavor="rt",
                   cyclictest_version="2.5", rtla_version="6.12.117")
    return assemble(host, RunLog(cyclictest_rc=rc), env, rawdir, info)


def test_the_result_is_osnoise_s_own_with_every_cpu_as_printed(tmp_path: Path) -> None:
    result = _assembled(tmp_path)
    assert result.status == "complete", result.reasons
    assert (result.tool.name, result.tool.version) == ("osnoise", "6.12.117")
    assert result.tool.cmdline == "rtla osnoise top -q -d 5s -p 1000000 -r 900000"
    assert result.environment["tools"]["rtla"] == "6.12.117"
    assert result.environment["cyclictest_notes"] == []
    assert [(n.cpu, n.max_single_us, n.cpu_available_pct) for n in result.noise or []] == CPUS
    # No wake-up latency in it: nothing a latency budget or A/B could take for one.
    assert result.threads == [] and result.totals.samples == 0 and result.totals.max_us is None


def test_rtla_failing_is_partial_with_its_message(tmp_path: Path) -> None:
    result = _assembled(tmp_path, rc=1)
    assert result.status == "partial"
    assert "osnoise exited with status 1: osnoise: tracer busy" in result.reasons


def test_a_run_cut_short_is_partial_never_a_pass(tmp_path: Path) -> None:
    """The capture's screen says 6 s: as the end of a 1 h plan (rtla exiting 0 early) it is a
    run cut short; as the end of a 7 s plan it is within rtla's whole seconds."""
    assert _assembled(tmp_path, duration_s=7).status == "complete"
    result = _assembled(tmp_path, duration_s=3600)
    assert result.status == "partial"
    assert result.reasons == ["osnoise measured 6 s of the 3600 s planned (cut short)"]


def test_a_screen_missing_cpus_the_plan_measures_is_partial(tmp_path: Path) -> None:
    assert _assembled(tmp_path, cpus="0-1").status == "complete"
    result = _assembled(tmp_path, cpus="0-3")
    assert (result.status, result.reasons) == ("partial", [
        "osnoise shows no line for CPU 2, 3 of the CPUs planned (0-3)"])
    result = _assembled(tmp_path, cpus_online=4)  # no -c: every online CPU
    assert (result.status, result.reasons) == ("partial", [
        "osnoise shows 2 of the 4 CPUs online (every CPU planned)"])


def test_a_cut_screen_is_incomplete_through_rtgate_check(rtgate_cli: RunCli,
                                                          tmp_path: Path) -> None:
    """The capture cut by hand: its duration line edited to 0 00:00:01 (rtla exiting 0 after
    1 s) and CPU 1's line deleted, judged by a budget both CPUs' numbers meet: exit 3."""
    lines = CAPTURE.read_text().splitlines(keepends=True)
    assert lines[1].startswith("duration:   0 00:00:06 ") and lines[4].startswith("  1 #5 ")
    cut = tmp_path / "cut.stdout"
    cut.write_text("".join([lines[0], lines[1].replace("00:00:06", "00:00:01"),
                            *lines[2:4], *lines[5:]]))
    result = _assembled(tmp_path, capture=cut, duration_s=3600)
    assert result.reasons == ["osnoise measured 1 s of the 3600 s planned (cut short)",
                              "osnoise shows 1 of the 2 CPUs online (every CPU planned)"]
    path = result.write(tmp_path / "result.json")
    budgets = tmp_path / "budgets.yml"
    budgets.write_text("schema: rtgate/thresholds/v3\nbudgets:\n  - board: '*'\n"
                       "    flavor: '*'\n    scenario: '*'\n    tool: osnoise\n"
                       "    max_single_noise_us: 100000\n    reason: t\n")
    proc = rtgate_cli("check", path, "--thresholds", budgets, "--junit", tmp_path / "j.xml")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "cut short" in proc.stdout + proc.stderr


def budget(**fields: object) -> Budget:
    return Budget.model_validate({"board": "*", "flavor": "*", "scenario": "*", "reason": "t",
                                  **fields})


def test_budgets_bound_only_their_tools_metrics() -> None:
    assert budget(tool="osnoise", max_single_noise_us=100).max_us is None
    with pytest.raises(ValidationError, match="max_us: not a metric of osnoise "
                                              r"\(OS noise: max_single_noise_us"):
        budget(tool="osnoise", max_us=100, max_single_noise_us=100)
    with pytest.raises(ValidationError, match="max_single_noise_us: not a metric of cyclictest"):
        budget(max_us=100, max_single_noise_us=100)
    with pytest.raises(ValidationError, match="a budget for osnoise bounds at least one of "
                                              "max_single_noise_us, min_cpu_available_pct"):
        budget(tool="osnoise")
    with pytest.raises(ValidationError, match="a budget for timerlat bounds max_us"):
        budget(tool="timerlat", avg_us=5)
    with pytest.raises(ValidationError, match="min_samples: osnoise counts no samples"):
        budget(tool="osnoise", max_single_noise_us=100, min_samples=1000)
    with pytest.raises(ValidationError, match="unknown tool 'osnoize'"):
        budget(tool="osnoize", max_single_noise_us=1)


def test_v2_files_still_read_and_osnoise_needs_v3(tmp_path: Path) -> None:
    assert load_thresholds(ROOT / "thresholds.yml").schema_ == "rtgate/thresholds/v3"
    v2 = tmp_path / "v2.yml"
    body = ("budgets:\n  - {board: '*', flavor: '*', scenario: '*', max_us: 100, "
            "reason: r}\n")
    v2.write_text("schema: rtgate/thresholds/v2\n" + body)
    assert load_thresholds(v2).budgets[0].max_us == 100
    v2.write_text("schema: rtgate/thresholds/v2\nbudgets:\n  - {board: '*', flavor: '*', "
                  "scenario: '*', tool: osnoise, max_single_noise_us: 100, reason: r}\n")
    with pytest.raises(InputError, match="budgets.0: osnoise's budgets need schema "
                                         "'rtgate/thresholds/v3'"):
        load_thresholds(v2)


def test_the_gate_judges_osnoise_on_its_own_metrics(tmp_path: Path) -> None:
    result = _assembled(tmp_path)
    source = tmp_path / "result.json"

    def verdicts(**fields: object) -> list[tuple[str, Verdict, float | None]]:
        ev = evaluate(result, budget(tool="osnoise", **fields), source)
        return [(c.name, c.verdict, c.measured) for c in ev.checks]

    assert verdicts(max_single_noise_us=21178, min_cpu_available_pct=13.9) == [
        ("max_single_noise_us <= 21178", Verdict.PASS, 21178),
        ("min_cpu_available_pct >= 13.9", Verdict.PASS, 13.94567)]
    assert verdicts(max_single_noise_us=21177) == [
        ("max_single_noise_us <= 21177", Verdict.FAIL, 21178)]
    assert verdicts(min_cpu_available_pct=14) == [
        ("min_cpu_available_pct >= 14", Verdict.FAIL, 13.94567)]
    cut = result.model_copy(update={"noise": [], "status": "partial", "reasons": ["cut"]})
    ev = evaluate(cut, budget(tool="osnoise", max_single_noise_us=1), source)
    assert [(c.verdict, c.why) for c in ev.checks] == [
        (Verdict.INCOMPLETE, "the result has no max_single_noise_us (the longest single noise on "
                             "any CPU); result is partial: cut")]


def test_rtgate_check_shows_the_noise_checks_in_junit_and_the_comment(
        rtgate_cli: RunCli, tmp_path: Path) -> None:
    result_path = _assembled(tmp_path).write(tmp_path / "result.json")
    budgets = tmp_path / "thresholds.yml"
    budgets.write_text(
        "schema: rtgate/thresholds/v3\nbudgets:\n"
        # The same key for cyclictest: never the one that judges an osnoise result.
        "  - {board: qemu-arm64, flavor: rt, scenario: osnoise-net, max_us: 1, reason: ct}\n"
        "  - {board: qemu-arm64, flavor: rt, scenario: osnoise-net, tool: osnoise,\n"
        "     max_single_noise_us: 20000, min_cpu_available_pct: 10, reason: noise}\n")
    junit, md = tmp_path / "junit.xml", tmp_path / "summary.md"
    proc = rtgate_cli("check", result_path, "--thresholds", budgets, "--junit", junit,
                      "--markdown", md)
    assert proc.returncode == 1, proc.stderr  # 21178 µs over 20000: budget exceeded
    cases = {case.name.split(": ", 1)[1]: case
             for suite in JUnitXml.fromfile(str(junit)) for case in suite}
    assert set(cases) == {"max_single_noise_us <= 20000", "min_cpu_available_pct >= 10"}
    failed = cases["max_single_noise_us <= 20000"].result[0].message
    assert "max_single_noise_us measured 21178 µs, budget <= 20000 µs" in failed
    assert not cases["min_cpu_available_pct >= 10"].result
    assert f"{budgets}:4" in junit.read_text()  # the osnoise budget judged it
    comment = md.read_text()
    assert "| max_single_noise_us | 21178 µs | <= 20000 µs |" in comment
    assert "| min_cpu_available_pct | 13.95 % | >= 10 % |" in comment


def _round(tmp_path: Path, run: str, single_us: list[int]) -> ab.Round:
    """A round of the capture with each CPU's longest single noise set (the rest as printed)."""
    result = _assembled(tmp_path)
    noise = [n.model_copy(update={"max_single_us": s, "max_noise_us": max(s, n.max_noise_us)})
             for n, s in zip(result.noise or [], single_us, strict=True)]
    return round_of(result.model_copy(update={"run_id": run, "noise": noise}))


def test_ab_compares_osnoise_on_its_own_primary_metric(tmp_path: Path) -> None:
    # The plan: the tool's primary metric, not a latency's (no record pre-registers one).
    target = planning.RoundTarget("rt", "osnoise-net", ("osnoise", "osnoise"))
    plan = planning.resolve(load_board("qemu-arm64"), [target],
                            load_thresholds(ROOT / "thresholds.yml"),
                            RoundSettings(out=tmp_path / "ab", round_duration=10,
                                          max_time=3600))
    [key_plan] = plan.keys.values()
    assert key_plan.primary == "max_single_noise_us"
    a = [_round(tmp_path, f"a{i}", [20000 + 300 * i, 14000]) for i in range(4)]
    worse = [_round(tmp_path, f"b{i}", [40000 + 300 * i, 14000]) for i in range(4)]
    same = [_round(tmp_path, f"s{i}", [20000 + 300 * (3 - i), 14000]) for i in range(4)]
    assert [r.metric("max_single_noise_us") for r in a] == [20000, 20300, 20600, 20900]
    assert a[0].metric("p99") is None  # no latency histogram in an osnoise round

    def decide(b: list[ab.Round]) -> ab.Decision:
        return ab.decide_key(ab.KeyRounds(("qemu-arm64", "rt", "osnoise-net"), a, b,
                                          ab.Margin(0.10), primary=key_plan.primary), 0.01)

    found = decide(worse)
    assert found.outcome is Comparison.WORSE and found.headline is not None
    assert found.headline.metric == "max_single_noise_us"
    assert found.headline.ratio == pytest.approx(
        math.exp(np.log([40000, 40300, 40600, 40900]).mean()
                 - np.log([20000, 20300, 20600, 20900]).mean()))
    assert [e.metric for e in found.effects] == ["max_single_noise_us"]
    assert decide(same).outcome is Comparison.SAME



def test_rpi5_by_data_alone_parse_then_check(rtgate_cli: RunCli, tmp_path: Path) -> None:
    """A Pi's osnoise output judged by data alone (`rtgate parse`, `rtgate check`): the tool
    and its metrics come from the file, the budget is rpi5's osnoise one. (The capture is the
    guest's; the board name is what the file is judged as, as for any pasted output.)"""
    result = tmp_path / "result.json"
    proc = rtgate_cli("parse", CAPTURE, "--board", "rpi5", "--scenario", "osnoise-net",
                      "--flavor", "rt", "-o", result)
    assert proc.returncode == 0, proc.stderr
    budgets = tmp_path / "thresholds.yml"
    budgets.write_text(
        "schema: rtgate/thresholds/v3\nbudgets:\n"
        "  - {board: rpi5, flavor: rt, scenario: '*', max_us: 155, reason: latency}\n"
        "  - {board: rpi5, flavor: rt, scenario: '*', tool: osnoise,\n"
        "     max_single_noise_us: 25000, min_cpu_available_pct: 10, reason: noise}\n")
    junit = tmp_path / "junit.xml"
    proc = rtgate_cli("check", result, "--thresholds", budgets, "--junit", junit)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"{budgets}:4" in junit.read_text() and "max_us" not in junit.read_text()


def test_the_local_board_ends_exit_3_saying_what_the_kernel_lacks(rtgate_cli: RunCli,
                                                                  tmp_path: Path) -> None:
    """Never a cyclictest run in osnoise's place, never a pass."""
    why = autoanalysis.missing(tracer="osnoise") or "rtgate runs osnoise on qemu-arm64 only so far"
    bench = rtgate_cli("bench", "--scenario", "osnoise-net", "--duration", "5", "--out",
                       str(tmp_path / "b"))
    assert bench.returncode == 3, bench.stderr
    assert "'osnoise-net' measures with osnoise, which cannot run on board 'local'" in " ".join(
        bench.stderr.split())
    assert why in " ".join(bench.stderr.split()), bench.stderr
    assert not (tmp_path / "b" / "result.json").exists()


def test_thresholds_diff_words_the_noise_budgets(tmp_path: Path) -> None:
    def file(name: str, single: int, pct: float) -> Thresholds:
        path = tmp_path / name
        path.write_text("schema: rtgate/thresholds/v3\nbudgets:\n  - {board: qemu-arm64, "
                        "flavor: '*', scenario: osnoise-net, tool: osnoise, "
                        f"max_single_noise_us: {single}, min_cpu_available_pct: {pct}, "
                        "reason: r}\n")
        return load_thresholds(path)

    [change] = budgetdiff.diff(file("old.yml", 20000, 10), file("new.yml", 30000, 20))
    assert [(f.field, f.loosens) for f in change.fields] == [
        ("max_single_noise_us", True), ("min_cpu_available_pct", False)]
    assert change.verdict == "mixed"
    assert "min_cpu_available_pct 10 → 20 %" in change.text
