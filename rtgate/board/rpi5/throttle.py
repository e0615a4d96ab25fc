"""The Pi's firmware's own account of throttling: ``vcgencmd get_throttled``.

A Pi 5 that saw under-voltage or throttled while it measured measured its power supply or its
cooling, not the kernel: read before and after every run, and before a board's first one.
"""

from __future__ import annotations

import re

BITS = {0: "under-voltage now", 1: "ARM frequency capped now", 2: "throttled now",
        3: "soft temperature limit now", 16: "under-voltage since boot",
        17: "ARM frequency capped since boot", 18: "throttled since boot",
        19: "soft temperature limit since boot"}
"""The bits of get_throttled (Raspberry Pi documentation, "vcgencmd")."""
COMMAND = "vcgencmd get_throttled"
_VALUE = re.compile(r"throttled=(0x[0-9a-fA-F]+)")


def parse(text: str) -> int | None:
    """get_throttled's value, None when the board did not give one (no vcgencmd)."""
    m = _VALUE.search(text)
    return int(m.group(1), 16) if m else None


def named(bits: int) -> list[str]:
    return [what for bit, what in BITS.items() if bits >> bit & 1]


def during(before: int | None, after: int | None) -> list[str]:
    """What happened while a run measured: a condition present at its end, or one that first
    appeared since boot during it."""
    if after is None:
        return []
    now = after & 0xF
    new_since_boot = after & ~(before or 0) & 0xF0000
    return named(now | new_since_boot)


def unseen(before: int | None, after: int | None) -> str | None:
    """Why the two readings cannot tell whether the run was throttled, None when they can (or
    when the board has no vcgencmd at all: neither reading)."""
    if before is not None and after is None:
        return f"get_throttled gave no value after the run (before: {hex(before)})"
    if before is not None and (sticky := before & 0xF0000):
        # A "since boot" bit cannot be set twice: a recurrence during the run that is over by
        # its end leaves no trace. A reboot clears them.
        return (f"the Pi had already reported {', '.join(named(sticky))} before the run "
                f"(get_throttled {hex(before)}), so a recurrence during it would not show")
    return None
