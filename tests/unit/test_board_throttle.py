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
    # No reading at all (vcgencmd missing, or not allowed to open /dev/vcio): a Pi always
    # has the firmware's record, so the run cannot be called unthrottled.
    (None, None, [], True),
    (None, 0x4, ["throttled now"], True),
])
def test_a_run_is_flagged_or_said_blind(before: int | None, after: int | None,
                                        happened: list[str], blind: bool) -> None:
    assert throttle.during(before, after) == happened
    assert (throttle.unseen(before, after) is not None) == blind


def test_an_account_outside_group_video_is_told_what_to_do() -> None:
    """raspberrypi/utils vcgencmd/vcgencmd.c (mbox_open): without access to /dev/vcio it prints
    these two lines and exits 255; Raspberry Pi OS gives the VideoCore's devices to group video,
    mode 0660 (raspberrypi-sys-mods usr/lib/udev/rules.d/10-vc.rules)."""
    said = ("Can't open device file: /dev/vcio\n"
            "Try creating a device file with: sudo mknod /dev/vcio c 100 0\n")
    assert throttle.parse(said) is None
    assert "run it as root" in throttle.why_not(said) and "group video" in throttle.why_not(said)
    assert throttle.why_not("") == "vcgencmd gave no answer (not installed?)"
