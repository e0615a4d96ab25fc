"""The gate on numbers a pasted file only bounds (issue 24): a `timerlat top` screen (integer
averages, thread counts at most the IRQ counts, no histogram) and an rtla histogram whose limit
was not given. Parsed by `rtgate parse`, judged by `rtgate check`, both the real CLI."""

from __future__ import annotations

import textwrap
from pathlib import Path

from clirun import RunCli

DATA = Path(__file__).resolve().parents[1] / "data" / "rtla"


def judge(rtgate_cli: RunCli, tmp_path: Path, raw: str, budget: str) -> tuple[int, str]:
    result = tmp_path / "r.json"
    parsed = rtgate_cli("parse", str(DATA / raw), "-o", str(result), "--board", "qemu-arm64",
                        "--scenario", "idle", "--flavor", "rt")
    assert parsed.returncode == 0, parsed.stderr
    thresholds = tmp_path / "thresholds.yml"
    thresholds.write_text(textwrap.dedent(f"""\
        schema: rtgate/thresholds/v2
        budgets:
          - {{board: qemu-arm64, flavor: rt, scenario: idle, tool: timerlat, {budget},
              reason: test}}
        """))
    proc = rtgate_cli("check", str(result), "--thresholds", str(thresholds),
                      "--junit", str(tmp_path / "junit.xml"))
    return proc.returncode, proc.stdout + proc.stderr


def test_a_top_screen_passes_a_max_and_avg_budget_it_clears(rtgate_cli: RunCli,
                                                              tmp_path: Path) -> None:
    # Thread context of guest-top-q: max 30963, average 590 (cut: the mean is in [590, 591)).
    code, out = judge(rtgate_cli, tmp_path, "guest-top-q.stdout", "max_us: 40000, avg_us: 591")
    assert code == 0, out


def test_an_average_a_top_screen_only_bounds_is_incomplete(rtgate_cli: RunCli,
                                                           tmp_path: Path) -> None:
    code, out = judge(rtgate_cli, tmp_path, "guest-top-q.stdout",
                      "max_us: 40000, avg_us: 590.5")
    assert code == 3, out


def test_p99_on_a_top_screen_is_incomplete_never_a_pass(rtgate_cli: RunCli,
                                                         tmp_path: Path) -> None:
    code, out = judge(rtgate_cli, tmp_path, "guest-top-q.stdout",
                      "max_us: 40000, avg_us: 1000, p99_us: 40000")
    assert code == 3 and "timerlat top screen" in out, out


def test_min_samples_on_counts_a_top_screen_only_bounds_is_incomplete(
        rtgate_cli: RunCli, tmp_path: Path) -> None:
    code, out = judge(rtgate_cli, tmp_path, "guest-top-q.stdout",
                      "max_us: 40000, avg_us: 1000, min_samples: 100")
    assert code == 3 and "only known as ≤ 7629" in out, out


def test_an_unknown_limit_fails_a_p99_below_its_bound_and_leaves_one_above_open(
        rtgate_cli: RunCli, tmp_path: Path) -> None:
    # guest-hist-E20.stdout without its prompt: p99 is only known as >= 20 µs.
    code, out = judge(rtgate_cli, tmp_path, "guest-hist-E20.stdout",
                      "max_us: 40000, avg_us: 1000, p99_us: 10")
    assert code == 1, out
    code, out = judge(rtgate_cli, tmp_path, "guest-hist-E20.stdout",
                      "max_us: 40000, avg_us: 1000, p99_us: 300")
    assert code == 3, out
