"""thresholds.yml: validation with file:line errors, budget selection, and the shipped budgets."""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import jsonschema
import pytest
import yaml
from clirun import RunCli

from rtgate import paths
from rtgate.errors import InputError
from rtgate.gate.thresholds import SCHEMA_FILE, Budget, json_schema, load_thresholds
from rtgate.gate.verdict import Verdict, evaluate
from rtgate.result import Result, load_result

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "tests" / "data" / "results"
SHIPPED = ROOT / "thresholds.yml"

VALID = """\
schema: rtgate/thresholds/v2
budgets:
  - board: rpi5
    flavor: rt
    scenario: all-in
    max_us: 155
    avg_us: 7.4
    reason: Table I + 25 %
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "thresholds.yml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def check_cli(rtgate_cli: RunCli,
              thresholds: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return rtgate_cli("check", str(RESULTS / "paper-rpi5-rt-all-in.result.json"), "--thresholds",
                      str(thresholds), "--junit", str(tmp_path / "junit.xml"), cwd=ROOT)


# (description, document, line the error must name, text the message must contain)
BAD = [
    ("typo'd key", VALID.replace("    avg_us: 7.4\n", "    avg_us: 7.4\n    max_uss: 10\n"),
     8, "budgets.0.max_uss: unknown key"),
    ("wrong type", VALID.replace("max_us: 155", "max_us: fast"), 6, "budgets.0.max_us"),
    ("number as a string", VALID.replace("max_us: 155", 'max_us: "155"'), 6, "budgets.0.max_us"),
    ("boolean as a number", VALID.replace("avg_us: 7.4", "avg_us: yes"), 7, "budgets.0.avg_us"),
    ("negative budget", VALID.replace("max_us: 155", "max_us: -1"), 6, "greater than 0"),
    ("missing reason", VALID.replace("    reason: Table I + 25 %\n", ""), 3,
     "budgets.0.reason: Field required"),
    ("blank reason", VALID.replace("reason: Table I + 25 %", 'reason: "  "'), 8,
     "budgets.0.reason"),
    ("unknown flavor", VALID.replace("flavor: rt", "flavor: preempt-rt"), 4, "budgets.0.flavor"),
    ("unknown schema version", VALID.replace("thresholds/v2", "thresholds/v4"), 1,
     "unsupported schema 'rtgate/thresholds/v4'"),
    ("v1, the A/B margin in µs", VALID.replace("thresholds/v2", "thresholds/v1"), 1,
     "unsupported schema 'rtgate/thresholds/v1' (this rtgate reads 'rtgate/thresholds/v3' and "
     "'rtgate/thresholds/v2': "
     "v2 states the A/B minimum effect as a share, ab.min_effect_pct)"),
    ("ab margin over 100 %", VALID + "    ab: {min_effect_pct: 150}\n", 9,
     "ab.min_effect_pct"),
    ("missing schema", VALID.replace("schema: rtgate/thresholds/v2\n", ""), 1,
     "missing 'schema: rtgate/thresholds/v3'"),
    ("unknown top-level key", VALID + "budget: []\n", 9, "budget: unknown key"),
    ("duplicate YAML key", VALID.replace("    avg_us: 7.4\n", "    avg_us: 7.4\n    max_us: 9\n"),
     8, "duplicate key 'max_us' (first at line 6)"),
    ("same budget twice", VALID + VALID.split("budgets:\n")[1], 9,
     "a second budget for rpi5/rt/all-in (first at line 3)"),
    ("broken YAML", VALID.replace("max_us: 155", "max_us: [155"), 7, "not valid YAML"),
    ("not a mapping", "- just\n- a list\n", 1, "expected a mapping"),
    ("alias", VALID.replace("flavor: rt", "flavor: &f rt").replace("max_us: 155", "max_us: *f"),
     4, "anchors and aliases (&f, *f) are not allowed"),
    ("sequence as a key", VALID.replace("    reason: Table I + 25 %\n",
                                        "    ? [reason, why]\n    : Table I\n"),
     8, "a sequence used as a mapping key"),
    ("mapping as a key", VALID.replace("    reason: Table I + 25 %\n",
                                       "    {reason: why}: Table I\n"),
     8, "a mapping used as a mapping key"),
    ("5000-digit integer", VALID.replace("max_us: 155", "max_us: 1" + "0" * 4999), 6,
     "(5000 characters) as int"),
    ("impossible date", VALID.replace("reason: Table I + 25 %", "reason: 2024-13-45"), 8,
     "cannot read '2024-13-45' as timestamp"),
    ("nested 10000 deep", VALID.replace("reason: Table I + 25 %", "reason: " + "[" * 10000),
     8, "nested more than 64 levels deep"),
    ("no budgets", "schema: rtgate/thresholds/v2\nbudgets: []\n", 2, "budgets"),
    ("pwcet per_hour written 1e-9 (a string to YAML 1.1)",
     VALID + "    pwcet_us: {per_hour: 1e-9, max: 150}\n", 9, "budgets.0.pwcet_us.per_hour"),
    ("pwcet per_hour a certainty", VALID + "    pwcet_us: {per_hour: 1, max: 150}\n", 9,
     "budgets.0.pwcet_us.per_hour"),
    ("pwcet without max", VALID + "    pwcet_us: {per_hour: 1.0e-9}\n", 9,
     "budgets.0.pwcet_us.max: Field required"),
    ("ab typo'd key", VALID + "    ab: {min_effect_pct: 5, alhpa: 0.05}\n", 9,
     "budgets.0.ab.alhpa: unknown key"),
    ("ab alpha above one half", VALID + "    ab: {min_effect_pct: 5, alpha: 0.9}\n", 9,
     "budgets.0.ab.alpha"),
]


@pytest.mark.parametrize(("doc", "line", "text"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_thresholds_error_names_file_and_line(tmp_path: Path, doc: str, line: int,
                                                  text: str) -> None:
    path = write(tmp_path, doc)
    with pytest.raises(InputError) as err:
        load_thresholds(path)
    message = f"rtgate: {err.value.oneline()}"
    assert message.startswith(f"rtgate: {path}:{line}: "), message
    assert text in message
    assert "\n" not in message


@pytest.mark.parametrize("case", ["typo'd key", "wrong type", "missing reason",
                                  "unknown schema version", "sequence as a key",
                                  "mapping as a key", "5000-digit integer"])
def test_cli_exits_2_with_one_line_naming_file_and_line(rtgate_cli: RunCli,
                                                        tmp_path: Path, case: str) -> None:
    _, doc, line, text = next(b for b in BAD if b[0] == case)
    path = write(tmp_path, doc)
    proc = check_cli(rtgate_cli, path, tmp_path)
    assert proc.returncode == 2, proc.stderr
    errors = proc.stderr.strip().splitlines()
    assert len(errors) == 1, proc.stderr
    assert errors[0].startswith(f"rtgate: {path}:{line}: ") and text in errors[0]


def test_unreadable_thresholds_is_exit_2(rtgate_cli: RunCli, tmp_path: Path) -> None:
    proc = check_cli(rtgate_cli, tmp_path / "missing.yml", tmp_path)
    assert proc.returncode == 2
    assert f"{tmp_path / 'missing.yml'}: cannot read" in proc.stderr


PRECEDENCE = """\
schema: rtgate/thresholds/v2
budgets:
  - {board: "*", flavor: "*", scenario: "*", max_us: 1, avg_us: 1, reason: any}
  - {board: "*", flavor: "*", scenario: idle, max_us: 2, avg_us: 1, reason: scenario}
  - {board: "*", flavor: rt, scenario: "*", max_us: 3, avg_us: 1, reason: flavor}
  - {board: "*", flavor: rt, scenario: idle, max_us: 4, avg_us: 1, reason: flavor+scenario}
  - {board: rpi5, flavor: "*", scenario: "*", max_us: 5, avg_us: 1, reason: board}
  - {board: rpi5, flavor: "*", scenario: idle, max_us: 6, avg_us: 1, reason: board+scenario}
  - {board: rpi5, flavor: rt, scenario: "*", max_us: 7, avg_us: 1, reason: board+flavor}
  - {board: rpi5, flavor: rt, scenario: idle, max_us: 8, avg_us: 1, reason: exact}
"""


@pytest.mark.parametrize(("board", "flavor", "scenario", "winner"), [
    ("rpi5", "rt", "idle", "exact"),
    ("rpi5", "rt", "cpu", "board+flavor"),
    ("rpi5", "stock", "idle", "board+scenario"),
    ("rpi5", "stock", "cpu", "board"),
    ("local", "rt", "idle", "flavor+scenario"),
    ("local", "rt", "cpu", "flavor"),
    ("local", "stock", "idle", "scenario"),
    ("local", "stock", "cpu", "any"),
])
def test_most_specific_budget_wins(tmp_path: Path, board: str, flavor: str, scenario: str,
                                   winner: str) -> None:
    thresholds = load_thresholds(write(tmp_path, PRECEDENCE))
    budget = thresholds.select(board, flavor, scenario)
    assert budget is not None and budget.reason == winner


def test_tail_and_ab_blocks_are_optional_and_read(tmp_path: Path) -> None:
    """v1 files without them keep loading; with them, per_hour, max and the A/B margin are read
    and alpha defaults to the documented 1 %."""
    plain = load_thresholds(write(tmp_path, VALID)).budgets[0]
    assert plain.pwcet_us is None and plain.ab is None
    tail = load_thresholds(write(tmp_path, VALID + "    pwcet_us: {per_hour: 1.0e-9, max: 150}\n"
                                 "    ab: {min_effect_pct: 5}\n")).budgets[0]
    assert tail.pwcet_us is not None and tail.ab is not None
    assert (tail.pwcet_us.per_hour, tail.pwcet_us.max) == (1e-9, 150)
    assert (tail.ab.min_effect_pct, tail.ab.alpha) == (5, 0.01)


def test_no_match_is_none_and_sources_name_lines(tmp_path: Path) -> None:
    path = write(tmp_path, VALID)
    thresholds = load_thresholds(path)
    assert thresholds.select("rpi5", "stock", "all-in") is None
    assert thresholds.select("qemu-arm64", "rt", "all-in") is None
    budget = thresholds.select("rpi5", "rt", "all-in")
    assert budget is not None and budget.source == f"{path}:3"


def test_shipped_thresholds_validate_against_models_and_json_schema() -> None:
    thresholds = load_thresholds(SHIPPED)
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    jsonschema.validate(yaml.safe_load(SHIPPED.read_text(encoding="utf-8")), schema)
    for board in ("rpi5", "qemu-arm64", "local"):
        for flavor in ("stock", "rt", "none", "voluntary", "preempt"):
            for scenario in ("idle", "cpu", "vm", "io", "net", "all-in"):
                assert thresholds.select(board, flavor, scenario) is not None, \
                    (board, flavor, scenario)
    for board in ("qemu-arm64", "local"):
        for budget in thresholds.budgets:
            if budget.board == board:
                assert "SMOKE" in budget.reason and "no real-time claim" in budget.reason


def test_committed_json_schema_is_current() -> None:
    assert json.loads(SCHEMA_FILE.read_text(encoding="utf-8")) == json_schema()


def test_shipped_rpi5_budgets_agree_with_table_i() -> None:
    thresholds = load_thresholds(SHIPPED)
    rt = thresholds.select("rpi5", "rt", "all-in")
    stock = thresholds.select("rpi5", "stock", "all-in")
    assert rt is not None and stock is not None
    assert rt.label == "rpi5/rt/all-in" and stock.label == "rpi5/stock/all-in"
    # Table I: RT max 124, avg 5.91; stock max 36802, avg 14.69. A budget below the paper's own
    # measurement would fail the very kernel the paper praises.
    assert 124 <= rt.max_us < 200 and 5.91 <= rt.avg_us < 10
    assert 36802 <= stock.max_us and 14.69 <= stock.avg_us
    assert "margin" in rt.reason and "margin" in stock.reason

    rt_paper = load_result(RESULTS / "paper-rpi5-rt-all-in.result.json")
    stock_paper = load_result(RESULTS / "paper-rpi5-stock-all-in.result.json")
    def verdicts(result: Result, budget: Budget) -> dict[str, Verdict]:
        return {c.metric: c.verdict for c in evaluate(result, budget, RESULTS).checks}

    assert set(verdicts(rt_paper, rt).values()) == {Verdict.PASS}
    assert set(verdicts(stock_paper, stock).values()) == {Verdict.PASS}
    # The paper's stock kernel judged as if it were the RT kernel: its 36802 µs breaks the budget.
    against_rt = verdicts(stock_paper, rt)
    assert against_rt["max_us"] is Verdict.FAIL and against_rt["avg_us"] is Verdict.FAIL


TOOLS = """\
schema: rtgate/thresholds/v2
budgets:
  - {board: qemu-arm64, flavor: rt, scenario: "*", max_us: 1, avg_us: 1,
     reason: "cyclictest's: the timerlat capture would fail it"}
  - {board: qemu-arm64, flavor: rt, scenario: "*", tool: timerlat, max_us: 60000, avg_us: 1000,
     reason: "timerlat's"}
"""


def _timerlat_result(rtgate_cli: RunCli, tmp_path: Path) -> Path:
    """A real rtla timerlat hist capture (qemu-arm64, rt, 20 s) through `rtgate parse`."""
    out = tmp_path / "timerlat.json"
    parsed = rtgate_cli("parse", ROOT / "tests/data/timerlat/rt-net.stdout", "-o", out,
                        "--board", "qemu-arm64", "--virtual", "--scenario", "timerlat-net",
                        "--flavor", "rt", "--timerlat-limit", "20000")
    assert parsed.returncode == 0, parsed.stderr
    return out


def test_budgets_select_by_tool(rtgate_cli: RunCli, tmp_path: Path) -> None:
    """A timerlat result is judged by the timerlat budget only, a cyclictest result by the
    cyclictest one, whatever their specificity; without a timerlat budget: no budget matches."""
    path = write(tmp_path, TOOLS)
    thresholds = load_thresholds(path)
    timerlat = _timerlat_result(rtgate_cli, tmp_path)
    budget = thresholds.for_result(load_result(timerlat), paths.BOARDS)
    assert budget is not None and budget.reason == "timerlat's"
    cyclictest = thresholds.select("qemu-arm64", "rt", "net")
    assert cyclictest is not None and cyclictest.tool == "cyclictest"
    assert thresholds.select("qemu-arm64", "rt", "net", tool="timerlat") == budget

    junit = str(tmp_path / "junit.xml")
    judged = rtgate_cli("check", str(timerlat), "--thresholds", str(path), "--junit", junit,
                        cwd=ROOT)
    assert judged.returncode == 0, judged.stdout + judged.stderr  # 52144 µs <= 60000 µs

    only_cyclictest = tmp_path / "cyclictest-only.yml"
    only_cyclictest.write_text(TOOLS.split("  - {board: qemu-arm64, flavor: rt, scenario: \"*\", "
                                           "tool")[0])
    unjudged = rtgate_cli("check", str(timerlat), "--thresholds", str(only_cyclictest), "--junit",
                          junit, cwd=ROOT)
    assert unjudged.returncode == 2, unjudged.stdout + unjudged.stderr
    assert "no budget matches" in unjudged.stderr and "tool=timerlat" in unjudged.stderr


def test_tool_is_exact_and_part_of_the_budget_key(tmp_path: Path) -> None:
    """No wildcard tool (one tool's budget never judges the other's numbers); the same key for
    another tool is no duplicate, for the same tool it is."""
    with pytest.raises(InputError, match="tool"):
        load_thresholds(write(tmp_path, TOOLS.replace("tool: timerlat", 'tool: "*"')))
    twice = TOOLS.replace("tool: timerlat, ", "")
    with pytest.raises(InputError, match="a second budget"):
        load_thresholds(write(tmp_path, twice))


def test_thresholds_diff_sees_each_tools_budgets(rtgate_cli: RunCli, tmp_path: Path) -> None:
    """Loosening the timerlat budget is reported (a diff over cyclictest's alone missed it)."""
    old, new = tmp_path / "old.yml", tmp_path / "new.yml"
    old.write_text(TOOLS)
    new.write_text(TOOLS.replace("tool: timerlat, max_us: 60000", "tool: timerlat, max_us: 90000"))
    proc = rtgate_cli("thresholds", "diff", str(old), str(new), cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ("loosens   qemu-arm64/rt/* (timerlat): max_us 60000 → 90000 µs "
                           "(+30000 µs, +50%)\n"), proc.stdout
