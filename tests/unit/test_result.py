"""The committed JSON Schema is the contract other tools read: it must match the models."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from rtgate.errors import InputError
from rtgate.result import (
    SCHEMA_FILE,
    Board,
    Kernel,
    Percentile,
    Result,
    Thread,
    Tool,
    Totals,
    json_schema,
    load_result,
)


def _result() -> Result:
    return Result(
        run_id="r1", board=Board(name="local"), kernel=Kernel(release="6.12.0"),
        scenario="idle", tool=Tool(version="2.40"),
        threads=[Thread(thread=0, samples=10, min_us=1, avg_us=2.5, max_us=9)],
        totals=Totals(samples=10, min_us=1, avg_us=2.5, max_us=9,
                      p99_99=Percentile(value_us=400, relation=">=")),
        status="complete")


def test_committed_schema_matches_models() -> None:
    committed = json.loads(SCHEMA_FILE.read_text())
    assert committed == json_schema(), "run `make schema` and commit the result"


def test_written_result_validates_against_committed_schema(tmp_path) -> None:
    path = _result().write(tmp_path / "result.json")
    doc = json.loads(path.read_text())
    jsonschema.validate(doc, json.loads(SCHEMA_FILE.read_text()))
    assert doc["schema"] == "rtgate/result/v3"
    assert load_result(path) == _result()


V1 = Path(__file__).parents[1] / "data" / "realworld" / "v1"  # written by the v1 parser (README)


@pytest.mark.parametrize("name, truncated", [
    ("summary.result.json", True),  # 'T:' lines: integer averages
    ("histfile-overflow.result.json", True),  # the histogram footer's integer averages
    ("histfile-exact-json.result.json", False),  # the JSON's two-decimal averages won
])
def test_v1_results_load_upgraded_and_say_which_averages_are_cut(
        tmp_path, name: str, truncated: bool) -> None:
    raw = json.loads((V1 / name).read_text())
    assert raw["schema"] == "rtgate/result/v1"
    r = load_result(V1 / name)
    assert r.schema_ == "rtgate/result/v3"
    assert [t.avg_truncated for t in r.threads] == [truncated] * len(raw["threads"])
    assert r.totals.avg_truncated is truncated
    # Nothing else changes: every v1 value is still there.
    assert [t.avg_us for t in r.threads] == [t["avg_us"] for t in raw["threads"]]
    assert r.totals.avg_us == raw["totals"]["avg_us"] and r.notes == []
    written = json.loads(r.write(tmp_path / "r.json").read_text())
    jsonschema.validate(written, json.loads(SCHEMA_FILE.read_text()))
    assert written["schema"] == "rtgate/result/v3"


def test_bounded_percentile_prints_as_at_least() -> None:
    assert str(Percentile(value_us=400, relation=">=")) == "≥400"
    assert str(Percentile(value_us=23)) == "23"


@pytest.mark.parametrize("text, needle", [
    ("", "not a JSON document"),
    ("[1, 2]", "not an rtgate result"),
    ('{"schema": "rtgate/result/v0"}', "not an rtgate result"),
    ('{"schema": "rtgate/result/v1", "run_id": 3}', "invalid result"),
    ('{"schema": "rtgate/result/v3", "run_id": 3}', "invalid result"),
    ('{"schema": ["rtgate/result/v3"]}', "not an rtgate result"),
    ('{"schema": "rtgate/result/v1", "threads": 5, "sources": []}', "invalid result"),
])
def test_bad_result_files_name_the_file(tmp_path, text: str, needle: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(text)
    with pytest.raises(InputError) as err:
        load_result(bad)
    assert needle in str(err.value)
    assert err.value.oneline().startswith(str(bad))


def test_v2_results_load_as_v3_with_exact_counts_and_known_limits() -> None:
    # v3 only adds what says which numbers are bounds; its defaults are what v2 meant.
    path = Path(__file__).resolve().parents[1] / "data" / "sweep" / "rt" / "idle" / "result.json"
    assert json.loads(path.read_text())["schema"] == "rtgate/result/v2"
    r = load_result(path)
    assert r.schema_ == "rtgate/result/v3" and r.totals.samples_relation == "="
    assert all(t.samples_relation == "=" for t in r.threads)
    assert all(t.histogram is None or t.histogram.limit_known for t in r.threads)
