"""`rtgate publish`, the publisher's judge (issue 10): forged artifacts change nothing it posts
except as escaped text.

The artifacts are laid out as the gate uploads them (gate-BOARD/FLAVOR/SCENARIO/result.json)
from real results: the Pi 5 paper's (tests/data/results) and a recorded `local` gate run
(tests/data/gate). The comment is rendered by a real GFM renderer (markdown-it with linkify) and
every text outside a code span is checked for what GitHub would turn into a mention or a link.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from clirun import RunCli, RunProcess
from gfm import Rendered
from junitparser import Failure, JUnitXml

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "tests" / "data" / "results"
RECORDED = ROOT / "tests" / "data" / "gate" / "gate-local"
RT = RESULTS / "paper-rpi5-rt-all-in.result.json"
STOCK = RESULTS / "paper-rpi5-stock-all-in.result.json"
HOSTILE = "gate-rpi5__ - every budget met, approved by @someone (details at www.example.invalid) __"
RUN_URL = "https://github.com/rtgate/rtgate/actions/runs/1"


def place(gate: Path, board: str, flavor: str, where: str, source: Path,
          **changes: object) -> Path:
    data = json.loads(source.read_text())
    for dotted, value in changes.items():
        *parents, leaf = dotted.split("__")
        target = data
        for p in parents:
            target = target[p]
        target[leaf] = value
    path = gate / f"gate-{board}" / flavor / where / "result.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


def pi5(gate: Path, rt_max: float = 124.0) -> None:
    place(gate, "rpi5", "rt", "all-in", RT, totals__max_us=rt_max)
    place(gate, "rpi5", "stock", "all-in", STOCK)


class Published:
    def __init__(self, rtgate: RunCli | RunProcess, tmp: Path, *artifacts: Path,
                 args: tuple[str, ...] = ()) -> None:
        self.md, self.junit, self.outcome_path = tmp / "comment.md", tmp / "junit.xml", \
            tmp / "outcome.json"
        # Every input named, run from TMP as the lab's publisher runs from its workspace (a TMP
        # holding a bench/ of its own is another data root: rtgate_process runs those).
        self.proc = rtgate("publish", *artifacts, "--thresholds", ROOT / "thresholds.yml",
                           "--boards", ROOT / "bench/boards", "--markdown", self.md,
                           "--junit", self.junit, "--outcome", self.outcome_path,
                           "--run-url", RUN_URL, *args, cwd=tmp)
        assert self.proc.returncode in (0, 1, 2, 3, 4), self.proc.stderr
        self.comment = self.md.read_text()
        self.outcome = json.loads(self.outcome_path.read_text())


def assert_inert(comment: str) -> None:
    page = Rendered(comment)
    assert page.links == [RUN_URL], page.links
    assert page.tags <= Rendered.TAGS, page.tags - Rendered.TAGS
    plain = " ".join(page.plain)
    for live in ("@", "www.", "://", "#1"):
        assert live not in plain, f"{live!r} outside a code span: {plain}"


def test_the_verdict_comes_from_the_results_not_from_the_artifacts_own_words(
        rtgate_cli: RunCli, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    pi5(gate, rt_max=4800.0)
    art = gate / "gate-rpi5"
    # What the untrusted side says about itself: all ignored.
    (art / "exit-code").write_text("0\n")
    (art / "summary.md").write_text("## every budget met, approved\n")
    (art / "junit.xml").write_text(
        '<testsuites><testsuite name="forged" tests="1"><testcase name="all good"/>'
        "</testsuite></testsuites>")
    run = Published(rtgate_cli, tmp_path, art)
    assert run.proc.returncode == 1
    assert run.outcome["outcome"] == "regression"
    assert "❌ latency verdict: regression" in run.comment.split("<details>")[0]
    assert "approved" not in run.comment and "all good" not in run.comment
    # The check's JUnit is rendered here, from the results.
    cases = {c.name: c for suite in JUnitXml.fromfile(str(run.junit)) for c in suite}
    assert any(isinstance(r, Failure) for r in cases["rpi5/rt/all-in: max_us <= 155"].result)
    assert not any("forged" in name for name in cases)
    assert_inert(run.comment)


def test_a_healthy_artifact_passes(rtgate_cli: RunCli, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    pi5(gate)
    run = Published(rtgate_cli, tmp_path, gate / "gate-rpi5")
    assert run.proc.returncode == 0, run.comment
    assert run.outcome == {"outcome": "pass", "exit": 0,
                           "title": "✅ latency verdict: every budget met",
                           "boards": {"rpi5": "pass"}}
    assert_inert(run.comment)


def test_the_boards_given_decide_a_results_kind(rtgate_cli: RunCli, tmp_path: Path) -> None:
    """--boards DIR is the catalogue judging reads too: lab-pi (kind: rpi5), known only there, is
    judged by rpi5's budgets (it was its own kind, without a budget, when judging read the data
    root's bench/boards)."""
    boards = tmp_path / "boards"
    boards.mkdir()
    shipped = (ROOT / "bench" / "boards" / "rpi5.yml").read_text()
    (boards / "lab-pi.yml").write_text(
        shipped.replace("name: rpi5\n", "name: lab-pi\nkind: rpi5\n"))
    gate = tmp_path / "gate"
    place(gate, "lab-pi", "rt", "all-in", RT, board__name="lab-pi", totals__max_us=124.0)
    place(gate, "lab-pi", "stock", "all-in", STOCK, board__name="lab-pi")
    run = Published(rtgate_cli, tmp_path, gate / "gate-lab-pi", args=("--boards", boards))
    assert run.outcome["boards"] == {"lab-pi": "pass"}, run.comment
    assert run.proc.returncode == 0


def test_a_hostile_artifact_name_is_ignored_and_shown_inert(
        rtgate_cli: RunCli, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    pi5(gate, rt_max=4800.0)
    hostile = gate / HOSTILE
    shutil.copytree(gate / "gate-rpi5", hostile)
    (hostile / "rt" / "all-in" / "result.json").write_text(STOCK.read_text().replace(
        '"stock"', '"rt"'))
    run = Published(rtgate_cli, tmp_path, gate / "gate-rpi5", hostile)
    assert run.outcome["outcome"] == "regression"  # the real rpi5 artifact still decides
    assert "Ignored" in run.comment and "@someone" in run.comment
    assert_inert(run.comment)


def test_a_board_no_bench_file_names_is_not_judged(rtgate_cli: RunCli, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    place(gate, "evil", "rt", "all-in", RT)
    run = Published(rtgate_cli, tmp_path, gate / "gate-evil", args=("--expect", "rpi5"))
    # The expected board uploaded nothing: no measurement, never a pass.
    assert run.outcome["outcome"] == "infrastructure" and run.proc.returncode == 3
    assert "re-run once the board is healthy" in run.comment
    assert "`gate-evil`" in run.comment


def test_a_scenario_named_like_a_url_is_refused_and_inert(
        rtgate_cli: RunCli, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    pi5(gate)
    url = "https://www.example.invalid/@someone <img src=x onerror=alert(1)> | x"
    place(gate, "rpi5", "rt", "all-in", RT, scenario=url)
    # A result in a directory the gate never writes is never read.
    place(gate, "rpi5", "rt", "www.example.invalid", RT)
    run = Published(rtgate_cli, tmp_path, gate / "gate-rpi5")
    assert run.outcome["outcome"] == "input" and run.proc.returncode == 2
    assert "claims" in run.comment
    assert_inert(run.comment)


def test_missing_and_short_runs_keep_three_outcomes_apart(
        rtgate_cli: RunCli, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    place(gate, "rpi5", "rt", "all-in", RT)
    infra = Published(rtgate_cli, tmp_path, gate / "gate-rpi5")  # stock/all-in never finished
    assert infra.outcome["outcome"] == "infrastructure"
    assert "no result.json" in infra.comment
    # Every heading of the comment, the nested check's too, says which of the two exit 3 is.
    assert "rtgate check: 🛠️ infrastructure failure" in infra.comment
    assert "not decided from the data" not in infra.comment

    short = tmp_path / "short"
    short.mkdir()
    # A 60 s run: 2.4 M of the 4.5 M samples the budget needs.
    place(short / "gate", "rpi5", "rt", "all-in", RT, totals__samples=2_400_000)
    place(short / "gate", "rpi5", "stock", "all-in", STOCK)
    incomplete = Published(rtgate_cli, short, short / "gate" / "gate-rpi5")
    assert incomplete.outcome["outcome"] == "incomplete" and incomplete.proc.returncode == 3
    assert "not decided from the data" in incomplete.comment
    assert "measure more" in incomplete.outcome["title"]
    assert "re-run once the board is healthy" not in incomplete.comment
    assert "rtgate check: ⚠️ not decided from the data" in incomplete.comment
    assert "infrastructure" not in incomplete.comment.lower()


def _crashed(home: Path, said: str, evidence_text: str) -> None:
    """What the gate leaves for a run whose kernel under test crashed: the pulled evidence and an
    infra.json naming the line and the file (rtgate.gate.infrarecord)."""
    pstore = home / "previous-boot" / "pstore"
    pstore.mkdir(parents=True)
    (pstore / "dmesg-ramoops-0").write_text(evidence_text)
    (home / "infra.json").write_text(json.dumps({
        "schema": "rtgate/infra/v2", "board": "rpi5", "flavor": "stock", "scenario": "all-in",
        "log": "ssh.log", "message": "rpi5: the test kernel did not stay up", "crash": said,
        "evidence": "previous-boot/pstore/dmesg-ramoops-0"}))


def test_a_crashed_kernel_is_its_failure_only_with_its_evidence(
        rtgate_cli: RunCli, tmp_path: Path) -> None:
    """Exit 1, "crashed", in the comment and the JUnit, when the artifact's evidence holds the
    line the record names; the same record without that evidence is an infrastructure failure
    (exit 3): the claim is checked against the raw file, never taken from the record."""
    said = "Kernel panic - not syncing: Oops: Fatal exception"
    gate = tmp_path / "gate"
    place(gate, "rpi5", "rt", "all-in", RT)
    _crashed(gate / "gate-rpi5" / "stock" / "all-in", said,
             f"Panic#1 Part1\n<0>[    2.345678] {said}\n")
    crash = Published(rtgate_cli, tmp_path, gate / "gate-rpi5")
    assert crash.proc.returncode == 1, crash.proc.stderr
    assert crash.outcome["outcome"] == "crashed", crash.outcome
    assert "the kernel under test crashed" in crash.outcome["title"]
    assert said in crash.comment and "re-run once the board is healthy" not in crash.comment
    failures = [f for suite in JUnitXml.fromfile(str(crash.junit)) for case in suite
                for f in case.result if isinstance(f, Failure)]
    assert any(said in (f.message or "") for f in failures), crash.junit.read_text()

    forged = tmp_path / "forged"
    forged.mkdir()
    place(forged / "gate", "rpi5", "rt", "all-in", RT)
    # The record claims a panic its evidence file does not hold.
    _crashed(forged / "gate" / "gate-rpi5" / "stock" / "all-in", said, "a quiet boot log\n")
    infra = Published(rtgate_cli, forged, forged / "gate" / "gate-rpi5")
    assert infra.proc.returncode == 3 and infra.outcome["outcome"] == "infrastructure", \
        infra.outcome


def test_a_symlinked_result_is_refused(rtgate_cli: RunCli, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    pi5(gate)
    link = gate / "gate-rpi5" / "stock" / "all-in" / "result.json"
    link.unlink()
    link.symlink_to(STOCK)
    run = Published(rtgate_cli, tmp_path, gate / "gate-rpi5")
    assert run.outcome["outcome"] == "input"
    assert "symbolic link" in run.comment


def test_the_recorded_gate_run_is_judged_again(rtgate_cli: RunCli, tmp_path: Path) -> None:
    run = Published(rtgate_cli, tmp_path, RECORDED, args=("--scenarios", "idle"))
    assert run.outcome["boards"] == {"local": "pass"}, run.comment
    assert "| `local (virtual)` | `stock` | `idle` | max_us |" in run.comment


def test_changed_gate_inputs_open_the_comment_with_their_budget_diff(
        rtgate_cli: RunCli, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    pi5(gate, rt_max=4800.0)
    context = tmp_path / "context"
    context.mkdir()
    changed = ["thresholds.yml", "bench/boards/rpi5.yml", "bench/scenarios/@x www.evil.invalid.yml"]
    (context / "context.json").write_text(json.dumps({
        "event": "workflow_run", "head_sha": "a" * 40, "pull_request": 7,
        "boards": ["rpi5"], "scenarios": [], "changed_inputs": changed}))
    theirs = (ROOT / "thresholds.yml").read_text().replace("max_us: 155", "max_us: 5000", 1)
    (context / "thresholds.yml").write_text(theirs)
    run = Published(rtgate_cli, tmp_path, gate / "gate-rpi5", args=("--context", str(context)))
    # Judged by main's budgets anyway.
    assert run.outcome["outcome"] == "regression"
    head = run.comment.split("**❌")[0]
    assert "[!WARNING]" in head and "changes gate inputs" in head
    for path in changed:
        assert f"`{path}`" in head
    assert "**loosens** `rpi5/rt/all-in`: `max_us 155 → 5000 µs (+4845 µs, +3126%)`" in head
    assert_inert(run.comment)


def test_a_flood_of_changed_inputs_and_artifacts_keeps_the_comment_postable_and_inert(
        rtgate_cli: RunCli, tmp_path: Path) -> None:
    # Hundreds of long paths (a pull request names them) would make a comment GitHub refuses,
    # leaving the last push's verdict on the pull request; cut inside a code span, the rest
    # would become live Markdown.
    gate = tmp_path / "gate"
    pi5(gate, rt_max=4800.0)
    hostile = [gate / f"gate-x{n} approved by @someone www.example.invalid {'`' * 3}" for n in
               range(40)]
    for h in hostile:
        h.mkdir()
    context = tmp_path / "context"
    context.mkdir()
    changed = [f"bench/scenarios/{n:03d}-{'x' * 250} see www.evil.invalid @someone.yml"
               for n in range(400)]
    (context / "context.json").write_text(json.dumps({
        "event": "workflow_run", "head_sha": "a" * 40, "pull_request": 7,
        "boards": ["rpi5"], "scenarios": [], "changed_inputs": changed}))
    run = Published(rtgate_cli,
                    tmp_path, gate / "gate-rpi5", *hostile, args=("--context", str(context)))
    assert run.outcome["outcome"] == "regression"
    assert len(run.comment) <= 60_000
    head = run.comment.split("**❌")[0]
    assert "`bench/scenarios/029-" in head and "`bench/scenarios/030-" not in head
    assert "> - … and 370 more" in head and "… and 10 more" in run.comment
    assert "❌ latency verdict: regression" in run.comment
    assert_inert(run.comment)


def test_a_comment_over_githubs_limit_is_cut_at_a_line(tmp_path: Path) -> None:
    from rtgate.publish import render as publish

    lines = ["## Latency gate", "", "**✅ latency verdict: every budget met**", "",
             "<details><summary>Every check</summary>", ""]
    lines += [f"- `{n:05d} @someone www.example.invalid {'y' * 200}`" for n in range(400)]
    text = publish._fit([*lines, "</details>"], RUN_URL)
    assert len(text) <= publish.LIMIT < len("\n".join(lines))
    assert text.rstrip().endswith("*.") and "Cut at 60000 characters" in text
    assert text.count("<details>") == text.count("</details>") == 1
    assert_inert(text)


def test_a_context_that_is_not_the_plan_jobs_is_an_input_error(
        rtgate_cli: RunCli, tmp_path: Path) -> None:
    context = tmp_path / "context"
    context.mkdir()
    (context / "context.json").write_text(json.dumps({
        "event": "workflow_run", "head_sha": "not a sha", "boards": ["rpi5"]}))
    proc = rtgate_cli("publish", "--context", str(context), "--markdown", str(tmp_path / "c.md"))
    assert proc.returncode == 2 and "context.json: head_sha" in proc.stderr



def test_a_pull_request_changing_no_kernel_input_is_green_unjudged_and_inert(
        rtgate_cli: RunCli, tmp_path: Path) -> None:
    """The plan job found no kernel input in the pull request's diff: outcome `unchanged`
    (exit 0), no board expected, the changed gate inputs still listed, escaped; a gate
    artifact that turns up anyway is listed as ignored, never judged."""
    context = tmp_path / "context"
    context.mkdir()
    (context / "context.json").write_text(json.dumps({
        "event": "workflow_run", "head_sha": "a" * 40, "pull_request": 7, "boards": ["rpi5"],
        "changed_inputs": [f"bench/{HOSTILE}.yml"], "kernel_inputs_changed": False}))
    gate = tmp_path / "gate"
    pi5(gate, rt_max=4800.0)  # a regression, were it judged
    run = Published(rtgate_cli, tmp_path, gate / "gate-rpi5", args=("--context", str(context)))
    assert run.proc.returncode == 0, run.proc.stderr
    assert run.outcome == {"outcome": "unchanged", "exit": 0, "title": "✅ no kernel input "
                           "changed: nothing measured, nothing to judge", "boards": {}}
    assert "changes nothing under `kernel/patches/` or `kernel/configs/`" in run.comment
    assert "Ignored (nothing was to be measured): `gate-rpi5`" in run.comment
    assert "regression" not in run.comment and list(JUnitXml.fromfile(str(run.junit))) == []
    assert_inert(run.comment)

def test_only_a_pull_requests_context_may_say_no_kernel_input_changed(
        rtgate_cli: RunCli, tmp_path: Path) -> None:
    """main's pushes are always measured: a push context claiming nothing changed is refused
    (one line naming the file, exit 2), never published green."""
    context = tmp_path / "context"
    context.mkdir()
    (context / "context.json").write_text(json.dumps({
        "event": "push", "head_sha": "a" * 40, "boards": ["rpi5"],
        "kernel_inputs_changed": False}))
    proc = rtgate_cli("publish", "--context", str(context), "--markdown", str(tmp_path / "c.md"))
    assert proc.returncode == 2, proc.stderr
    assert "context.json" in proc.stderr and "names a pull request's gate" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1

@pytest.mark.parametrize("text", ["a|b", "``x``", "@someone", "<script>", "www.x.invalid",
                                  "line\nbreak", "\u202eevil", "#123"])
def test_code_spans_hold_any_text(text: str) -> None:
    from rtgate.gate.markdown import cell, code

    for rendered in (code(text), f"| h |\n| - |\n| {cell(text)} |"):
        page = Rendered(rendered)
        assert not page.links and not "".join(page.plain).strip("| \n-h"), rendered


# ---- A pull request's A/B rounds: re-decided from their results ----------------------------

AB_DATA = ROOT / "tests" / "data" / "ab"  # real interleaved rounds on `local` (README there)
AB_THRESHOLDS = """\
schema: rtgate/thresholds/v2
budgets:
  - board: local
    flavor: "*"
    scenario: "*"
    max_us: 100000
    avg_us: 1000
    min_samples: 1000
    ab: {min_effect_pct: 50, alpha: 0.2}
    reason: the local smoke budget, with an A/B margin for the captured rounds
"""


def ab_run(tmp: Path, base: str, cand: str, rounds: int = 6) -> tuple[Path, Path, tuple[str, ...]]:
    """gate-local laid out as `rtgate ab` writes it (A|B/round-N/running/idle/result.json),
    the plan job's context naming the board's A/B plan, and the publisher's arguments."""
    art = tmp / "gate" / "gate-local"
    for side, source in (("A", base), ("B", cand)):
        for n in range(1, rounds + 1):
            home = art / side / f"round-{n}" / "running" / "idle"
            home.mkdir(parents=True)
            shutil.copy(AB_DATA / source / f"r{n}" / "result.json", home / "result.json")
    context = tmp / "context"
    context.mkdir()
    (context / "context.json").write_text(json.dumps({
        "event": "workflow_run", "head_sha": "a" * 40, "pull_request": 7, "boards": ["local"],
        "scenarios": ["idle"], "ab": {"local": {"round_s": 4, "max_time_s": 120, "rounds": 6}}}))
    (tmp / "thresholds.yml").write_text(AB_THRESHOLDS)
    return art, context, ("--context", str(context), "--thresholds", str(tmp / "thresholds.yml"))


def test_the_gate_plan_is_the_plan_jobs(rtgate_cli: RunCli, tmp_path: Path) -> None:
    """A plan of fewer rounds than the test needs is not the plan job's: input error."""
    _, context, _ = ab_run(tmp_path, "idle", "idle-loaded", rounds=1)
    data = json.loads((context / "context.json").read_text())
    data["ab"]["local"]["rounds"] = 2
    (context / "context.json").write_text(json.dumps(data))
    proc = rtgate_cli("publish", "--context", str(context), "--markdown", str(tmp_path / "c.md"))
    assert proc.returncode == 2 and "context.json: ab.local.rounds" in proc.stderr


@pytest.mark.parametrize("side, outcome, code", [
    # The pull request's kernel crashed in a round: its failure, the A/B run ends there.
    ("B", "crashed", 1),
    # Main's kernel crashed: nothing about the pull request is known, and it is not the lab's.
    ("A", "incomplete", 3)])
def test_a_round_whose_kernel_crashed_decides_the_ab_gate_by_its_side(
        rtgate_cli: RunCli, tmp_path: Path, side: str, outcome: str, code: int) -> None:
    # Its budgets beside the artifact, not in the directory the publisher runs from.
    art, _, args = ab_run(tmp_path / "lab", "idle", "idle")
    home = art / side / "round-2" / "running" / "idle"
    (home / "result.json").unlink()
    said = "Kernel panic - not syncing: hung_task: blocked tasks"
    _crashed(home, said, f"<0>[  242.0] {said}\n")
    published = Published(rtgate_cli, tmp_path, art, args=args)
    assert published.proc.returncode == code, published.proc.stderr
    assert published.outcome["outcome"] == outcome, published.outcome
    assert said in published.comment
    assert ("the base kernel crashed" in published.comment) == (side == "A")
