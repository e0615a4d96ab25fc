"""The calibration record: what `rtgate calibrate` writes and the gate's plan and the site read."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from rtgate import calibration
from rtgate.errors import InputError

RATE = {"events": 0, "trials": 40, "value": 0.0, "low": 0.0, "high": 0.088,
        "method": "Clopper-Pearson 95 %"}
RECORD = {
    "schema": "rtgate/calibration/v1", "kind": "qemu-arm64", "measured_on": "qemu-arm64",
    "virtual": True, "measured_at": "2026-11-25T03:00:00Z", "rtgate_commit": "0" * 40,
    "kernel": "6.12.57-rt", "rule": "primary-metric sequential v1", "replays": 2000,
    "plan": {"round_s": 60, "rounds": 6, "max_time_s": 5400},
    "keys": [{"flavor": "rt", "scenario": "idle", "primary_metric": "log block-max p90",
              "rounds_banked": 40, "cv": 0.12, "false_alarm": RATE, "same_within_cap": RATE,
              "power": [{"effect": "+20%", "detected": RATE}],
              "rounds_needed": None, "minutes_needed": None}],
}


def test_a_kind_without_a_record_has_none(tmp_path: Path) -> None:
    assert calibration.for_kind("rpi5", tmp_path) is None


def test_a_record_reads_back(tmp_path: Path) -> None:
    (tmp_path / "qemu-arm64.json").write_text(json.dumps(RECORD))
    record = calibration.for_kind("qemu-arm64", tmp_path)
    assert record is not None and record.plan.rounds == 6 and record.virtual
    assert record.keys[0].false_alarm.trials == 40


@pytest.mark.parametrize(("change", "message"), [
    ({"schema": "rtgate/ab/v1"}, "not an rtgate calibration record"),
    ({"plan": {"round_s": 0, "rounds": 6, "max_time_s": 5400}},
     "invalid calibration record at plan.round_s"),
    ({"extra": 1}, "invalid calibration record at extra"),
])
def test_a_bad_record_is_one_line_naming_the_file(tmp_path: Path, change: dict[str, object],
                                                   message: str) -> None:
    path = tmp_path / "qemu-arm64.json"
    path.write_text(json.dumps({**RECORD, **change}))
    with pytest.raises(InputError, match=message) as caught:
        calibration.load(path)
    assert "\n" not in str(caught.value) and caught.value.path == str(path)


# ---- The bank's resolution (issue 40): v2 states it, a v1 record is a bank in whole µs --------

ROOT = Path(__file__).resolve().parents[2]


def test_a_v1_record_is_a_bank_in_whole_microseconds(tmp_path: Path) -> None:
    path = tmp_path / "qemu-arm64.json"
    path.write_text(json.dumps(RECORD))
    (key,) = calibration.load(path).keys
    assert key.resolution_us == 1.0


def test_a_v2_record_states_its_banks_resolution(tmp_path: Path) -> None:
    path = tmp_path / "rpi5.json"
    keys = [{**RECORD["keys"][0], "resolution_us": 0.001}]  # type: ignore[index]
    path.write_text(json.dumps({**RECORD, "schema": calibration.SCHEMA_ID, "keys": keys}))
    (key,) = calibration.load(path).keys
    assert key.resolution_us == 0.001
    path.write_text(json.dumps({**RECORD, "schema": calibration.SCHEMA_ID,
                                "keys": [{**keys[0], "resolution_us": 0.5}]}))
    with pytest.raises(InputError, match="invalid calibration record at keys.0.resolution_us"):
        calibration.load(path)
    # Only a v1 record may leave it out: a v2 one would be read as a µs bank whatever it was.
    path.write_text(json.dumps({**RECORD, "schema": calibration.SCHEMA_ID}))
    with pytest.raises(InputError, match="states every key's resolution_us"):
        calibration.load(path)


def test_the_committed_records_and_schema_are_current() -> None:
    schema = json.loads(calibration.SCHEMA_FILE.read_text())
    assert schema == calibration.json_schema(), "run `make schema` and commit the result"
    for path in sorted((ROOT / "bench" / "calibration").glob("*.json")):
        jsonschema.validate(json.loads(path.read_text()), schema)
        record = calibration.load(path)
        # Banked before -N was the default: every key a bank in whole µs until re-banked.
        assert record.schema_ == "rtgate/calibration/v1", path
        assert {k.resolution_us for k in record.keys} == {1.0}, path


def test_rounds_coarser_than_the_bank_are_refused(tmp_path: Path) -> None:
    """A bank in ns calibrates ns rounds; µs rounds cannot be made ns (issue 40). A bank in µs
    takes ns rounds, floored to it (rtgate.stats.ab.floored): nothing to refuse."""
    path = tmp_path / "qemu-arm64.json"
    path.write_text(json.dumps(RECORD))
    (us,) = calibration.load(path).keys
    calibration.check_resolution(us, 1.0, "qemu-arm64/rt/idle", "qemu-arm64")
    calibration.check_resolution(us, 0.001, "qemu-arm64/rt/idle", "qemu-arm64")
    ns = us.model_copy(update={"resolution_us": 0.001})
    calibration.check_resolution(ns, 0.001, "qemu-arm64/rt/idle", "qemu-arm64")
    with pytest.raises(InputError) as caught:
        calibration.check_resolution(ns, 1.0, "qemu-arm64/rt/idle, side A", "qemu-arm64")
    text = str(caught.value)
    assert caught.value.code == 2 and "\n" not in text
    assert caught.value.path == "bench/calibration/qemu-arm64.json"
    assert text.startswith("qemu-arm64/rt/idle, side A: "
                           "measures in whole µs, but the calibration record's bank "
                           "for rt/idle was measured in ns (cyclictest -N, rtla -n)")
    assert "standard-error floor and stall threshold do not hold" in text
    assert "no round can be made finer than it was measured" in text
