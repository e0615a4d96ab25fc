"""The calibration record: what `rtgate calibrate` writes and the gate's plan and the site read."""

from __future__ import annotations

import json
from pathlib import Path

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
