"""A run's id is made in one place (rtgate.harness.assemble.run_id) and keeps the formats
history and A/B rounds are keyed by: board-scenario-UTC second, or a LAVA job's number."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from rtgate.harness.assemble import run_id


def test_the_start_second_in_utc() -> None:
    start = datetime(2026, 11, 28, 5, 7, 34, 999_000, tzinfo=UTC)
    assert run_id("rpi5-b", "all-in", start) == "rpi5-b-all-in-20261128T050734Z"


def test_a_lava_run_is_named_by_its_job() -> None:
    start = datetime(2026, 11, 28, 5, 7, 34, tzinfo=UTC)
    assert run_id("lava-rpi5", "cpu", start, job=4711) == "lava-rpi5-cpu-job4711"


def test_no_start_seen_is_now() -> None:
    assert re.fullmatch(r"local-idle-\d{8}T\d{6}Z", run_id("local", "idle"))
