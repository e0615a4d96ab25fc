"""Budgets with decimals judge nanosecond results to the ns (issue 40): thresholds.yml budgets
are decimal µs (old whole-µs files read as before), and an average cyclictest cut to a whole
ns (-N) is known to [avg, avg + 1 ns), not to a whole µs."""

from __future__ import annotations

import textwrap
from pathlib import Path

from rtgate.cyclictest.parse import parse
from rtgate.gate.thresholds import Budget, load_thresholds
from rtgate.gate.verdict import Verdict, evaluate

DATA = Path(__file__).resolve().parents[1] / "data" / "cyclictest"


def budget(tmp_path: Path, max_us: str, avg_us: str) -> tuple[Budget, Path]:
    path = tmp_path / "thresholds.yml"
    path.write_text(textwrap.dedent(f"""\
        schema: rtgate/thresholds/v2
        budgets:
          - board: "*"
            flavor: "*"
            scenario: "*"
            max_us: {max_us}
            avg_us: {avg_us}
            reason: a test of decimals
        """), encoding="utf-8")
    (b,) = load_thresholds(path).budgets
    return b, path


def verdicts(tmp_path: Path, max_us: str, avg_us: str) -> dict[str, Verdict]:
    # T: 0 ... Min:  12141 Act:   16489 Avg:   26814 Max:  218533 (thread 1 lower): -N -q
    result = parse([DATA / "nsecs-quiet.txt"])
    b, path = budget(tmp_path, max_us, avg_us)
    # The weighted mean of both threads' cut averages, 26.814 and 30.782 µs.
    assert result.totals.avg_truncated
    return {c.metric: c.verdict for c in evaluate(result, b, path).checks}


def test_a_decimal_budget_judges_the_nanoseconds(tmp_path: Path) -> None:
    assert verdicts(tmp_path, "218.5", "40")["max_us"] is Verdict.FAIL
    assert verdicts(tmp_path, "218.533", "40")["max_us"] is Verdict.PASS
    assert verdicts(tmp_path, "218.6", "40")["max_us"] is Verdict.PASS


def test_an_average_cut_to_the_ns_is_known_to_the_ns(tmp_path: Path) -> None:
    result = parse([DATA / "nsecs-quiet.txt"])
    avg = result.totals.avg_us
    assert avg is not None
    # Within 1 ns above the cut average: passes (with µs output it would be unknown, exit 3).
    assert verdicts(tmp_path, "300", f"{avg + 0.0011:.6f}")["avg_us"] is Verdict.PASS
    assert verdicts(tmp_path, "300", f"{avg + 0.0005:.6f}")["avg_us"] is Verdict.INCOMPLETE
    assert verdicts(tmp_path, "300", f"{avg - 0.001:.6f}")["avg_us"] is Verdict.FAIL


def test_whole_microsecond_results_keep_the_whole_microsecond(tmp_path: Path) -> None:
    result = parse([DATA / "quiet.txt"])
    avg = result.totals.avg_us
    assert avg is not None and result.totals.avg_truncated
    b, path = budget(tmp_path, "100000", f"{avg + 0.5}")
    (check,) = [c for c in evaluate(result, b, path).checks if c.metric == "avg_us"]
    assert check.verdict is Verdict.INCOMPLETE
