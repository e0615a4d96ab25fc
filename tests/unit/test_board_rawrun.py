"""What a board's run hands to the collect step: a typed document with a committed JSON
Schema."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import jsonschema

from rtgate.board.loadreport import LoadRecord
from rtgate.board.peer import peer_records
from rtgate.board.rawrun import SCHEMA_FILE, Claims, PeerLoad, RawRun, json_schema
from rtgate.cyclictest.version import parse_help
from rtgate.harness.environment import Environment, Throttled
from rtgate.harness.plan import Params, make_plan
from rtgate.harness.runner import RunLog
from rtgate.harness.scenario import load_scenario
from rtgate.result import Load

HELP = Path(__file__).resolve().parents[1] / "data" / "help" / "cyclictest-2.40.txt"


def _raw(tmp_path: Path) -> RawRun:
    scenario, source = load_scenario("net")
    params = Params(cpus=2, port=5201, tmpdir="/tmp/s", scale=1.0, timeout_s=60)
    plan = make_plan(scenario, source, parse_help(HELP.read_text()), duration_s=20,
                     params=params, outdir="/tmp/raw")
    start = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    return RawRun(out=tmp_path, board="pi", virtual=False, plan=plan, flavor="rt",
                  log=RunLog(start=start, end=start.replace(second=25), cyclictest_rc=0),
                  environment=Environment(kernel_release="6.6.0-rt", preempt_rt=True,
                                          tool_sha256={"cyclictest": "0" * 64},
                                          throttled=Throttled(before="0x0", after="0x0")),
                  cyclictest_version="2.40", strict=True,
                  loads=[LoadRecord("stress", ["stress-ng"], None, None, "board")],
                  peer_loads=[PeerLoad(name="iperf3-client", command=["iperf3", "-c", "pi"],
                                       early_exit=1, early_after_s=30.0,
                                       died_at=start.replace(second=35))],
                  measured_until="result",
                  claims=Claims(status="degraded", reasons=["a load died"],
                                loads=[Load(name="iperf3-server", command=["iperf3", "-s"])]),
                  degraded_by=["the Pi throttled"])


def test_committed_schema_matches_the_model() -> None:
    assert json.loads(SCHEMA_FILE.read_text()) == json_schema(), \
        "run `make schema` and commit the result"


def test_a_raw_run_validates_against_its_schema_and_reads_back_as_written(
        tmp_path: Path) -> None:
    raw = _raw(tmp_path)
    doc = json.loads(raw.model_dump_json(by_alias=True))
    jsonschema.validate(doc, json.loads(SCHEMA_FILE.read_text()))
    assert doc["schema"] == "rtgate/raw-run/v2"
    assert RawRun.model_validate(doc) == raw


def test_a_peer_load_that_died_after_the_measurement_is_no_early_exit(tmp_path: Path) -> None:
    raw = _raw(tmp_path)
    [after] = peer_records(raw.peer_loads, raw.log.end)
    assert after.early_exit is None and after.where == "peer"
    start = raw.log.start
    [during] = peer_records(raw.peer_loads, start.replace(second=59) if start else None)
    assert during.early_exit == 1 and during.early_after_s == 30.0
