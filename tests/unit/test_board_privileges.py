"""The privilege trial's reading (rtgate.board.privileges) on what cyclictest 2.40 and getcap
printed on this machine as a non-root user (captured with setpriv --reuid); get_throttled's
(rtgate.board.rpi5.throttle)."""

from __future__ import annotations

from rtgate.board.privileges import has_caps, judge
from rtgate.board.rpi5 import throttle

UNPRIVILEGED = """user\trtgate
uid\t1000
cyclictest\t/usr/bin/cyclictest
getcap\t
chrt\trefused
memlock\t8192
cpu_dma_latency\tcrw------- 1 root root 10, 124 Nov 25 03:00 /dev/cpu_dma_latency
dma_writable\tno
trial\t1
said\tUnable to change scheduling policy!
said\tProbably missing capabilities, either run as root or increase RLIMIT_RTPRIO limits.
"""

CAPS_NO_DMA = """user\trtgate
uid\t1000
cyclictest\t/opt/rtgate/bin/cyclictest
getcap\t/opt/rtgate/bin/cyclictest cap_ipc_lock,cap_sys_nice=ep
chrt\trefused
memlock\t8192
cpu_dma_latency\tcrw------- 1 root root 10, 124 Nov 25 03:00 /dev/cpu_dma_latency
dma_writable\tno
trial\t0
said\tWARN: open /dev/cpu_dma_latency: Permission denied
said\tT: 0 (23337) P:99 I:1000 C:      3 Min:     19 Act:   22 Avg:   23 Max:      29
"""

ROOT = """user\troot
uid\t0
cyclictest\t/usr/bin/cyclictest
getcap\t
chrt\tok
memlock\t8192
cpu_dma_latency\tcrw------- 1 root root 10, 124 Nov 25 03:00 /dev/cpu_dma_latency
dma_writable\tyes
trial\t0
said\tT: 0 (23337) P:99 I:1000 C:      3 Min:     19 Act:   22 Avg:   23 Max:      29
"""


def test_an_unprivileged_user_is_missing_each_privilege_by_name() -> None:
    trial = judge("sudo", UNPRIVILEGED)
    assert trial.missing == [
        "SCHED_FIFO 99 for rtgate (`chrt -f 99 true` refused)",
        "write access to /dev/cpu_dma_latency for rtgate (crw------- 1 root root 10, 124 Nov 25 "
        "03:00 /dev/cpu_dma_latency)"]
    caps = judge("file-capabilities", UNPRIVILEGED).missing
    assert caps[:2] == ["file capabilities cap_ipc_lock,cap_sys_nice=ep on /usr/bin/cyclictest "
                        "(getcap: none)",
                        "SCHED_FIFO 99 for cyclictest (RLIMIT_RTPRIO or CAP_SYS_NICE)"]


def test_capabilities_without_the_latency_device_are_refused() -> None:
    trial = judge("file-capabilities", CAPS_NO_DMA)
    assert trial.missing == ["write access to /dev/cpu_dma_latency (Permission denied)"]
    assert trial.facts["getcap"].endswith("cap_ipc_lock,cap_sys_nice=ep")


def test_root_through_sudo_has_everything_and_records_it() -> None:
    trial = judge("sudo", ROOT)
    assert trial.missing == []
    assert trial.facts["route"] == "sudo" and trial.facts["user"] == "root"


def test_no_cyclictest_is_named() -> None:
    assert judge("sudo", "cyclictest\t\n").missing == ["cyclictest (not on the bench's PATH)"]


def test_getcap_spellings() -> None:
    assert has_caps("/x cap_ipc_lock,cap_sys_nice=ep")
    assert has_caps("/x = cap_ipc_lock,cap_sys_nice+ep")
    assert not has_caps("/x cap_sys_nice=ep")
    assert not has_caps("/x cap_ipc_lock,cap_sys_nice=p")


def test_throttling_during_a_run_is_what_is_set_at_its_end_or_new_since_boot() -> None:
    # What a Pi 5 on a weak supply printed: throttled=0x50005 (under-voltage and throttled,
    # now and since boot).
    assert throttle.parse("throttled=0x50005\n") == 0x50005
    assert throttle.parse("") is None
    assert throttle.during(0x0, 0x0) == []
    assert throttle.during(None, None) == []
    # Under-voltage since boot already before the run: not this run's.
    assert throttle.during(0x10000, 0x10000) == []
    assert throttle.during(0x0, 0x50000) == ["under-voltage since boot", "throttled since boot"]
    assert throttle.during(0x50000, 0x50005) == ["under-voltage now", "throttled now"]
