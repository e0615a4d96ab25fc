"""Hostile inputs through the real CLI: each is a clear verdict or exit 2 naming the file (and the
line), never a crash (exit 3), a lost JUnit report or a runaway process."""

from __future__ import annotations

import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from junitparser import Failure, JUnitXml

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = ROOT / "tests" / "data" / "hostile"
PAPER = ROOT / "tests" / "data" / "results" / "paper-rpi5-rt-all-in.result.json"

BUDGETS = """\
schema: rtgate/thresholds/v2
budgets:
  - board: rpi5
    flavor: rt
    scenario: "*"
    max_us: 155
    avg_us: 7.4
    reason: Table I + 25 %
"""


def _guard() -> None:
    # Only a guard: were the bomb expanded, the run would stop at 1 GiB instead of taking the
    # machine's memory. The assertions are on what rtgate says.
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


def rtgate(*args: str | Path, env: dict[str, str] | None = None,
           ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rtgate", *map(str, args)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60, preexec_fn=_guard)


def check(result: Path, tmp_path: Path, thresholds: Path | None = None,
          ) -> subprocess.CompletedProcess[str]:
    if thresholds is None:
        thresholds = tmp_path / "thresholds.yml"
        thresholds.write_text(BUDGETS, encoding="utf-8")
    return rtgate("check", result, "--thresholds", thresholds, "--junit", tmp_path / "junit.xml")


def test_yaml_alias_bomb_is_refused_before_expansion(tmp_path: Path) -> None:
    bomb = HOSTILE / "alias-bomb.yml"
    assert bomb.stat().st_size < 700
    proc = check(PAPER, tmp_path, thresholds=bomb)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == (f"rtgate: {bomb}:10: refused: anchors and aliases (&a, *a) are not "
                           "allowed: write the value out\n")
    # CI still gets a report saying why nothing was judged.
    assert "anchors and aliases" in (tmp_path / "junit.xml").read_text(encoding="utf-8")


def test_kernel_target_yaml_goes_through_the_same_loader(tmp_path: Path) -> None:
    """kernel/targets/*.yml is gate input too: an alias there is refused the same way."""
    shutil.copytree(ROOT / "kernel", tmp_path / "kernel")
    board = tmp_path / "kernel" / "targets" / "evil.yml"
    board.write_text((ROOT / "kernel" / "targets" / "qemu-arm64.yml").read_text()
                     .replace("name: qemu-arm64", "name: evil")
                     .replace("image_name: Image", "image_name: &i Image\nimage: *i"),
                     encoding="utf-8")
    line = board.read_text().splitlines().index("image_name: &i Image") + 1
    proc = rtgate("kernel", "plan", "--board", "evil", "--flavor", "rt",
                  env={"PATH": "/usr/bin:/bin", "RTGATE_ROOT": str(tmp_path)})
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(f"rtgate: {board}:{line}: refused: anchors and aliases (&i, ")


def test_result_with_a_5000_digit_integer_is_exit_2(tmp_path: Path) -> None:
    result = HOSTILE / "integer-5000-digits.result.json"
    proc = check(result, tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == (f"rtgate: {result}: holds an integer of more than "
                           f"{sys.get_int_max_str_digits()} digits, not a measurement\n")


@pytest.mark.parametrize("number", ["1e400", "-1e400", "9" * 400 + ".0", "NaN", "Infinity"])
def test_a_number_no_float_holds_is_exit_2_not_a_regression(tmp_path: Path, number: str) -> None:
    # Python's json reads 1e400 as infinity: "measured inf µs" was a regression (exit 1), and
    # NaN was refused only because no comparison holds for it.
    result = tmp_path / "inf.result.json"
    result.write_text(PAPER.read_text().replace('"max_us": 124.0', f'"max_us": {number}', 1))
    assert number in result.read_text()
    proc = check(result, tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == f"rtgate: {result}: holds the number {number[:40]}, not a finite number\n"


def test_result_nested_too_deeply_is_exit_2(tmp_path: Path) -> None:
    result = tmp_path / "deep.result.json"
    result.write_text(PAPER.read_text().replace('"sources": []',
                                                '"sources": ' + "[" * 100_000 + "]" * 100_000))
    proc = check(result, tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == f"rtgate: {result}: nested too deeply for a measurement\n"


@pytest.mark.parametrize("hostile, problem", [
    ('"max": ' + "9" * 5000, f"holds an integer of more than {sys.get_int_max_str_digits()} "
                             "digits, not a measurement"),
    ('"deep": ' + "[" * 100_000 + "]" * 100_000, "nested too deeply for a measurement"),
])
def test_cyclictest_json_with_hostile_numbers_or_nesting_is_exit_2(
        tmp_path: Path, hostile: str, problem: str) -> None:
    """`rtgate parse` reads files users hand it: a crafted --json is an input error, not a crash
    reported as exit 3."""
    given = tmp_path / "cyclictest.json"
    real = (ROOT / "tests/data/cyclictest/quiet-json.json").read_text()
    given.write_text(real.replace("{", "{" + hostile + ", ", 1))
    proc = rtgate("parse", given, "-o", tmp_path / "result.json")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == f"rtgate: {given}: {problem}\n"


@pytest.mark.parametrize(("name", "prop", "expected"), [
    ("release-fffe", "kernel.release", "6.12.0-rt\ufffd"),
    ("release-lone-surrogate", "kernel.release", "6.12.0-rt\ufffd"),
    ("scenario-lone-surrogate", "scenario", "all-in\ufffd"),
])
def test_characters_xml_cannot_hold_still_report_the_regression(
        tmp_path: Path, name: str, prop: str, expected: str) -> None:
    proc = check(HOSTILE / f"{name}.result.json", tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "FAIL       max_us measured 4800" in proc.stdout
    (suite,) = JUnitXml.fromfile(str(tmp_path / "junit.xml"))
    props = {p.name: p.value for p in suite.properties()}
    assert props[prop] == expected
    failed = [case.name for case in suite if any(isinstance(r, Failure) for r in case.result)]
    assert failed == [f"rpi5/rt/{props['scenario']}: max_us <= 155"]
