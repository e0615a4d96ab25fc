"""Tuning profiles applied, verified and restored on the `local` board."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from test_tuning import _profile

from rtgate.board import local
from rtgate.board.tuning import Applied, load_profile

SYSCTL = Path("/proc/sys/kernel/timer_migration")


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
