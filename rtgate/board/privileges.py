"""Whether a remote board's bench user may measure: cyclictest needs SCHED_FIFO 99 (``-p99``),
mlockall (``-m``) and ``/dev/cpu_dma_latency`` (deep idle states off while it runs).

A stock Raspberry Pi OS gives a non-root user none of them, and cyclictest then exits 1 or
measures with idle states allowed. Two routes give them: the board file's ``sudo`` (the whole
bench runs as root, its loads too), or file capabilities on cyclictest (``cap_ipc_lock,
cap_sys_nice=ep``; only cyclictest has them, the loads run as the user) with
``/dev/cpu_dma_latency`` writable by the user's group (a udev rule, docs/rpi5.md). A trial of
the real cyclictest through the same route, in the same shell, comes before any load starts;
what it finds is recorded in the result. Capabilities live in an extended attribute, which the
tools' sha256 pins do not cover: ``getcap``'s reading is recorded beside them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Route = Literal["sudo", "file-capabilities"]
NEEDED_CAPS = ("cap_ipc_lock", "cap_sys_nice")
_CAPS = re.compile(r"\b((?:cap_[a-z_]+,?)+)[=+]([eip]+)\b")

TRIAL = r"""
ct=$(command -v cyclictest) || { printf 'cyclictest\t\n'; exit 0; }
printf 'user\t%s\n' "$(id -un)"
printf 'uid\t%s\n' "$(id -u)"
printf 'cyclictest\t%s\n' "$ct"
printf 'getcap\t%s\n' "$(getcap "$ct" 2>&1 | head -n 1)"
if chrt -f 99 true 2>/dev/null; then printf 'chrt\tok\n'; else printf 'chrt\trefused\n'; fi
printf 'memlock\t%s\n' "$(ulimit -l)"
printf 'cpu_dma_latency\t%s\n' "$(ls -l /dev/cpu_dma_latency 2>&1 | head -n 1)"
w=no; [ -w /dev/cpu_dma_latency ] && w=yes
printf 'dma_writable\t%s\n' "$w"
said=$(cyclictest -m -p99 -l2 -i1000 -q 2>&1)
printf 'trial\t%s\n' "$?"
printf '%s\n' "$said" | head -n 5 | sed 's/^/said\t/'
"""
"""Run by the board's sh as the bench will run (the route's user, the bench's PATH)."""


@dataclass(frozen=True)
class Trial:
    """What the trial found: the facts (recorded in the result) and what is missing."""

    facts: dict[str, str]
    missing: list[str]


def has_caps(getcap: str) -> bool:
    """``getcap``'s line gives cyclictest cap_ipc_lock and cap_sys_nice, effective and
    permitted (both ``cap_x,cap_y=ep`` and older ``cap_x,cap_y+ep`` spellings)."""
    granted: set[str] = set()
    for names, flags in _CAPS.findall(getcap):
        if "e" in flags and "p" in flags:
            granted |= set(filter(None, names.split(",")))
    return all(c in granted for c in NEEDED_CAPS)


def judge(route: Route, output: str, error: str = "") -> Trial:
    """The trial's reading: ``output`` is what TRIAL printed through ``route``, ``error`` what
    the route itself said (sudo's refusal)."""
    facts: dict[str, str] = {"route": route}
    said: list[str] = []
    for line in output.splitlines():
        key, _, value = line.partition("\t")
        if key == "said":
            said.append(value.strip())
        elif key:
            facts[key] = value.strip()
    if said:
        facts["said"] = " | ".join(s for s in said if s)
    if "cyclictest" not in facts:
        said_last = error.strip().splitlines()[-1:] or ["no output"]
        return Trial(facts, [f"the trial did not run through {route} ({said_last[0]})"])
    if not facts.get("cyclictest"):
        return Trial(facts, ["cyclictest (not on the bench's PATH)"])
    missing: list[str] = []
    text = "\n".join(said)
    if route == "file-capabilities" and not has_caps(facts.get("getcap", "")):
        missing.append(f"file capabilities cap_ipc_lock,cap_sys_nice=ep on {facts['cyclictest']} "
                       f"(getcap: {facts.get('getcap') or 'none'})")
    if route == "sudo" and facts.get("chrt") != "ok":
        missing.append(f"SCHED_FIFO 99 for {facts.get('user', '?')} (`chrt -f 99 true` refused)")
    if facts.get("trial") != "0":
        if "scheduling policy" in text and not any(m.startswith("SCHED_FIFO") for m in missing):
            missing.append("SCHED_FIFO 99 for cyclictest (RLIMIT_RTPRIO or CAP_SYS_NICE)")
        if "mlockall" in text:
            missing.append("mlockall for cyclictest (RLIMIT_MEMLOCK or CAP_IPC_LOCK)")
        if not missing:
            missing.append(f"a working cyclictest (trial exit {facts.get('trial')}: "
                           f"{facts.get('said') or 'no output'})")
    if m := re.search(r"WARN: open /dev/cpu_dma_latency: ?(.*)", text):
        missing.append(f"write access to /dev/cpu_dma_latency ({m.group(1) or 'refused'})")
    elif facts.get("dma_writable") != "yes":
        missing.append(f"write access to /dev/cpu_dma_latency for {facts.get('user', '?')} "
                       f"({facts.get('cpu_dma_latency') or 'absent'})")
    return Trial(facts, list(dict.fromkeys(missing)))
