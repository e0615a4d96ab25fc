"""`rtgate check` through the real CLI: verdicts, exit codes, JUnit read back, Markdown."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
from clirun import RunCli
from junitparser import Error, Failure, JUnitXml, Skipped, TestSuite

from rtgate.result import Percentile, Result, load_result
from rtgate.textfmt import fmt

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "tests" / "data" / "results"
LOCAL = RESULTS / "local-cpu.result.json"  # real cyclictest 2.40 run under stress-ng --cpu
RT_PAPER = RESULTS / "paper-rpi5-rt-all-in.result.json"
STOCK_PAPER = RESULTS / "paper-rpi5-stock-all-in.result.json"
BENCH = RESULTS / "bench-local-cpu" / "result.json"  # a complete `rtgate bench` run

# Budgets around the captured local run: max 5721 µs, avg 11.55, p99 88, p99.9 767, p99.99 ≥1000
# (overflowed the 1000 µs histogram), 96257 samples.
BUDGETS = """\
schema: rtgate/thresholds/v2
budgets:
  - board: local
    flavor: "*"
    scenario: cpu
    max_us: {max_us}
    avg_us: 50
    min_samples: {min_samples}
{extra}    reason: test budget
  - board: rpi5
    flavor: rt
    scenario: all-in
    max_us: 150
    avg_us: 7.4
    reason: Table I + margin
"""


def thresholds(tmp_path: Path, max_us: float = 10000, min_samples: int = 1000,
               extra: str = "") -> Path:
    path = tmp_path / "thresholds.yml"
    path.write_text(BUDGETS.format(max_us=max_us, min_samples=min_samples,
                                   extra=textwrap.indent(extra, "    ")), encoding="utf-8")
    return path


def variant(tmp_path: Path, name: str, source: Path = LOCAL, **update: Any) -> Path:
    """A copy of a real result with some fields changed (status, totals, kernel …)."""
    result = load_result(source)
    changed = result.model_copy(update=update)
    return Result.model_validate(changed.model_dump(by_alias=True)).write(tmp_path / name)


def with_totals(tmp_path: Path, name: str, **update: Any) -> Path:
    totals = load_result(LOCAL).totals.model_copy(update=update)
    return variant(tmp_path, name, totals=totals)


class Run:
    def __init__(self, rtgate_cli: RunCli, tmp_path: Path, *args: str | Path,
                 budgets: Path | None = None) -> None:
        self.junit_path = tmp_path / "out" / "junit.xml"
        self.md_path = tmp_path / "out" / "summary.md"
        self.proc = rtgate_cli("check", *args, "--thresholds", budgets or thresholds(tmp_path),
                               "--junit", self.junit_path, "--markdown", self.md_path)
        self.code = self.proc.returncode

    @property
    def suites(self) -> list[TestSuite]:
        return list(JUnitXml.fromfile(str(self.junit_path)))

    def cases(self) -> dict[str, Any]:
        return {case.name: case for suite in self.suites for case in suite}

    @property
    def markdown(self) -> str:
        return self.md_path.read_text(encoding="utf-8")


def outcome(case: Any) -> type | None:
    kinds = {type(r) for r in case.result}
    assert len(kinds) <= 1
    return next(iter(kinds), None)


def test_pass(rtgate_cli: RunCli, tmp_path: Path) -> None:
    run = Run(rtgate_cli, tmp_path, LOCAL)
    assert run.code == 0, run.proc.stderr
    (suite,) = run.suites
    assert suite.name == "local/stock/cpu [local-cpu-20261121T235655]"
    cases = run.cases()
    assert list(cases) == ["local/stock/cpu: samples >= 1000", "local/stock/cpu: max_us <= 10000",
                           "local/stock/cpu: avg_us <= 50"]
    assert all(outcome(c) is None for c in cases.values())
    assert "max_us measured 5721 µs, budget <= 10000 µs, margin +4279 µs (+43%)" in \
        cases["local/stock/cpu: max_us <= 10000"].system_out
    props = {p.name: p.value for p in suite.properties()}
    assert props["board"] == "local" and props["board.virtual"] == "true"
    assert props["flavor"] == "stock" and props["scenario"] == "cpu"
    assert props["kernel.release"] == "6.18.44-fc-v657" and props["kernel.preempt_rt"] == "false"
    assert props["run_id"] == "local-cpu-20261121T235655"
    assert props["budget"] == "local/*/cpu" and props["budget.source"].endswith("thresholds.yml:3")
    assert "| `local (virtual)` | `stock` | `cpu` | max_us | 5721 µs | <= 10000 µs | " \
           "+4279 µs (+43%) | ✅ pass |" in run.markdown
    assert "virtual board — not a real-time claim" in run.markdown


def test_real_bench_result_passes_the_shipped_smoke_budget(rtgate_cli: RunCli,
                                                           tmp_path: Path) -> None:
    run = Run(rtgate_cli, tmp_path, BENCH, budgets=ROOT / "thresholds.yml")
    assert run.code == 0, run.proc.stdout + run.proc.stderr
    assert sorted(run.cases()) == ["local/stock/cpu: avg_us <= 1000",
                                   "local/stock/cpu: max_us <= 100000",
                                   "local/stock/cpu: samples >= 1000"]
    (suite,) = run.suites
    props = {p.name: p.value for p in suite.properties()}
    assert props["budget"] == "local/*/*" and "SMOKE" in props["budget.reason"]
    assert "not a real-time claim" in run.markdown


def test_budget_exceeded_is_exit_1_with_failure_text(rtgate_cli: RunCli, tmp_path: Path) -> None:
    run = Run(rtgate_cli, tmp_path, LOCAL, budgets=thresholds(tmp_path, max_us=5000))
    assert run.code == 1
    case = run.cases()["local/stock/cpu: max_us <= 5000"]
    assert outcome(case) is Failure
    assert case.result[0].message == ("max_us measured 5721 µs, budget <= 5000 µs, "
                                      "margin -721 µs (-14%): budget exceeded")
    assert outcome(run.cases()["local/stock/cpu: avg_us <= 50"]) is None
    assert "❌ fail" in run.markdown and "budget exceeded (exit 1)" in run.markdown
    assert "FAIL" in run.proc.stdout


def test_paper_stock_kernel_fails_the_rt_budget(rtgate_cli: RunCli, tmp_path: Path) -> None:
    # No kernel.flavor, only the RT flag: judged as "rt".
    kernel = load_result(STOCK_PAPER).kernel.model_copy(update={"flavor": None,
                                                                "preempt_rt": True})
    stock_as_rt = variant(tmp_path, "stock-as-rt.json", STOCK_PAPER, kernel=kernel)
    run = Run(rtgate_cli, tmp_path, RT_PAPER, stock_as_rt)
    assert run.code == 1
    assert [s.name for s in run.suites] == ["rpi5/rt/all-in [paper-rpi5-rt-all-in]",
                                            "rpi5/rt/all-in [paper-rpi5-stock-all-in]"]
    first, second = ({c.name: outcome(c) for c in s} for s in run.suites)
    assert first == {"rpi5/rt/all-in: max_us <= 150": None, "rpi5/rt/all-in: avg_us <= 7.4": None}
    assert second == {"rpi5/rt/all-in: max_us <= 150": Failure,
                      "rpi5/rt/all-in: avg_us <= 7.4": Failure}
    assert "| `rpi5` | `rt` | `all-in` | max_us | 36802 µs | <= 150 µs |" in run.markdown
    assert "virtual" not in run.markdown


@pytest.mark.parametrize("status", ["partial", "degraded"])
def test_incomplete_result_is_exit_3_with_errors(rtgate_cli: RunCli,
                                                 tmp_path: Path, status: str) -> None:
    reason = "stress-ng exited early with status 1" if status == "degraded" else "SIGINT"
    path = variant(tmp_path, f"{status}.json", status=status, reasons=[reason])
    # A 5000 µs budget would also fail it.
    run = Run(rtgate_cli, tmp_path, path, budgets=thresholds(tmp_path, max_us=5000))
    assert run.code == 3
    cases = run.cases()
    assert len(cases) == 3 and all(outcome(c) is Error for c in cases.values())
    message = cases["local/stock/cpu: max_us <= 5000"].result[0].message
    assert "measured 5721 µs" in message and f"not judged: result is {status}: {reason}" in message
    assert "⚠️ incomplete" in run.markdown and "✅" not in run.markdown
    assert f"result is {status}: {reason}" in run.markdown


def test_too_few_samples_is_exit_3(rtgate_cli: RunCli, tmp_path: Path) -> None:
    run = Run(rtgate_cli, tmp_path, LOCAL, budgets=thresholds(tmp_path, min_samples=1_000_000))
    assert run.code == 3
    cases = run.cases()
    assert all(outcome(c) is Error for c in cases.values())
    message = cases["local/stock/cpu: samples >= 1000000"].result[0].message
    assert "samples measured 96257" in message
    assert "too few samples: 96257, the budget needs at least 1000000" in message


def test_percentile_budgets(rtgate_cli: RunCli, tmp_path: Path) -> None:
    budgets = thresholds(tmp_path, extra="p99_us: 100\np9999_us: 2000\n")
    run = Run(rtgate_cli, tmp_path, LOCAL, budgets=budgets)
    # p99 88 <= 100 passes; p99.99 is only "≥ 1000" (histogram overflow), 1000 <= 2000: unknowable
    assert run.code == 3
    cases = run.cases()
    assert outcome(cases["local/stock/cpu: p99_us <= 100"]) is None
    p9999 = cases["local/stock/cpu: p9999_us <= 2000"]
    assert outcome(p9999) is Error
    assert "measured ≥1000 µs" in p9999.result[0].message
    assert "only known as ≥ 1000 µs" in p9999.result[0].message
    assert outcome(cases["local/stock/cpu: max_us <= 10000"]) is None


def test_lower_bound_above_budget_is_a_failure(rtgate_cli: RunCli, tmp_path: Path) -> None:
    run = Run(rtgate_cli, tmp_path, LOCAL, budgets=thresholds(tmp_path, extra="p9999_us: 900\n"))
    assert run.code == 1
    case = run.cases()["local/stock/cpu: p9999_us <= 900"]
    assert outcome(case) is Failure
    assert case.result[0].message == ("p9999_us measured ≥1000 µs, budget <= 900 µs, "
                                      "margin ≤ -100 µs (-11%): budget exceeded")


def test_percentile_budget_on_summary_only_result_is_exit_3(rtgate_cli: RunCli,
                                                            tmp_path: Path) -> None:
    path = with_totals(tmp_path, "summary.json", p50=None, p99=None, p99_9=None, p99_99=None)
    run = Run(rtgate_cli, tmp_path, path, budgets=thresholds(tmp_path, extra="p99_us: 100\n"))
    assert run.code == 3
    case = run.cases()["local/stock/cpu: p99_us <= 100"]
    assert outcome(case) is Error and "no percentiles" in case.result[0].message
    assert "measured absent" in case.result[0].message


def test_exact_percentile_above_budget_fails(rtgate_cli: RunCli, tmp_path: Path) -> None:
    path = with_totals(tmp_path, "p99.json", p99=Percentile(value_us=120))
    run = Run(rtgate_cli, tmp_path, path, budgets=thresholds(tmp_path, extra="p99_us: 100\n"))
    assert run.code == 1
    assert outcome(run.cases()["local/stock/cpu: p99_us <= 100"]) is Failure


@pytest.mark.parametrize("avg, truncated, code, verdict", [
    (49.5, False, 0, None),  # exact: 49.5 <= 50
    (49.0, True, 0, None),  # true mean in [49, 50): within 50 whatever it is
    (49.5, True, 3, Error),  # [49.5, 50.5): may or may not exceed 50
    (50.0, True, 3, Error),  # [50, 51): only exactly 50 would pass
    (50.5, True, 1, Failure),  # [50.5, 51.5): above 50 whatever it is
])
def test_average_known_only_to_1us(rtgate_cli: RunCli,
                                   tmp_path: Path, avg: float, truncated: bool, code: int,
                                   verdict: type | None) -> None:
    path = with_totals(tmp_path, "avg.json", avg_us=avg, avg_truncated=truncated)
    run = Run(rtgate_cli, tmp_path, path)
    assert run.code == code, run.proc.stderr
    case = run.cases()["local/stock/cpu: avg_us <= 50"]
    assert outcome(case) is verdict
    shown = f"[{fmt(avg)}, {fmt(avg + 1)}) µs" if truncated else f"{fmt(avg)} µs"
    assert f"avg_us measured {shown}, budget <= 50 µs" in (
        case.result[0].message if verdict else case.system_out)
    if verdict is Error:
        assert case.result[0].message.endswith(
            f"not judged: cyclictest printed its averages as whole numbers cut toward zero, so "
            f"the mean is only known to lie in {shown}, which does not show whether the budget "
            "holds")


V1_SUMMARY = ROOT / "tests" / "data" / "realworld" / "v1" / "summary.result.json"


@pytest.mark.parametrize("budget, code", [(86.5, 3), (87.01, 0), (86, 1)])
def test_v1_summary_result_is_judged_by_its_cut_average(rtgate_cli: RunCli,
                                                        tmp_path: Path, budget: float,
                                                        code: int) -> None:
    # Written by the v1 parser from 'T:' lines (Avg 90 and 80 over 2000 and 1332 cycles).
    budgets = tmp_path / "t.yml"
    budgets.write_text("schema: rtgate/thresholds/v2\nbudgets:\n  - board: local\n"
                       "    flavor: '*'\n    scenario: idle\n    max_us: 100000\n"
                       f"    avg_us: {budget}\n    reason: test\n", encoding="utf-8")
    run = Run(rtgate_cli, tmp_path, V1_SUMMARY, budgets=budgets)
    assert run.code == code, run.proc.stderr
    assert "avg_us measured [86, 87) µs" in str(run.proc.stdout) + run.junit_path.read_text()


def test_unbudgeted_is_exit_2_unless_allowed(rtgate_cli: RunCli, tmp_path: Path) -> None:
    path = variant(tmp_path, "idle.json", scenario="idle")
    run = Run(rtgate_cli, tmp_path, path)
    assert run.code == 2
    assert run.proc.stderr.strip() == (f"rtgate: {path}: no budget matches board=local "
                                       "flavor=stock scenario=idle")
    (case,) = run.cases().values()
    assert case.name == "local/stock/idle: no budget" and outcome(case) is Error

    allowed = Run(rtgate_cli, tmp_path, path, LOCAL, "--allow-unbudgeted")
    assert allowed.code == 0, allowed.proc.stderr
    cases = allowed.cases()
    assert outcome(cases["local/stock/idle: no budget"]) is Skipped
    assert len(cases) == 4
    assert "no budget (allowed)" in allowed.markdown


def test_an_allowed_unbudgeted_result_that_is_partial_is_still_incomplete(
        rtgate_cli: RunCli, tmp_path: Path) -> None:
    path = variant(tmp_path, "idle.json", scenario="idle", status="partial",
                   reasons=["cyclictest was killed"])
    run = Run(rtgate_cli, tmp_path, path, "--allow-unbudgeted")
    assert run.code == 3, run.proc.stderr


@pytest.mark.parametrize(("content", "problem"), [
    ("", "not a JSON document"),
    ('{"schema": "rtgate/result/v1", "run_id": ', "not a JSON document"),
    ('{"schema": "something/else"}', "not an rtgate result"),
    ('{"schema": "rtgate/result/v1", "run_id": "x"}', "invalid result"),
])
def test_malformed_result_is_exit_2_and_still_reported(rtgate_cli: RunCli,
                                                       tmp_path: Path, content: str,
                                                         problem: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content, encoding="utf-8")
    run = Run(rtgate_cli, tmp_path, LOCAL, bad)
    assert run.code == 2
    (line,) = run.proc.stderr.strip().splitlines()
    assert line.startswith(f"rtgate: {bad}: {problem}")
    assert bad.read_text(encoding="utf-8") == content  # the raw input is never touched
    cases = run.cases()
    assert outcome(cases[f"{bad}: load"]) is Error
    assert outcome(cases["local/stock/cpu: max_us <= 10000"]) is None  # the good one still judged
    assert "⚠️ input error" in run.markdown


def test_missing_result_file_is_exit_2(rtgate_cli: RunCli, tmp_path: Path) -> None:
    run = Run(rtgate_cli, tmp_path, tmp_path / "nope.json")
    assert run.code == 2 and f"{tmp_path / 'nope.json'}: cannot read" in run.proc.stderr
    assert run.junit_path.exists()


@pytest.mark.parametrize(("files", "code"), [
    (["fail", "partial"], 3),       # an incomplete run outranks a regression
    (["partial", "malformed"], 2),  # an input error outranks everything
    (["fail", "malformed"], 2),
    (["pass", "fail"], 1),
    (["pass", "pass"], 0),
])
def test_exit_code_precedence_2_then_3_then_1(rtgate_cli: RunCli, tmp_path: Path, files: list[str],
                                              code: int) -> None:
    made = {
        "pass": LOCAL,
        "fail": variant(tmp_path, "fail.json", totals=load_result(LOCAL).totals.model_copy(
            update={"max_us": 20000.0})),
        "partial": variant(tmp_path, "partial.json", status="partial", reasons=["SIGTERM"]),
        "malformed": tmp_path / "malformed.json",
    }
    made["malformed"].write_text("{", encoding="utf-8")
    run = Run(rtgate_cli, tmp_path, *(made[f] for f in files))
    assert run.code == code, run.proc.stdout + run.proc.stderr
    assert len(run.suites) == len(files)
    assert f"(exit {code})" in run.markdown


def test_bad_thresholds_still_write_junit(rtgate_cli: RunCli, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yml"
    bad.write_text("schema: rtgate/thresholds/v2\nbudgets:\n  - board: [\n", encoding="utf-8")
    run = Run(rtgate_cli, tmp_path, LOCAL, budgets=bad)
    assert run.code == 2
    (case,) = run.cases().values()
    assert outcome(case) is Error and "not valid YAML" in case.result[0].message


def test_usage_errors_are_exit_2(rtgate_cli: RunCli, tmp_path: Path) -> None:
    proc = rtgate_cli("check", LOCAL)
    assert proc.returncode == 2 and "--junit" in proc.stderr


def test_help_documents_exit_codes(rtgate_cli: RunCli) -> None:
    proc = rtgate_cli("check", "--help")
    assert proc.returncode == 0
    text = proc.stdout
    for line in ("0  every budgeted metric", "1  a budget was exceeded",
                 "2  usage or input error", "3  a result is incomplete",
                 "2 wins over 3, which wins over 1", "--allow-unbudgeted"):
        assert line in text
