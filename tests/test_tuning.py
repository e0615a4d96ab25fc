"""Tuning profiles: loading, verification by effect, and applying/undoing on this host."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rtgate.board import local
from rtgate.board.rpi5 import with_words
from rtgate.board.tuning import Applied, load_profile, parse_readback
from rtgate.errors import InputError

DATA = Path(__file__).parent / "data" / "tuning"
SYSCTL = Path("/proc/sys/kernel/timer_migration")


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


needs_root = pytest.mark.skipif(
    not SYSCTL.exists() or not SYSCTL.stat().st_mode or
    subprocess.run(["sh", "-c", f"[ -w {SYSCTL} ]"], check=False).returncode != 0,
    reason="needs a writable /proc/sys/kernel/timer_migration (root)")


@needs_root
def test_crashed_run_is_undone_on_the_next_start(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    before = SYSCTL.read_text()
    flipped = "0" if before.strip() != "0" else "1"
    profile = _profile(tmp_path, "flip", "runtime:\n  - {name: tm, path: "
                       f"{SYSCTL}, value: '{flipped}'}}\n")
    state = tmp_path / "state"
    monkeypatch.setattr(local, "STATE", state)
    try:
        # The "crashed" run: applied by the real shell, never restored.
        applied = Applied(load_profile(str(profile)), "local", 2)
        subprocess.run(["sh", "-c", applied.apply_script(str(state))], check=True)
        assert SYSCTL.read_text().strip() == flipped and state.is_dir()
        local.undo_leftover()
        assert SYSCTL.read_text() == before and not state.exists()
    finally:
        SYSCTL.write_text(before)


def _pipeline(tmp_path: Path, profile: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rtgate", "pipeline", "--board", "local", "--scenarios", "cpu",
         "--duration", "2s", "--out", str(tmp_path / "out"), "--tuning", str(profile),
         "--allow-unbudgeted", *extra],
        capture_output=True, text=True, timeout=120,
        env={**__import__("os").environ, "RTGATE_TUNING_STATE": str(tmp_path / "state")})


def test_local_refuses_host_changes_unless_allowed(tmp_path: Path) -> None:
    proc = _pipeline(tmp_path, Path("bench/tuning/isolated.yml").resolve())
    assert proc.returncode == 2
    assert "--allow-host-changes" in proc.stderr


@pytest.mark.integration
@needs_root
def test_local_run_applies_verifies_records_and_restores(tmp_path: Path) -> None:
    before = SYSCTL.read_text()
    flipped = "0" if before.strip() != "0" else "1"
    profile = _profile(tmp_path, "pinned", f"isolate: 1\nruntime:\n  - {{name: tm, path: "
                       f"{SYSCTL}, value: '{flipped}'}}\npin: {{cyclictest: isolated, "
                       "loads: housekeeping}\n")
    proc = _pipeline(tmp_path, profile, "--allow-host-changes")
    assert SYSCTL.read_text() == before and not (tmp_path / "state").exists()
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads((tmp_path / "out" / "running" / "cpu" / "result.json").read_text())
    tuning = result["tuning"]
    assert tuning["profile"] == "pinned" and tuning["isolated_cpus"] == "1"
    assert {(c["setting"], c["phase"], c["status"]) for c in tuning["checks"]} == {
        ("tm", "boot", "ok"), ("tm", "end", "ok"), ("cyclictest-affinity", "run", "ok"),
        ("load-affinity", "run", "ok")}
    assert "-a1" in result["tool"]["cmdline"].split()


@pytest.mark.integration
@needs_root
def test_local_setting_that_does_not_take_is_incomplete_naming_it(tmp_path: Path) -> None:
    # The kernel refuses an RT runtime above its period (EINVAL): the write does not take.
    rt = Path("/proc/sys/kernel/sched_rt_runtime_us")
    before = rt.read_text()
    profile = _profile(tmp_path, "bad", f"runtime:\n  - {{name: rt-throttling, path: {rt}, "
                       "value: '2000000'}\n")
    proc = _pipeline(tmp_path, profile, "--allow-host-changes")
    assert rt.read_text() == before
    assert proc.returncode == 3, proc.stderr[-2000:]
    result = json.loads((tmp_path / "out" / "running" / "cpu" / "result.json").read_text())
    assert result["status"] == "degraded"
    assert any(r.startswith("tuning: rt-throttling not in effect") for r in result["reasons"])


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
