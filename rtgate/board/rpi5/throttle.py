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
"""Run as root: vcgencmd opens /dev/vcio (raspberrypi/utils vcgencmd/vcgencmd.c, mbox_open),
and Raspberry Pi OS gives the VideoCore's devices to root and group ``video`` only, mode 0660
(raspberrypi-sys-mods usr/lib/udev/rules.d/10-vc.rules). A lab account outside ``video`` reads
nothing."""
NO_DEVICE = "Can't open device file"
"""What vcgencmd prints (exit 255) when it cannot open /dev/vcio (vcgencmd.c, mbox_open)."""
_VALUE = re.compile(r"throttled=(0x[0-9a-fA-F]+)")


def parse(text: str) -> int | None:
    """get_throttled's value, None when the board did not give one."""
    m = _VALUE.search(text)
    return int(m.group(1), 16) if m else None


def why_not(text: str) -> str:
    """Why an answer gave no value, in words a lab admin can act on."""
    if NO_DEVICE in text:
        return ("vcgencmd cannot open /dev/vcio (root and group video only): run it as root "
                "(the board file's sudo) or add the account to group video")
    said = " ".join(text.split())[:120]
    return f"vcgencmd answered {said!r}" if said else "vcgencmd gave no answer (not installed?)"


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
    """Why the two readings cannot tell whether the run was throttled, None when they can. A Pi
    always has the firmware's record: no reading at all is not "not throttled"."""
    if before is None and after is None:
        return "get_throttled gave no value before or after the run (vcgencmd missing, or " \
               "not allowed to open /dev/vcio)"
    if before is None:
        return f"get_throttled gave no value before the run (after: {hex(after or 0)})"
    if after is None:
        return f"get_throttled gave no value after the run (before: {hex(before)})"
    if before is not None and (sticky := before & 0xF0000):
        # A "since boot" bit cannot be set twice: a recurrence during the run that is over by
        # its end leaves no trace. A reboot clears them.
        return (f"the Pi had already reported {', '.join(named(sticky))} before the run "
                f"(get_throttled {hex(before)}), so a recurrence during it would not show")
    return None
