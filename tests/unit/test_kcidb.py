"""`rtgate kcidb` (issue 39): a gate run as one KCIDB report, validated by kcidb-io itself.

Every report is checked with ``kcidb_io.schema.LATEST.validate`` (kcidb-io pinned in
pyproject.toml, schema v5.3). The runs are real: qemu-arm64 gate results of the sweep
(tests/data/sweep), the series-4 bisect's A/B rounds on qemu-arm64 (tests/data/bisect/replay:
step 1 is over its budget, step 2 cannot be told apart within the gate's margin), the Pi 5
paper's results and the hostile corpus (tests/data/hostile). The build records are made by
rtgate's own build code (``rtgate.kernel.build``'s metadata of a real plan of kernel/targets).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tarfile
from pathlib import Path
from typing import Any

import pytest
from clirun import RunCli
from kcidb_io.schema import LATEST
from kcidbdata import (
    DATA,
    DEBIAN,
    GCC,
    ORIGIN,
    PI5_COMPATIBLE,
    REPLAY,
    ROOT,
    RPI_COMMIT,
    SERIES_4,
    SWEEP,
    build_record,
    pi5_gate,
    place,
    qemu_gate,
)

from rtgate.kernel import record
from rtgate.kernel.patches import read_series
from rtgate.result import Trace, load_result
from rtgate.trace import autoanalysis


def kcidb(rtgate: RunCli, tmp: Path, *runs: Path, args: tuple[str, ...] = (),
          thresholds: Path = ROOT / "thresholds.yml", rc: int = 0) -> dict[str, Any]:
    out = tmp / "kcidb.json"
    proc = rtgate("kcidb", *runs, "--origin", ORIGIN, "--out", out, "--thresholds", thresholds,
                  "--boards", ROOT / "bench" / "boards", "--run-id", "7001", *args, cwd=tmp)
    assert proc.returncode == rc, proc.stderr
    if rc:
        return {"stderr": proc.stderr}
    doc = json.loads(out.read_text())
    # kcidb-io's own validation, the rule every KCIDB submission is held to.
    LATEST.validate(doc)
    assert LATEST.is_compatible_exactly(doc)
    return doc


def at_path(doc: dict[str, Any], path: str) -> list[dict[str, Any]]:
    return [t for t in doc["tests"] if t["path"] == path]


def test_a_qemu_gate_run_is_a_valid_report_with_numbers_in_seconds(
        rtgate_cli: RunCli, tmp_path: Path) -> None:
    doc = kcidb(rtgate_cli, tmp_path, qemu_gate(tmp_path), args=(
        "--scenarios", "net,idle", "--site-url", "https://lab.example.org/rtgate",
        "--files", str(tmp_path / "files"),
        "--files-url", "https://lab.example.org/rtgate/kcidb"))
    assert doc["version"] == {"major": 5, "minor": 3}
    # Debian's linux-source: one checkout, no git commit, the package named, series hashed.
    (checkout,) = doc["checkouts"]
    assert "git_commit_hash" not in checkout and "git_repository_url" not in checkout
    assert checkout["tree_name"] == "debian:linux-source-6.12"
    assert "6.12.57-1" in checkout["comment"]
    series = read_series(SERIES_4)
    assert series
    hashes = "".join(f"{p.sha256}\n" for p in series)
    assert checkout["patchset_hash"] == hashlib.sha256(hashes.encode()).hexdigest()
    builds = {b["config_name"].rsplit("+", 1)[1]: b for b in doc["builds"]}
    assert set(builds) == {"stock.config", "rt.config"}
    rt = builds["rt.config"]
    assert rt["architecture"] == "arm64" and rt["compiler"] == GCC and rt["duration"] == 412.5
    assert rt["config_name"] == "tinyconfig+qemu-arm64.config+tracing.config+rt.config"
    assert rt["config_url"].endswith("/config.txt") and rt["log_url"].endswith("/build.log.txt")
    # The linked files exist where --files put them.
    rel = rt["config_url"].removeprefix("https://lab.example.org/rtgate/kcidb/")
    assert (tmp_path / "files" / rel).read_text() == "CONFIG_PREEMPT_RT=y\n"
    boots = at_path(doc, "boot")
    assert len(boots) == 4 and {b["status"] for b in boots} == {"PASS"}
    # Every test marks the virtual board.
    assert all(t["misc"]["virtual"] is True and "no real-time claim" in
               t["environment"]["comment"] for t in doc["tests"])
    result = load_result(SWEEP / "rt" / "net" / "result.json")
    (mx,) = at_path(doc, "rt-tests.cyclictest.net.all.max")[1:] or [None]
    by_build = [t for t in at_path(doc, "rt-tests.cyclictest.net.all.max")
                if t["build_id"] == rt["id"]]
    assert mx is None or mx in by_build
    (rt_max,) = by_build
    assert rt_max["number"] == {"value": result.totals.max_us / 1e6, "unit": "s",
                                "prefix": "metric"}
    assert rt_max["status"] == "PASS"  # the qemu-arm64 smoke budget, 10 s
    assert rt_max["misc"]["budget_us"] == 10_000_000
    assert rt_max["misc"]["tool"] == "cyclictest" and rt_max["misc"]["tool_version"] == "2.40"
    assert rt_max["misc"]["run_id"] == "7001"
    # No budget on p99.99 or avg for qemu-arm64: numbers, DONE; p99.99 there is a bound.
    (p9999,) = [t for t in at_path(doc, "rt-tests.cyclictest.net.all.p99_99")
                if t["build_id"] == rt["id"]]
    assert p9999["status"] == "DONE" and p9999["misc"]["relation"] == ">="
    # Per thread too.
    assert at_path(doc, "rt-tests.cyclictest.net.thread0.max")
    links = {f["name"]: f["url"] for f in rt_max["output_files"]}
    assert links["run.html"] == ("https://lab.example.org/rtgate/runs/"
                                 "qemu-arm64-net-20261122T200747Z/index.html")
    assert "cyclictest.hist.txt" in links
    assert "issues" not in doc


def test_the_same_run_twice_is_the_same_report(rtgate_cli: RunCli, tmp_path: Path) -> None:
    gate = qemu_gate(tmp_path)
    first = kcidb(rtgate_cli, tmp_path, gate)
    second = kcidb(rtgate_cli, tmp_path, gate)
    assert first == second
    ids = [t["id"] for t in first["tests"]]
    assert len(ids) == len(set(ids)) and all(i.startswith(f"{ORIGIN}:7001:") for i in ids)


def test_a_pi5_breach_with_its_trace_is_a_failure_an_issue_and_an_incident(
        rtgate_cli: RunCli, tmp_path: Path) -> None:
    stdout = (DATA / "trace" / "timerlat-rt-net-irq-breach.stdout").read_text()
    breaches = autoanalysis.parse(stdout)
    assert breaches
    trace = Trace(tool="rtla timerlat", version="6.12", threshold_us=155, cap_s=60,
                  breached=True, breaches=breaches, raw=["raw/trace.stdout"])
    gate = pi5_gate(tmp_path, totals__max_us=4800.0, trace=trace.model_dump())
    context = tmp_path / "context"
    context.mkdir()
    (context / "context.json").write_text(json.dumps({
        "event": "push", "head_sha": "a" * 40, "boards": ["rpi5"], "scenarios": ["all-in"]}))
    doc = kcidb(rtgate_cli, tmp_path, gate, args=(
        "--context", str(context), "--run-url", "https://github.com/o/r/actions/runs/7001",
        "--repository-url", "https://github.com/o/r"))
    (checkout,) = doc["checkouts"]
    assert checkout["git_commit_hash"] == RPI_COMMIT
    assert checkout["git_repository_url"] == "https://github.com/raspberrypi/linux"
    assert checkout["tree_name"] == "raspberrypi/linux"
    assert checkout["patchset_files"][0]["url"] == (
        "https://github.com/o/r/blob/" + "a" * 40 + "/kernel/patches/"
        "0001-harmless-bcd.patch")
    boots = at_path(doc, "boot")
    assert {tuple(b["environment"]["compatible"]) for b in boots} == {tuple(PI5_COMPATIBLE)}
    assert all(b["misc"]["virtual"] is False for b in boots)
    (mx,) = [t for t in at_path(doc, "rt-tests.cyclictest.all-in.all.max")
             if t["status"] == "FAIL"]
    assert mx["number"]["value"] == pytest.approx(4800e-6)
    (issue,) = doc["issues"]
    assert issue["culprit"] == {"code": True, "tool": False, "harness": False}
    assert "commit " + "a" * 40 in issue["report_subject"]
    assert issue["report_url"] == "https://github.com/o/r/actions/runs/7001"
    (incident,) = doc["incidents"]
    assert incident["test_id"] == mx["id"] and incident["issue_id"] == issue["id"]
    assert "traced (rtla timerlat)" in incident["comment"]


def test_incomplete_runs_are_errors_with_their_reason(rtgate_cli: RunCli,
                                                      tmp_path: Path) -> None:
    gate = pi5_gate(tmp_path, status="partial", reasons=["cyclictest exited 1: killed"])
    doc = kcidb(rtgate_cli, tmp_path, gate)
    rt_tests = [t for t in doc["tests"] if t["path"].startswith("rt-tests.")
                and "rt.all-in" in t["id"]]
    assert rt_tests and {t["status"] for t in rt_tests} == {"ERROR"}
    assert "killed" in rt_tests[0]["misc"]["reason"]
    assert "issues" not in doc


def test_a_lab_failure_and_a_missing_build_record_are_said(rtgate_cli: RunCli,
                                                           tmp_path: Path) -> None:
    gate = qemu_gate(tmp_path)
    shutil.rmtree(gate / "stock" / "idle")
    shutil.rmtree(gate / "builds" / "stock")
    doc = kcidb(rtgate_cli, tmp_path, gate, args=("--scenarios", "net,idle"))
    (lost,) = [t for t in at_path(doc, "boot") if t["status"] == "ERROR"]
    assert "no result.json" in lost["misc"]["reason"]
    stock = [b for b in doc["builds"] if "no build record" in b.get("comment", "")]
    assert stock and "architecture" not in stock[0]


def _replay_step(tmp: Path, step: str) -> Path:
    """One step of the recorded series-4 bisect (real qemu-arm64 A/B rounds) as the A/B gate
    artifact of a pull request's gate."""
    with tarfile.open(REPLAY / "series-4-bisect.tar.xz") as tar:
        members = [m for m in tar.getmembers() if m.name.startswith(f"steps/{step}/")]
        tar.extractall(tmp / "x", members=members)  # the project's own recording
    gate = tmp / "gate-qemu-arm64"
    shutil.move(tmp / "x" / "steps" / step, gate)
    # The bisect measured stock only; a gate measures the board's flavors, stock and rt. The rt
    # rounds here are the stock rounds relabelled: the layout needs them, the test reads no rt
    # number.
    for path in sorted(gate.glob("[AB]/round-*/stock/idle/result.json")):
        place(gate, str(path.parent.parent.relative_to(gate).parent / "rt"), "idle", path,
              kernel__flavor="rt")
    for side in ("A", "B"):
        for flavor in ("stock", "rt"):
            build_record(gate / side / "builds" / flavor, "qemu-arm64", flavor, DEBIAN,
                         series=SERIES_4)
    return gate


def _pr_context(tmp: Path) -> Path:
    context = tmp / "context"
    context.mkdir()
    (context / "context.json").write_text(json.dumps({
        "event": "workflow_run", "head_sha": "b" * 40, "pull_request": 42,
        "boards": ["qemu-arm64"], "scenarios": ["idle"],
        "ab": {"qemu-arm64": {"round_s": 10, "max_time_s": 540, "rounds": 10}}}))
    return context


@pytest.mark.parametrize(("step", "ab_status"), [
    # Step 1: the planted latency's first candidate round is over the 900 ms budget.
    ("01_1-4_vs_none", "FAIL"),
    # Step 2: 3 rounds a side cannot show "same" within the gate's 50 % margin: undecided.
    ("02_1-2_vs_none", "DONE"),
])
def test_a_pull_requests_ab_rounds_are_reported_as_a_patchset(
        rtgate_cli: RunCli, tmp_path: Path, step: str, ab_status: str) -> None:
    gate = _replay_step(tmp_path, step)
    doc = kcidb(rtgate_cli, tmp_path, gate, args=("--context", str(_pr_context(tmp_path)),
                                                  "--scenarios", "idle"),
                thresholds=ROOT / "tests" / "data" / "bisect" / "thresholds.yml")
    (ab,) = at_path(doc, "rt-tests.ab")
    assert ab["status"] == ab_status
    if ab_status == "DONE":
        assert ab["misc"]["outcome"] == "undecided" and ab["misc"]["reason"]
        assert "issues" not in doc
    else:
        (issue,) = doc["issues"]
        assert "pull request #42" in issue["report_subject"]
        assert all(i["test_id"] in {t["id"] for t in doc["tests"]} for i in doc["incidents"])
    # The candidate's series: its checkout's patchset hash.
    series = read_series(SERIES_4)
    assert {c["patchset_hash"] for c in doc["checkouts"]} == {
        record.patchset_hash([p.sha256 for p in series])}
    # Each candidate round is a board run: its boot and its numbers, named by its place.
    assert any(":B.round-1.stock.idle:boot" in t["id"] for t in at_path(doc, "boot"))
    assert all(t["misc"]["pull_request"] == 42 for t in doc["tests"])


@pytest.mark.parametrize("hostile", ["release-fffe", "release-lone-surrogate",
                                     "scenario-lone-surrogate"])
def test_hostile_strings_stay_data_and_the_report_stays_valid(
        rtgate_cli: RunCli, tmp_path: Path, hostile: str) -> None:
    gate = pi5_gate(tmp_path, DATA / "hostile" / f"{hostile}.result.json",
                    tool__version="2.40\0<script>alert(1)</script>\u202e",
                    run_id="x\0y ../../etc/passwd",
                    environment__dt_compatible=["brcm,bcm2712", "bad compat", "a\0b", 5])
    record_path = gate / "builds" / "rt" / record.METADATA
    meta = json.loads(record_path.read_text())
    meta["kernel_release"] = "6.12\0-rt\ud800" if False else "6.12\u0000-rt <b>x</b>"
    meta["plan"]["toolchain"]["gcc"] = "gcc\0 $(reboot) `id`"
    record_path.write_text(json.dumps(meta))
    doc = kcidb(rtgate_cli, tmp_path, gate)
    text = json.dumps(doc)
    assert "\\u0000" not in text and "\\ud800" not in text
    compatible = {t["id"].split(":")[3]: t["environment"].get("compatible")
                  for t in at_path(doc, "boot")}
    assert compatible["stock.all-in"] == PI5_COMPATIBLE
    # Of the rt run's, only the well-formed string (KCIDB: no space, no NUL, strings only).
    assert compatible["rt.all-in"] in (["brcm,bcm2712"], None)
    if hostile == "scenario-lone-surrogate":
        # It claims another scenario than the place the gate writes it: refused, an error.
        (refused,) = [t for t in at_path(doc, "boot") if t["status"] == "ERROR"]
        assert "refused" in refused["comment"]
    else:
        # Kept as data (JSON escapes it; no NUL), the regression still a failure.
        assert any(t["misc"].get("tool_version") == "2.40<script>alert(1)</script>\u202e"
                   for t in doc["tests"])
        assert {"FAIL"} <= {t["status"] for t in doc["tests"]}


def test_a_hostile_build_record_is_refused_as_data_not_trusted(
        rtgate_cli: RunCli, tmp_path: Path) -> None:
    gate = pi5_gate(tmp_path)
    record_path = gate / "builds" / "rt" / record.METADATA
    meta = json.loads(record_path.read_text())
    meta["plan"]["board"]["arch"] = "arm64; rm -rf /"
    record_path.write_text(json.dumps(meta))
    doc = kcidb(rtgate_cli, tmp_path, gate)
    refused = [b for b in doc["builds"] if "not a build record" in b.get("comment", "")]
    assert refused and "plan.board.arch" in refused[0]["comment"]


@pytest.mark.parametrize(("args", "said"), [
    (("--origin", "Bad-Origin"), "a KCIDB origin is [a-z0-9_]+"),
    (("--site-url", "javascript:alert(1)"), "expected an http(s) URL"),
    (("--files", "x"), "--files needs --files-url"),
    (("--flavors", "rt"), "--flavors goes with --board"),
])
def test_bad_settings_are_input_errors(rtgate_cli: RunCli, tmp_path: Path,
                                       args: tuple[str, ...], said: str) -> None:
    gate = qemu_gate(tmp_path)
    proc = rtgate_cli("kcidb", gate, "--origin", ORIGIN, "--out", tmp_path / "k.json",
                      "--thresholds", ROOT / "thresholds.yml", *args, cwd=tmp_path)
    assert proc.returncode == 2 and said in proc.stderr
    assert not (tmp_path / "k.json").exists()


def test_a_plain_pipeline_directory_with_its_board(rtgate_cli: RunCli, tmp_path: Path) -> None:
    gate = qemu_gate(tmp_path)
    run = gate.rename(tmp_path / "demo")
    doc = kcidb(rtgate_cli, tmp_path, run, args=("--board", "qemu-arm64",
                                                  "--scenarios", "net,idle"))
    assert len(at_path(doc, "boot")) == 4


def test_patchset_hash_is_kcidbs_shell_recipe(tmp_path: Path) -> None:
    """kcidb-io v04_00 on: "sha256sum *.patch | cut -c-64 | sha256sum | cut -c-64"."""
    a, b = hashlib.sha256(b"one").hexdigest(), hashlib.sha256(b"two").hexdigest()
    assert record.patchset_hash([]) == ""
    assert record.patchset_hash([a, b]) == hashlib.sha256(f"{a}\n{b}\n".encode()).hexdigest()
    description = LATEST.json["$defs"]["checkout"]["properties"]["patchset_hash"]["description"]
    assert "sha256sum *.patch | cut -c-64 | sha256sum" in description


def test_an_unreachable_endpoint_is_retried_with_growing_pauses_then_undelivered() -> None:
    """No HTTP answer (a closed loopback port): every try made, pauses doubling, never a
    rejection of the report (kcidb-restd-rs answers every refusal with an HTTP status)."""
    import socket

    from rtgate.kcidb.send import Endpoint, SendOutcome, send

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    pauses: list[float] = []
    sent = send(b"{}", Endpoint(f"http://127.0.0.1:{port}", "tok", attempts=4, pause_s=1.5),
                sleep=pauses.append)
    assert sent.delivery is SendOutcome.UNDELIVERED and "4 tries" in sent.message
    assert pauses == [1.5, 3.0, 6.0]


def test_a_device_trees_compatible_property_is_read_as_kcidb_takes_it(tmp_path: Path) -> None:
    """/proc/device-tree/compatible of a Pi 5 (NUL-separated, NUL-terminated), read as the
    ordered list kcidb-io's test.environment.compatible describes."""
    from rtgate.harness.environment import dt_compatible

    prop = tmp_path / "compatible"
    prop.write_bytes(b"raspberrypi,5-model-b\0brcm,bcm2712\0")
    assert dt_compatible(prop) == PI5_COMPATIBLE
    assert dt_compatible(tmp_path / "absent") == []


def test_a_real_build_record_of_the_demos_stock_kernel(rtgate_cli: RunCli,
                                                       tmp_path: Path) -> None:
    """tests/data/kcidb: the metadata.json of a real qemu-arm64 stock build, kept with the
    sweep's results of the same kernel release (6.12.117)."""
    gate = qemu_gate(tmp_path)
    shutil.copyfile(DATA / "kcidb" / "qemu-arm64-stock.metadata.json",
                    gate / "builds" / "stock" / record.METADATA)
    rec = record.load(gate / "builds" / "stock")
    assert rec.kernel_release == "6.12.117" and rec.patchset_hash == ""
    doc = kcidb(rtgate_cli, tmp_path, gate, args=("--scenarios", "net,idle"))
    (stock,) = [b for b in doc["builds"] if b["config_name"].endswith("+stock.config")]
    assert stock["config_name"] == "tinyconfig+qemu-arm64.config+tracing.config+stock.config"
    assert stock["compiler"] == "aarch64-linux-gnu-gcc (Debian 12.2.0-14) 12.2.0"
    assert stock["duration"] == 1194.6 and stock["start_time"] == "2026-11-28T05:31:54+00:00"
    (checkout,) = [c for c in doc["checkouts"] if c["id"] == stock["checkout_id"]]
    assert checkout["patchset_hash"] == "" and "6.12.117-1~deb12u1" in checkout["comment"]


def test_a_tail_budget_reports_the_pwcet_the_gate_judged(rtgate_cli: RunCli,
                                                         tmp_path: Path) -> None:
    """A real local run with block maxima (tests/data/tail) under a pwcet_us budget: its block
    maxima fail the estimator's independence check, so the pwcet test is an ERROR with that
    reason and no number, never a pass."""
    gate = tmp_path / "gate-local"
    place(gate, "running", "idle", DATA / "tail" / "local-idle-30s.result.json")
    budget = tmp_path / "budgets.yml"
    budget.write_text("schema: rtgate/thresholds/v2\nbudgets:\n  - {board: local, flavor: '*', "
                      "scenario: '*', max_us: 1000000, pwcet_us: {per_hour: 1.0e-3, "
                      "max: 1000000}, reason: a tail budget any run meets}\n")
    doc = kcidb(rtgate_cli, tmp_path, gate, thresholds=budget, args=("--scenarios", "idle"))
    (pwcet,) = [t for t in doc["tests"] if t["path"].endswith(".all.pwcet")]
    assert pwcet["status"] == "ERROR" and "number" not in pwcet
    assert "independence FAILED" in pwcet["misc"]["reason"]
    (mx,) = [t for t in doc["tests"] if t["path"].endswith(".all.max")]
    assert mx["status"] == "PASS"
    # The local board measures its running kernel: no build by rtgate, said so.
    (build,) = doc["builds"]
    assert "running kernel" in build["comment"]


def test_a_judged_pwcet_is_a_number_with_its_interval(tmp_path: Path) -> None:
    """The document of an evaluation whose tail check has an estimate (the shape
    gate.verdict._pwcet returns): the number in seconds, the interval in misc."""
    from rtgate.gate.verdict import Check, Evaluation, Verdict
    from rtgate.kcidb import document
    from rtgate.kcidb.document import BoardRun, Build, Submitter

    result = load_result(DATA / "tail" / "local-idle-30s.result.json")
    check = Check("pwcet_us", "<=", 900.0, 610.0, False, Verdict.PASS, interval=(540.0, 700.0),
                  context="at 0.001/h, 95% CI, GEV on block maxima")
    ruling = Evaluation(result=result, source=tmp_path / "running" / "idle" / "result.json",
                        budget=None, checks=[check])  # type: ignore[arg-type]
    doc = document.render([BoardRun("local", "local", "local", False, tmp_path, [ruling],
                                    {"stock": Build("stock", None)})],
                          Submitter(ORIGIN, "1", "0.1.0"))
    LATEST.validate(doc)
    (pwcet,) = [t for t in doc["tests"] if t["path"].endswith(".all.pwcet")]
    assert pwcet["status"] == "PASS" and pwcet["number"]["value"] == pytest.approx(610e-6)
    assert pwcet["misc"]["interval_us"] == [540.0, 700.0]


def test_the_gates_artifact_keeps_the_build_records() -> None:
    """keep-results uploads a run's directory less kernels/ only: builds/ (the records) stays."""
    import yaml

    action = yaml.safe_load((ROOT / ".github" / "actions" / "keep-results" /
                             "action.yml").read_text())
    (upload,) = [s for s in action["runs"]["steps"] if "upload-artifact" in s.get("uses", "")]
    patterns = upload["with"]["path"].split()
    assert patterns == ["${{", "inputs.path", "}}", "!${{", "inputs.path", "}}/kernels"]
    assert record.BUILDS != "kernels"


def test_a_hostile_patch_name_is_hashed_never_linked(rtgate_cli: RunCli, tmp_path: Path) -> None:
    """A series' file names are a pull request's words (format-patch makes them from commit
    subjects): the patchset hash covers the patches, a name that is no plain path segment makes
    no link, and no name is sent as text."""
    gate = pi5_gate(tmp_path)
    hostile = "0001-$(reboot)-<script>alert(1)</script> ../../x.patch"
    for flavor in ("stock", "rt"):
        path = gate / "builds" / flavor / record.METADATA
        meta = json.loads(path.read_text())
        meta["plan"]["patches"][0]["name"] = hostile
        path.write_text(json.dumps(meta))
    context = tmp_path / "context"
    context.mkdir()
    (context / "context.json").write_text(json.dumps({
        "event": "push", "head_sha": "c" * 40, "boards": ["rpi5"], "scenarios": ["all-in"]}))
    doc = kcidb(rtgate_cli, tmp_path, gate, args=("--context", str(context),
                                                  "--repository-url", "https://github.com/o/r"))
    (checkout,) = doc["checkouts"]
    assert "patchset_files" not in checkout
    assert checkout["patchset_hash"] == record.patchset_hash(
        [p.sha256 for p in read_series(SERIES_4)])
    assert "reboot" not in json.dumps(doc) and "<script>" not in json.dumps(doc)


def test_a_virtual_board_stays_marked_whatever_its_results_claim(rtgate_cli: RunCli,
                                                                 tmp_path: Path) -> None:
    """The board file (default branch) says qemu-arm64 is virtual; results that claim
    otherwise cannot pass an emulator's numbers off as hardware."""
    gate = qemu_gate(tmp_path)
    for path in gate.glob("*/*/result.json"):
        place(gate, path.parent.parent.name, path.parent.name, path, board__virtual=False)
    doc = kcidb(rtgate_cli, tmp_path, gate, args=("--scenarios", "net,idle"))
    assert all(t["misc"]["virtual"] is True for t in doc["tests"])
