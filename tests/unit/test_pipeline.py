"""`rtgate pipeline`: what it refuses, the board's own scenarios, its JUnit and summary words.
Its runs are tests/integration/test_pipeline_local.py (this host) and
tests/e2e/test_pipeline_qemu.py (the QEMU virtual Pi with real stock and PREEMPT_RT kernels)."""

from __future__ import annotations

from pathlib import Path

import pytest
from clirun import RunCli
from junitparser import Error, JUnitXml

from rtgate.board.spec import load_board, scenarios_of
from rtgate.errors import Exit
from rtgate.gate.junit import render as render_junit
from rtgate.gate.markdown import render as render_markdown
from rtgate.gate.verdict import Infra, worst
from rtgate.pipeline.render import _versus, comparison
from rtgate.result import load_result

DATA = Path(__file__).parents[1] / "data" / "results"
ROOT = Path(__file__).resolve().parents[2]


def cases_of(junit: Path) -> dict[str, list[object]]:
    return {case.name: list(case.result) for suite in JUnitXml.fromfile(str(junit))
            for case in suite}


def test_local_board_refuses_several_flavors(rtgate_cli: RunCli, tmp_path: Path) -> None:
    proc = rtgate_cli("pipeline", "--board", "local", "--flavors", "stock,rt",
                      "--scenarios", "idle", "--duration", "2s", "--out", tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith("rtgate: ")
    assert "cannot boot stock, rt" in proc.stderr


def test_infra_failure_is_an_error_testcase_and_exit_3(tmp_path: Path) -> None:
    infra = Infra("qemu-arm64", "rt", "all-in", tmp_path / "console.log",
                  "console.log: no RTGATE-READY line within 120 s")
    assert worst([infra.exit, Exit.BUDGET]) is Exit.INCOMPLETE
    junit = tmp_path / "junit.xml"
    junit.write_text(render_junit([infra]))
    (error,) = cases_of(junit)["qemu-arm64/rt/all-in: infrastructure"]
    assert isinstance(error, Error) and "no RTGATE-READY" in error.message
    md = render_markdown([infra])
    assert "| `qemu-arm64` | `rt` | `all-in` |" in md and "infrastructure failure" in md
    assert "(exit 3)" in md


@pytest.mark.parametrize("board, requested, expected", [
    ("rpi5", None, ["all-in"]),
    ("qemu-arm64", None, ["net"]),
    ("qemu-arm64", ["idle", "board"], ["idle", "net"]),
    ("local", ["cpu", "board"], ["cpu"]),
    ("rpi5", ["io", "vm"], ["io", "vm"]),
])
def test_board_stands_for_the_boards_own_scenarios(board: str, requested: list[str] | None,
                                                   expected: list[str]) -> None:
    assert scenarios_of(load_board(board), requested) == expected


@pytest.mark.parametrize(("stock", "rt", "words"), [
    (36802, 124, "296.8x lower than stock's"), (100, 250, "2.5x higher than stock's"),
    (None, 124, "not compared (not measured on both kernels)")])
def test_rt_against_stock_in_words_that_stay_true(stock: float | None, rt: float,
                                                  words: str) -> None:
    assert _versus(stock, rt) == words


def test_the_comparison_sentence_names_what_each_ratio_is_against() -> None:
    """The paper's Pi 5 numbers, read back: both ratios against stock's, the paper's after."""
    results = [load_result(DATA / f"paper-rpi5-{flavor}-all-in.result.json")
               for flavor in ("stock", "rt")]
    (sentence,) = [line for line in comparison(results).splitlines()
                   if line.startswith("PREEMPT_RT's")]
    assert sentence.startswith("PREEMPT_RT's maximum latency is 296.8x lower than stock's, "
                               "its average is 2.5x lower than stock's. The Pi 5 paper")


PLANS = Path(__file__).parents[1] / "data" / "plans"


def test_the_plan_is_resolved_and_printed_without_a_device(rtgate_cli: RunCli,
                                                         tmp_path: Path) -> None:
    """`--dry-run`: every flavor × scenario with its scenario file, tool, budget (file:line),
    tuning and kernel, as the reference file says; nothing built, OUT not even made. The
    reference changes with thresholds.yml's lines: regenerate it with the command below."""
    out = tmp_path / "out"
    proc = rtgate_cli("pipeline", "--board", "qemu-arm64", "--flavors", "stock,rt",
                      "--scenarios", "board,all-in", "--duration", "30s", "--out", out,
                      "--tuning", "isolated", "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (PLANS / "pipeline-qemu-arm64.yml").read_text()
    assert not out.exists()


def test_every_problem_is_found_before_any_build(rtgate_cli: RunCli, tmp_path: Path) -> None:
    """A bad flavor, a missing scenario, an unknown tuning profile and a scenario no budget
    matches (for either flavor): all five named, exit 2, nothing built or measured (OUT not
    made)."""
    thresholds = tmp_path / "thresholds.yml"
    thresholds.write_text("schema: rtgate/thresholds/v2\nbudgets:\n"
                          "  - {board: qemu-arm64, flavor: '*', scenario: net, max_us: 900,\n"
                          "     avg_us: 90, reason: only net}\n")
    out = tmp_path / "out"
    proc = rtgate_cli("pipeline", "--board", "qemu-arm64", "--flavors", "stock,nope",
                      "--scenarios", "net,nosuch,idle", "--duration", "30s", "--out", out,
                      "--tuning", "nosuch", "--thresholds", thresholds)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert any("unknown flavor 'nope'" in line for line in lines), lines
    assert any("no such scenario 'nosuch'" in line for line in lines), lines
    assert any("no such tuning profile 'nosuch'" in line for line in lines), lines
    assert any("no budget matches board=qemu-arm64 flavor=stock scenario=idle" in line
               for line in lines), lines
    assert lines[-1] == ("rtgate: 5 problems found before any build or boot (above): "
                         "nothing was run")
    assert not out.exists()


def test_two_scenarios_of_one_name_are_refused_before_any_build(rtgate_cli: RunCli,
                                                                 tmp_path: Path) -> None:
    # Results, their directories and budgets are keyed by the scenario's own name.
    copy = tmp_path / "idle.yml"
    copy.write_text((ROOT / "bench" / "scenarios" / "idle.yml").read_text())
    out = tmp_path / "out"
    proc = rtgate_cli("pipeline", "--board", "qemu-arm64", "--flavors", "stock",
                      "--scenarios", f"idle,{copy}", "--duration", "30s", "--out", out)
    assert proc.returncode == 2, proc.stderr
    assert f"scenarios 'idle' and '{copy}' are both named 'idle'" in proc.stderr
    assert not out.exists()
