"""Assembling a bench result from real captured cyclictest output and what the runner saw;
the thermal sampler on a fake sysfs tree."""

from __future__ import annotations

import shutil
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from rtgate.cyclictest.version import parse_help
from rtgate.harness.assemble import RunInfo, assemble
from rtgate.harness.environment import Environment
from rtgate.harness.loads import EndedLoad
from rtgate.harness.plan import Params, make_plan
from rtgate.harness.runner import RunLog
from rtgate.harness.scenario import load_scenario

DATA = Path(__file__).parents[1] / "data"
CAPS = parse_help((DATA / "help" / "cyclictest-2.40.txt").read_text())
ENV = Environment(kernel_release="6.18.44", kernel_version="#1 SMP PREEMPT_DYNAMIC @0",
                  machine="x86_64", preempt_rt=False, virtual=True,
                  tools={"stress-ng": "0.15.06", "iperf3": "3.12"})
INFO = RunInfo(run_id="r1", board="local", virtual=True, flavor="stock",
               cyclictest_version="2.40")


def _plan(rawdir: Path, scenario: str = "net", duration_s: int = 20):
    sc, source = load_scenario(scenario)
    params = Params(cpus=2, port=5201, tmpdir="/t", scale=1.0, timeout_s=60)
    return make_plan(sc, source, CAPS, duration_s=duration_s, params=params, outdir=str(rawdir))


def _finished_load(name: str, argv: list[str], early: int | None) -> EndedLoad:
    return EndedLoad(name, argv, early, None if early is None else 2.5)


def _run_log(plan, **kw) -> RunLog:
    loads = [_finished_load(ld.name, ld.argv, None) for ld in plan.loads]
    base = dict(loads=loads, start=datetime(2026, 11, 22, tzinfo=UTC),
                end=datetime(2026, 11, 22, 0, 0, 20, tzinfo=UTC), measured_s=20.0,
                cyclictest_rc=0, loadavg_before=[1.0, 1.0, 1.0], loadavg_after=[2.0, 1.0, 1.0])
    base.update(kw)
    return RunLog(**base)


def test_complete_run(tmp_path: Path) -> None:
    shutil.copy(DATA / "bench" / "cpu-blocks.cyclictest.json", tmp_path / "cyclictest.json")
    shutil.copy(DATA / "bench" / "cpu-blocks.blocks.txt", tmp_path / "blocks.txt")
    plan = _plan(tmp_path, "cpu", 3)
    result = assemble(plan, _run_log(plan), ENV, tmp_path, INFO)
    assert result.status == "complete" and result.reasons == []
    for t in result.threads:
        assert t.blocks is not None and t.blocks.cycles == t.samples
        assert max(t.blocks.maxima_us) == t.max_us and t.blocks.block_cycles == 10_000
    assert [s.format for s in result.sources] == ["json", "blocks"]
    assert result.board.virtual and result.kernel.flavor == "stock"
    assert result.tool.version == "2.40" and "--duration=3" in result.tool.cmdline
    assert result.totals.samples > 50_000 and result.totals.p99 is not None
    assert result.environment["tools"]["cyclictest"] == "2.40"
    assert result.environment["loadavg_after"] == [2.0, 1.0, 1.0]
    assert "max_temp_c" not in result.environment  # no thermal zone: absent, not 0
    assert [(ld.name, ld.exit_status, ld.early_exit) for ld in result.loads] == \
        [("stress-cpu", None, False)]


def test_a_run_without_block_maxima_is_partial(tmp_path: Path) -> None:
    shutil.copy(DATA / "bench" / "cpu.cyclictest.json", tmp_path / "cyclictest.json")
    plan = _plan(tmp_path, "cpu", 3)
    result = assemble(plan, _run_log(plan), ENV, tmp_path, INFO)
    assert result.status == "partial" and result.totals.samples > 50_000
    assert result.reasons == [f"no block maxima: {tmp_path}/blocks.txt: missing or empty"]
    (tmp_path / "blocks.txt").write_text("rtgate-blocks 1 block_cycles 10000\nb 0 3\n")
    result = assemble(plan, _run_log(plan), ENV, tmp_path, INFO)
    assert result.reasons == [f"no block maxima: {tmp_path}/blocks.txt: line 3: no 'end' line: "
                              "the reducer was stopped before it finished"]
    assert all(t.blocks is None for t in result.threads)


def test_a_failed_reducer_makes_the_run_partial(tmp_path: Path) -> None:
    shutil.copy(DATA / "bench" / "cpu-blocks.cyclictest.json", tmp_path / "cyclictest.json")
    shutil.copy(DATA / "bench" / "cpu-blocks.blocks.txt", tmp_path / "blocks.txt")
    (tmp_path / "reducer.stderr").write_text("awk: write failure\n")
    plan = _plan(tmp_path, "cpu", 3)
    result = assemble(plan, _run_log(plan, reducer_rc=2), ENV, tmp_path, INFO)
    assert result.status == "partial"
    assert result.reasons == ["the block-maxima reducer exited with status 2: awk: write failure"]


def test_interrupted_run_with_a_killed_load(tmp_path: Path) -> None:
    shutil.copy(DATA / "bench" / "net-sigint.cyclictest.json", tmp_path / "cyclictest.json")
    plan = _plan(tmp_path)
    run_log = _run_log(plan, interrupted="SIGTERM", measured_s=1.0, max_temp_c=61.5,
                       max_temp_zone="thermal_zone0 cpu-thermal")
    run_log.loads[1] = replace(run_log.loads[1], early_exit=-9, early_after_s=0.5)
    result = assemble(plan, run_log, ENV, tmp_path, INFO)
    assert result.status == "partial"  # partial outranks degraded; both reasons are kept
    assert "interrupted by SIGTERM after 1.0 s of 20 s of measurement" in result.reasons
    assert "load 'iperf3-client' exited early (killed by SIGKILL) after 0.5 s " \
           "(see raw/iperf3-client.stderr)" in result.reasons
    assert result.totals.samples > 0
    assert result.environment["max_temp_c"] == 61.5
    assert result.loads[1].early_exit and result.loads[1].exit_status == -9


def test_no_output_still_gives_a_partial_result(tmp_path: Path) -> None:
    (tmp_path / "cyclictest.stderr").write_text("Unable to change scheduling policy!\n")
    plan = _plan(tmp_path)
    result = assemble(plan, _run_log(plan, cyclictest_rc=255), ENV, tmp_path, INFO)
    assert result.status == "partial" and result.totals.samples == 0
    assert "cyclictest exited with status 255: Unable to change scheduling policy!" \
        in result.reasons
    assert any(r.startswith("no result from cyclictest's output") for r in result.reasons)


def test_truncated_json_falls_back_to_a_reason(tmp_path: Path) -> None:
    text = (DATA / "bench" / "cpu.cyclictest.json").read_text()
    (tmp_path / "cyclictest.json").write_text(text[: len(text) // 2])
    plan = _plan(tmp_path, "cpu", 3)
    result = assemble(plan, _run_log(plan), ENV, tmp_path, INFO)
    assert result.status == "partial"
    assert any("cyclictest.json" in r for r in result.reasons)
