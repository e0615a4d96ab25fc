"""Tuning profiles: loading and verification by effect. Applying and undoing them on this host is
tests/integration/test_tuning_local.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from rtgate.board.rpi5.slot import with_words
from rtgate.board.tuning import Applied, load_profile, parse_readback
from rtgate.errors import InputError

DATA = Path(__file__).parents[1] / "data" / "tuning"


def _profile(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / f"{name}.yml"
    path.write_text(f"name: {name}\ndescription: test\n{text}", encoding="utf-8")
    return path


def test_shipped_profiles_load() -> None:
    assert load_profile("none").boot == []
    isolated = Applied(load_profile("isolated"), "qemu-arm64", 2)
    assert isolated.boot_args() == ["isolcpus=1", "nohz_full=1", "rcu_nocbs=1", "irqaffinity=0"]
    assert Applied(load_profile("isolated"), "rpi5", 4).firmware_lines() == [
        "dtoverlay=disable-wifi", "dtoverlay=disable-bt"]
    assert Applied(load_profile("isolated"), "qemu-arm64", 2).firmware_lines() == []


@pytest.mark.parametrize(("text", "line", "message"), [
    ("isolate: 1\nboot:\n  - {param: isolcpus, value: '{isolatd}'}\n", 5, "unknown placeholder"),
    ("runtime:\n  - {name: x, path: /etc/passwd, value: '1'}\n", 4, "only files under"),
    ("boot:\n  - {param: isolcpus, vaule: '1'}\n", 4, "unknown key"),
    ("pin: {cyclictest: isolated}\n", 1, "isolates none"),
])
def test_bad_profile_is_one_line_with_file_and_line(tmp_path: Path, text: str, line: int,
                                                    message: str) -> None:
    path = _profile(tmp_path, "bad", text)
    with pytest.raises(InputError) as exc:
        load_profile(str(path))
    assert exc.value.path == f"{path}:{line}"
    assert message in str(exc.value)


def test_isolating_every_cpu_is_refused() -> None:
    with pytest.raises(InputError, match="at least one must keep house"):
        Applied(load_profile("isolated"), "local", 1)


def test_words_on_the_command_line_without_effect_fail_by_name() -> None:
    """A real guest read-back: the 6.12 tinyconfig kernel has no CPU_ISOLATION, NO_HZ_FULL or
    RCU_NOCB_CPU; the words are on /proc/cmdline and still nothing is isolated."""
    rb = parse_readback((DATA / "qemu-stock-no-isolation.txt").read_text())
    assert "isolcpus=1" in rb["cmdline"][0].split()
    checks = {c.setting: c for c in Applied(load_profile("isolated"), "qemu-arm64",
                                            2).verify(rb, "boot")}
    assert checks["isolcpus"].status == "failed" and checks["isolcpus"].actual == "none"
    assert checks["nohz_full"].status == "failed"
    assert checks["rcu_nocbs"].status == "failed"
    assert checks["irqaffinity"].status == "ok"
    assert checks["rt-throttling"].status == "ok"
    assert checks["governor"].status == "optional"  # no cpufreq under QEMU: allowed there
    # Without NO_HZ_COMMON there is no timer_migration sysctl; the board's kernels now have it,
    # so its absence is no longer excused on qemu-arm64.
    assert checks["timer-migration"].status == "failed"
    # The same read-back on a board where the governor is not optional fails it.
    other = {c.setting: c for c in Applied(load_profile("isolated"), "rpi5", 2).verify(rb, "boot")}
    assert other["governor"].status == "failed"


def test_the_board_kernel_with_isolation_takes_every_setting() -> None:
    """Real guest read-backs of `rtgate pipeline --board qemu-arm64 --flavors rt --tuning
    isolated` on the kernel built with CPU_ISOLATION, NO_HZ_FULL and RCU_NOCB_CPU: after boot
    every setting is in effect but the two the virtual board cannot have (no cpufreq, no
    cpuidle), and cyclictest's measuring thread ran on the isolated CPU."""
    applied = Applied(load_profile("isolated"), "qemu-arm64", 2)
    rb = parse_readback((DATA / "qemu-rt-isolated-boot.txt").read_text())
    checks = {c.setting: c for c in applied.verify(rb, "boot")}
    assert {s for s, c in checks.items() if c.status != "ok"} == {"governor", "cpu-dma-latency"}
    assert all(checks[s].status == "optional" for s in ("governor", "cpu-dma-latency"))
    assert checks["isolcpus"].actual == "1" and checks["nohz_full"].actual == "1"
    assert checks["rcu_nocbs"].actual == "1"
    assert checks["irq-affinity"].actual == "all movable; refused (per-CPU): 12"
    run = parse_readback((DATA / "qemu-rt-isolated-run.txt").read_text())
    [pinned] = applied.verify_tasks(run, [])
    assert pinned.status == "ok" and pinned.actual == "1 threads, all there"
    # The same read-back with the tick back on the isolated CPU fails nohz_full by name.
    rb["nohz_full"] = [""]
    failed = {c.setting: c for c in applied.verify(rb, "end")}["nohz_full"]
    assert (failed.status, failed.actual) == ("failed", "none")


def test_tasks_outside_their_cpus_fail() -> None:
    applied = Applied(load_profile("isolated"), "local", 2)
    rb = parse_readback("task\t10 11 5 0-1 cyclictest\ntask\t10 10 5 0 cyclictest\n"
                        "task\t20 20 5 0 stress-ng\ntask\t21 21 20 1 stress-ng-cpu\n"
                        "task\t30 30 1 0-1 stress-ng\n")
    checks = {c.setting: c for c in applied.verify_tasks(rb, ["stress-ng"], root=5)}
    assert checks["cyclictest-affinity"].status == "failed"
    assert "thread 11 on 0-1" in checks["cyclictest-affinity"].actual
    assert checks["load-affinity"].status == "failed"
    assert "stress-ng-cpu 21 on 1" in checks["load-affinity"].actual
    none = applied.verify_tasks(parse_readback(""), ["stress-ng"])
    assert [c.status for c in none] == ["failed", "failed"]  # nothing seen is not "pinned"


def test_firmware_lines_are_verified_by_what_they_remove() -> None:
    applied = Applied(load_profile("isolated"), "rpi5", 4)
    script = applied.readback_script()
    assert "/sys/class/net/wlan0" in script and "/sys/class/bluetooth/hci0" in script
    rb = parse_readback("exists./sys/class/net/wlan0\tpresent\n"
                        "exists./sys/class/bluetooth/hci0\tabsent\n")
    checks = {c.setting: c for c in applied.verify(rb, "boot")}
    assert checks["dtoverlay=disable-wifi"].status == "failed"
    assert checks["dtoverlay=disable-wifi"].actual == "present"
    assert checks["dtoverlay=disable-bt"].status == "ok"
    # Boards the lines are not for neither write nor check them.
    assert "exists." not in Applied(load_profile("isolated"), "qemu-arm64", 2).readback_script()


def test_a_firmware_line_must_say_how_it_is_verified(tmp_path: Path) -> None:
    path = _profile(tmp_path, "fw", "firmware:\n  - {line: dtoverlay=disable-wifi}\n")
    with pytest.raises(InputError, match="absent"):
        load_profile(str(path))


@pytest.mark.parametrize(("cmdline", "expected"), [
    (b"console=serial0 root=PARTUUID=1-02 rootwait\n",
     b"console=serial0 root=PARTUUID=1-02 rootwait isolcpus=3 nohz_full=3\n"),
    # A word the known-good line already has is replaced, not doubled; init's words stay last.
    (b"isolcpus=2 root=/dev/sda2 -- single\n",
     b"root=/dev/sda2 isolcpus=3 nohz_full=3 -- single\n"),
    # The firmware reads the first line only: the rest is kept as it was.
    (b"root=/dev/sda2\nignored words\n",
     b"root=/dev/sda2 isolcpus=3 nohz_full=3\nignored words\n"),
])
def test_rpi5_slot_cmdline_gains_the_profiles_words(cmdline: bytes, expected: bytes) -> None:
    assert with_words(cmdline, ["isolcpus=3", "nohz_full=3"]) == expected


def test_the_run_sampler_reads_the_tasks_before_the_settings() -> None:
    # A 2 s run on a loaded host ended while the read-back walked /proc ahead of the tasks:
    # the measuring threads were gone ("cyclictest-affinity ... not present"). The tasks come
    # first, right after the sampler sees cyclictest measure; the settings hold until undone.
    from rtgate.board.tuning import TASKS

    script = Applied(load_profile("isolated"), "rpi5", 4).sampler_script("/run/bench.pid", 2)
    lines = script.splitlines()
    seen = next(i for i, line in enumerate(lines) if "pgrep -x cyclictest" in line)
    after = [line for line in lines[seen + 1:] if not line.startswith(("  ", "sleep", "printf"))]
    assert after[0] == TASKS, after[:3]
    assert script.count(TASKS) == 1 and "rb cmdline /proc/cmdline" in after
    assert TASKS not in Applied(load_profile("isolated"), "rpi5", 4).readback_script()
