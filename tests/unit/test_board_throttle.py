"""What two get_throttled readings around a run can and cannot tell (rtgate.board.rpi5.throttle)."""

from __future__ import annotations

import pytest

from rtgate.board.rpi5 import throttle


@pytest.mark.parametrize("before, after, happened, blind", [
    (0x0, 0x0, [], False),
    (0x0, 0x50000, ["under-voltage since boot", "throttled since boot"], False),
    (0x0, 0x50005, ["under-voltage now", "throttled now", "under-voltage since boot",
                    "throttled since boot"], False),
    # Sticky before: the same bits after say nothing about the run.
    (0x10000, 0x10000, [], True),
    (0x10000, 0x50000, ["throttled since boot"], True),
    # No reading after a reading before: the run is blind.
    (0x0, None, [], True),
    (0x50000, None, [], True),
    # No vcgencmd at all (not a Pi's firmware): nothing to tell, nothing claimed.
    (None, None, [], False),
    (None, 0x4, ["throttled now"], False),
])
def test_a_run_is_flagged_or_said_blind(before: int | None, after: int | None,
                                        happened: list[str], blind: bool) -> None:
    assert throttle.during(before, after) == happened
    assert (throttle.unseen(before, after) is not None) == blind
