"""rtla timerlat hist as a measurement tool: the parser on real captures (tests/data/timerlat/,
from the qemu-arm64 guest), the scenario and guest script, the result assembled from a run's raw
files, and the local board refusing a timerlat scenario through the real CLI."""

from __future__ import annotations

import json
import math
import shlex
from dataclasses import replace
from pathlib import Path

import pytest
from clirun import RunCli

from rtgate.board.lava.driver import LavaBoard
from rtgate.board.qemu import guestscript
from rtgate.board.spec import load_board
from rtgate.board.tuning import Applied, load_profile, parse_readback
from rtgate.cyclictest.version import parse_help
from rtgate.errors import InfraError, InputError
from rtgate.harness.assemble import RunInfo, assemble
from rtgate.harness.environment import Environment
from rtgate.harness.plan import Params, make_plan
from rtgate.harness.runner import RunLog
from rtgate.harness.scenario import Scenario, load_scenario
from rtgate.result import Percentile, load_result
from rtgate.timerlat import hist
from rtgate.timerlat.command import TimerlatCommand, TimerlatSpec
from rtgate.trace import autoanalysis

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "timerlat"
NET = DATA / "rt-net.stdout"  # rt, timerlat-net, limit 20000 µs: overflows
WIDE = DATA / "stock-idle-wide.stdout"  # stock, no load, limit 200000 µs: none
BUCKET10 = DATA / "rt-cpu1-bucket10.stdout"  # rt, -c 1 -b 10 -p 2000, limit 50000 µs
NET_NANO = DATA / "rt-net-nano.stdout"  # rt, timerlat-net in ns: -n -E 20000 -b 1000
HELP = ROOT / "tests" / "data" / "help" / "cyclictest-2.40.txt"


def test_series_per_cpu_and_context_totals_are_the_threads() -> None:
    r = hist.parse(NET, limit_us=20000, bucket_us=1, period_us=1000, board="qemu-arm64",
                   virtual=True, scenario="timerlat-net", flavor="rt")
    assert r.status == "complete" and r.tool.name == "timerlat"
    assert r.sources[0].format == "timerlat-hist"
    assert set(r.contexts) == {"irq", "thread"}
    irq, thread = r.contexts["irq"], r.contexts["thread"]
    # The columns IRQ-000 Thr-000 IRQ-001 Thr-001, as printed.
    assert [(t.thread, t.context, t.cpu) for t in irq.threads + thread.threads] == [
        (0, "irq", 0), (2, "irq", 1), (1, "thread", 0), (3, "thread", 1)]
    assert r.threads == thread.threads and r.totals == thread.totals
    # The 'count/min/avg/max' and 'over:' lines, exactly; ALL's agree.
    assert [(t.samples, t.min_us, t.max_us, t.histogram.overflows)  # type: ignore[union-attr]
            for t in thread.threads] == [(16956, 25, 52144, 8), (15952, 34, 37928, 17)]
    assert [(t.samples, t.min_us, t.max_us, t.histogram.overflows)  # type: ignore[union-attr]
            for t in irq.threads] == [(16956, 4, 26930, 2), (15952, 4, 27965, 3)]
    assert (r.totals.samples, r.totals.min_us, r.totals.max_us) == (32908, 25, 52144)
    assert (irq.totals.samples, irq.totals.max_us) == (32908, 27965)
    # Overflowed samples leave only rtla's integer averages, and a tail known as ">= limit".
    assert r.totals.avg_truncated and [t.avg_us for t in thread.threads] == [434, 510]
    assert r.totals.p99_99 == Percentile(value_us=20000, relation=">=")
    assert r.totals.stddev_us is None
    last = thread.threads[1].histogram
    assert last is not None and last.limit_us == 20000 and last.bucket_us == 1
    assert last.buckets[-2:] == [(19234, 1), (19979, 1)]
    assert sum(n for _, n in last.buckets) + last.overflows == 15952
    assert all(t.interval_us == 1000 for t in r.threads)


def test_exact_mean_without_overflow() -> None:
    r = hist.parse(WIDE, limit_us=200000)
    assert r.status == "complete"
    assert not r.totals.avg_truncated and r.totals.stddev_us is not None
    # rtla printed 142 (thread) and 100 (IRQ): the sums cut; the histogram's mean is exact.
    assert int(r.totals.avg_us or 0) == 142 and r.totals.avg_us != 142
    assert int(r.contexts["irq"].totals.avg_us or 0) == 100
    assert r.totals.max_us == 10425 and r.totals.p99_99 == Percentile(value_us=9178)


def test_wide_bins_and_one_cpu() -> None:
    r = hist.parse(BUCKET10, limit_us=50000, bucket_us=10, period_us=2000)
    (t,) = r.threads
    assert (t.cpu, t.context, t.samples, t.min_us, t.max_us) == (1, "thread", 8419, 32, 55732)
    assert t.histogram is not None and t.histogram.bucket_us == 10
    assert all(v % 10 == 0 for v, _ in t.histogram.buckets)
    # Percentiles of 10 µs bins would not be exact: absent, so a budget on them is incomplete.
    assert r.totals.p99 is None and r.totals.stddev_us is None and r.totals.avg_truncated


@pytest.mark.parametrize(("scenario", "capture"), [
    ("timerlat-idle-wide.yml", WIDE), ("timerlat-cpu1-bucket10.yml", BUCKET10)])
def test_a_captures_scenario_file_measures_as_the_capture_was_taken(scenario: str,
                                                                    capture: Path) -> None:
    """The scenario files kept beside the captures (README.md) say how each was taken, unit
    included: the harness measures in ns unless a scenario says `nsecs: false`, so a µs
    capture's scenario must say it (before 2026-11-28 timerlat-cpu1-bucket10.yml did not, and
    read as an `rtla -n … -b 10000` run). Its command line is the README's, and the
    tool's resolution before any round is the capture's."""
    from rtgate.timerlat.command import build
    from rtgate.tools.timerlat import TOOL

    spec = load_scenario(str(DATA / scenario))[0].options()
    assert isinstance(spec, TimerlatSpec)
    argv = shlex.join(build(spec, duration_s=20, outdir="out").argv)
    row = next(line for line in (DATA / "README.md").read_text().splitlines()
               if line.startswith(f"| `{capture.name}` |"))
    assert row.rstrip(" |").endswith(f"`{argv}`"), (row, argv)
    parsed = hist.parse(capture, limit_us=spec.histogram_us, bucket_us=spec.bucket_us,
                        period_us=spec.period_us or 1000)
    assert TOOL.resolution_us(spec) == parsed.resolution_us == 1.0


def _cut(tmp_path: Path, source: Path, lines: int) -> Path:
    path = tmp_path / f"cut-{lines}.stdout"
    path.write_text("".join(source.read_text().splitlines(keepends=True)[:lines]))
    return path


@pytest.mark.parametrize(("mutate", "line", "message"), [
    (lambda t: "".join(t.splitlines(keepends=True)[:-4]), 3264, "ends before 'count:' of ALL"),
    (lambda t: t.replace("count:    16956     16956     15952", "count:    16956     16957     "
                         "15952"), 3260, "count 16957, but its histogram holds"),
    (lambda t: t.replace("max:      27965     52144 ", "max:      27965     52145 "), 3268,
     "ALL thread max 52145, but the CPUs' series give 52144"),
    # Read as ns, the µs file contradicts itself (rtla -n prints its maxima in ns too).
    (lambda t: t.replace("# Time unit is microseconds (us)", "# Time unit is nanoseconds (ns)"),
     3263, "IRQ CPU 0: 2 over the limit of 20000000 ns, but max 26930 ns"),
    (lambda t: t.replace("\n19979 ", "\n19979x"), 3258, "a histogram row"),
    # Not ASCII digits, and more digits than an unsigned long long: refused, not a crash.
    (lambda t: t.replace("\n19979 ", "\n1997\u00b2 "), 3258, "a histogram row"),
    (lambda t: t.replace("count:    16956", "count:    " + "9" * 30), 3260, "'count:' expected"),
])
def test_malformed_or_cut_short_is_one_line_naming_file_and_line(
        tmp_path: Path, mutate: object, line: int, message: str) -> None:
    path = tmp_path / "bad.stdout"
    path.write_text(mutate(NET.read_text()))  # type: ignore[operator]
    with pytest.raises(InputError) as err:
        hist.parse(path, limit_us=20000)
    text = err.value.oneline()
    assert text.startswith(f"{path}: line {line}: ") and message in text, text
    assert "\n" not in text


def test_wrong_histogram_limit_is_refused_not_misread() -> None:
    with pytest.raises(InputError, match=r"line 252: bin 256 .*pass the run's -E and -b"):
        hist.parse(NET, limit_us=256)  # the capture's bins go to 19979


def test_without_the_limit_it_is_unknown_and_the_overflowed_tail_a_lower_bound() -> None:
    # rtla omits empty rows: the limit is not in the file, never rtla's default 256 assumed.
    r = hist.parse(NET)
    histogram = r.threads[0].histogram
    assert histogram is not None and not histogram.limit_known
    # Above its highest row (19979) and every maximum that did not overflow.
    assert histogram.limit_us == 19980
    assert r.totals.p99_99 == Percentile(value_us=19980, relation=">=")
    assert any("limit (-E × -b) is not in the file" in n for n in r.notes)


def test_rtgate_parse_cli(rtgate_cli: RunCli, tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    ok = rtgate_cli("parse", str(WIDE), "-o", str(out), "--timerlat-limit", "200000", "--board",
                    "qemu-arm64")
    assert ok.returncode == 0, ok.stderr
    assert load_result(out).contexts["thread"].totals.samples == 39036
    cut = _cut(tmp_path, WIDE, 40)
    bad = rtgate_cli("parse", str(cut), "-o", str(tmp_path / "no.json"), "--timerlat-limit",
                     "200000")
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines() == [
        f"rtgate: {cut}: line 40: the output ends before 'over:' (cut short?)"]
    assert not (tmp_path / "no.json").exists()


def test_scenario_block_is_checked() -> None:
    with pytest.raises(ValueError, match="not a multiple of bucket_us"):
        TimerlatSpec(histogram_us=1005, bucket_us=10)
    with pytest.raises(ValueError, match="rtla takes 10 to"):
        TimerlatSpec(histogram_us=50, bucket_us=10)


def _plan(scenario: Scenario, source: Path, duration_s: int = 20):
    params = Params(cpus=2, port=5201, tmpdir="/t", scale=1.0, timeout_s=60)
    return make_plan(scenario, source, parse_help(HELP.read_text()), duration_s=duration_s,
                     params=params, outdir=guestscript.RAW)


def test_shipped_scenario_runs_rtla_in_the_guest_instead_of_cyclictest() -> None:
    scenario, source = load_scenario("timerlat-net")
    plan = _plan(scenario, source)
    assert plan.tool == "timerlat" and isinstance(plan.measure, TimerlatCommand)
    # In ns (rtla -n, timerlat.nsecs): 20 ms is more than 1 ns rows may span, so bins of 1000
    # ns over the whole 20 ms, as many rows as in µs.
    assert plan.command.argv == ["rtla", "timerlat", "hist", "-k", "--no-aa", "-d", "20s",
                                  "-n", "-E", "20000", "-b", "1000"]
    assert (plan.measure.limit_us, plan.measure.bucket_ns) == (20000, 1000)
    script = guestscript.render(plan, ["iperf3-server", "iperf3-client"], epoch=0)
    assert shlex.join(plan.command.argv) in script
    assert f">{guestscript.RAW}/timerlat.stdout 2>{guestscript.RAW}/timerlat.stderr &" in script
    assert f"{guestscript.STATE}/timerlat-rc" in script and "cyclictest" not in script
    # The same run path as cyclictest's: loads, markers, the hang guard, sending raw/ back.
    for marker in ("RTGATE-LOADS-UP", "RTGATE-MEASURE-START", "RTGATE-MEASURE-END",
                   f"{guestscript.STATE}/hung", "start_load iperf3-server", "RTGATE-BEGIN"):
        assert marker in script
    pinned = TimerlatSpec(cpus="1", bucket_us=10, histogram_us=50000, period_us=2000,
                          nsecs=False)
    plan = _plan(scenario.model_copy(update={"tool_options": {"timerlat": pinned}}), source)
    assert plan.command.argv[-8:] == [
        "-E", "5000", "-b", "10", "-p", "2000", "-c", "1"] and "-n" not in plan.command.argv
    # 10 µs bins in ns: -b counts ns, so 10000 of them; the limit and its entries stay.
    wide = pinned.model_copy(update={"nsecs": True})
    plan = _plan(scenario.model_copy(update={"tool_options": {"timerlat": wide}}), source)
    assert plan.command.argv[-9:] == [
        "-n", "-E", "5000", "-b", "10000", "-p", "2000", "-c", "1"]
    assert isinstance(plan.measure, TimerlatCommand)
    assert (plan.measure.limit_us, plan.measure.bucket_ns) == (50000, 10000)


def _raw_run(tmp_path: Path, capture: Path, rc: int, nsecs: bool = False):
    scenario, source = load_scenario("timerlat-net")
    if not nsecs:  # a capture in µs: the run's command without -n
        options = scenario.options().model_copy(update={"nsecs": False})
        scenario = scenario.model_copy(update={"tool_options": {"timerlat": options}})
    rawdir = tmp_path / "raw"
    rawdir.mkdir()
    plan = _plan(scenario, source)
    assert isinstance(plan.measure, TimerlatCommand)
    (rawdir / "timerlat.stdout").write_bytes(capture.read_bytes())
    (rawdir / "timerlat.stderr").write_text("" if rc == 0 else "Could not apply config\n")
    host = replace(plan, measure=replace(plan.measure, stdout=str(rawdir / "timerlat.stdout")))
    env = Environment(kernel_release="6.12.117", kernel_version="#1 SMP PREEMPT_RT",
                      machine="aarch64", preempt_rt=True,
                      tools={"stress-ng": None, "iperf3": "3.12"})
    info = RunInfo(run_id="r", board="qemu-arm64", virtual=True, flavor="rt",
                   cyclictest_version="2.5", rtla_version="6.12.117")
    return assemble(host, RunLog(cyclictest_rc=rc), env, rawdir, info)


def test_assembled_result_names_rtla_and_its_command_line(tmp_path: Path) -> None:
    result = _raw_run(tmp_path, NET, 0)
    assert result.status == "complete", result.reasons
    assert (result.tool.name, result.tool.version) == ("timerlat", "6.12.117")
    assert result.tool.cmdline == "rtla timerlat hist -k --no-aa -d 20s -E 20000 -b 1"
    assert result.environment["tools"]["rtla"] == "6.12.117"
    assert result.totals.max_us == 52144 and set(result.contexts) == {"irq", "thread"}


def test_assembled_result_in_nanoseconds(tmp_path: Path) -> None:
    """The harness's own -n run (the e2e test's capture): min/avg/max to the ns, the scenario's
    whole 20 ms in 1 µs bins, so the percentiles are as exact as in a µs run."""
    result = _raw_run(tmp_path, NET_NANO, 0, nsecs=True)
    assert result.status == "complete", result.reasons
    assert result.tool.cmdline == "rtla timerlat hist -k --no-aa -d 20s -n -E 20000 -b 1000"
    assert result.resolution_us == 0.001 and result.environment["cyclictest_notes"] == []
    thread, irq = result.contexts["thread"], result.contexts["irq"]
    assert [(t.samples, t.min_us, t.max_us) for t in thread.threads] == [
        (4773, 31.872, 99530.128), (4649, 33.36, 82840.0)]
    assert (irq.totals.min_us, irq.totals.max_us) == (4.992, 99299.584)
    assert [(t.histogram.overflows, t.histogram.limit_us, t.histogram.bucket_us,  # type: ignore[union-attr]
             t.histogram.log_linear) for t in thread.threads] == [  # type: ignore[union-attr]
        (17, 20000, 1, False), (26, 20000, 1, False)]
    # The CPUs' averages (1403808 and 1447518 ns), each cut, weighted: the true mean lies
    # within 1 ns above it, and ALL's own cut average, 1425375 ns, is its whole ns.
    assert result.totals.avg_truncated
    assert 1425375 <= (result.totals.avg_us or 0) * 1000 < 1425375 + 1
    assert result.totals.avg_us == pytest.approx((1403.808 * 4773 + 1447.518 * 4649) / 9422)
    # The median and p99 are whole µs bins, read here from the Thr rows (ns, each a whole µs)
    # and the 43 overflows: nearest rank of all 9422 wake-ups.
    values = []
    for line in NET_NANO.read_text().splitlines()[4:]:
        if line.startswith("over:"):
            break
        ns, _, thr0, _, thr1 = map(int, line.split())
        values += [ns // 1000] * (thr0 + thr1)
    values = sorted(values) + [20000] * 43
    assert len(values) == 9422
    assert result.totals.p50 == Percentile(value_us=values[math.ceil(0.5 * 9422) - 1]) == (
        Percentile(value_us=203))
    assert result.totals.p99 == Percentile(value_us=values[math.ceil(0.99 * 9422) - 1])
    assert result.totals.p99_9 == Percentile(value_us=20000, relation=">=")


def test_rtla_failing_is_partial_with_its_message(tmp_path: Path) -> None:
    result = _raw_run(tmp_path, NET, 1)
    assert result.status == "partial"
    assert "timerlat exited with status 1: Could not apply config" in result.reasons


def test_local_board_ends_exit_3_saying_what_the_kernel_lacks(rtgate_cli: RunCli,
                                                              tmp_path: Path) -> None:
    """Never a cyclictest run in timerlat's place, never a pass: the real CLI, bench and the
    pipeline, on this machine's kernel."""
    why = autoanalysis.missing() or "rtgate runs rtla timerlat on qemu-arm64 only so far"
    bench = rtgate_cli("bench", "--scenario", "timerlat-net", "--duration", "5", "--out",
                       str(tmp_path / "b"))
    assert bench.returncode == 3, bench.stderr
    assert why in " ".join(bench.stderr.split()), bench.stderr
    assert not (tmp_path / "b" / "result.json").exists()
    pipeline = rtgate_cli("pipeline", "--board", "local", "--scenarios", "timerlat-net",
                          "--duration", "5s", "--allow-unbudgeted", "--out", str(tmp_path / "p"))
    assert pipeline.returncode == 3, pipeline.stdout + pipeline.stderr
    infra = json.loads(next((tmp_path / "p").rglob("infra.json")).read_text())
    assert why in " ".join(json.dumps(infra).split()), infra


def test_lava_board_refuses_a_timerlat_scenario(tmp_path: Path) -> None:
    """Its initramfs has no rtla: an infrastructure failure naming the scenario, not a cyclictest
    run in timerlat's place (or a run whose rtla is missing)."""
    board = LavaBoard(load_board("lava-qemu"), tmp_path)
    board.caps = parse_help(HELP.read_text())
    with pytest.raises(InfraError, match="'timerlat-net' measures with timerlat"):
        board._plan("timerlat-net", 10, None)
    assert board._plan("net", 10, None).tool == "cyclictest"


def test_tuning_checks_timerlat_threads_on_the_isolated_cpus() -> None:
    """A tuned timerlat run: rtla measures on the isolated CPUs (-c), and the affinity check
    finds its kernel threads there (not "no cyclictest thread seen": incomplete for nothing)."""
    applied = Applied(load_profile("isolated"), "qemu-arm64", 2)
    scenario, _ = load_scenario("timerlat-net")
    assert applied.pin(scenario).options().cpus == "1"
    rb = parse_readback("task\t40 40 2 1 timerlat/1\ntask\t50 50 1 0 iperf3\n")
    checks = {c.setting: c for c in applied.verify_tasks(rb, ["iperf3"])}
    assert checks["cyclictest-affinity"].status == "ok", checks["cyclictest-affinity"]
    astray = parse_readback("task\t40 40 2 0 timerlat/0\ntask\t50 50 1 0 iperf3\n")
    checks = {c.setting: c for c in applied.verify_tasks(astray, ["iperf3"])}
    assert checks["cyclictest-affinity"].status == "failed"
