"""Kernel build plans: resolution, the cache key, series and fragment parsing (no build)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rtgate.errors import InputError
from rtgate.kernel.kconfig import effective_requests, parse_config, read_fragment, unmet
from rtgate.kernel.source import resolve

DATA = Path(__file__).parents[1] / "data" / "kernel"


def test_tar_source_is_its_content_not_its_path(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    for d in ("a", "b"):
        (tmp_path / d / "linux.tar").write_bytes(b"same bytes")
    a, b = resolve(f"tar:{tmp_path}/a/linux.tar"), resolve(f"tar:{tmp_path}/b/linux.tar")
    assert a.location != b.location and a.identity() == b.identity()
    (tmp_path / "b" / "linux.tar").write_bytes(b"other bytes")
    assert resolve(f"tar:{tmp_path}/b/linux.tar").identity() != a.identity()


def test_git_source_spec() -> None:
    src = resolve("git:https://github.com/raspberrypi/linux@rpi-6.12.y")
    assert (src.kind, src.location, src.ref) == ("git", "https://github.com/raspberrypi/linux",
                                                 "rpi-6.12.y")
    ssh = resolve("git:git@github.com:raspberrypi/linux.git@abc123")
    assert (ssh.location, ssh.ref) == ("git@github.com:raspberrypi/linux.git", "abc123")
    with pytest.raises(InputError, match="@REF"):
        resolve("git:https://github.com/raspberrypi/linux")


def test_fragment_requests_and_unmet_on_a_real_config() -> None:
    # qemu-arm64-rt.config: the .config of a real qemu-arm64 rt build on this machine.
    final = parse_config(DATA / "qemu-arm64-rt.config")
    assert final["CONFIG_PREEMPT_RT"] == "y"
    assert final["CONFIG_MODULES"] is None
    fragments = [Path("kernel/configs/qemu-arm64.config"), Path("kernel/configs/tracing.config"),
                 Path("kernel/configs/rt.config")]
    assert unmet(effective_requests(fragments), final) == []
    stock = effective_requests([Path("kernel/configs/stock.config")])
    # Stock asks for PREEMPT_DYNAMIC (one build, preempt= at boot), which RT excludes in 6.12.
    assert [r.option for r in unmet(stock, final)] == ["CONFIG_PREEMPT_RT",
                                                       "CONFIG_PREEMPT_DYNAMIC"]


def test_later_fragment_wins_and_not_set_parses(tmp_path: Path) -> None:
    first, second = tmp_path / "1.config", tmp_path / "2.config"
    first.write_text("# comment\nCONFIG_A=y\nCONFIG_S=\"text\"\n")
    second.write_text("# CONFIG_A is not set\nCONFIG_N=42\n")
    merged = effective_requests([first, second])
    assert merged["CONFIG_A"].value is None and merged["CONFIG_A"].fragment == second
    assert merged["CONFIG_S"].value == '"text"' and merged["CONFIG_N"].value == "42"
    assert unmet(merged, {"CONFIG_S": '"text"', "CONFIG_N": "42"}) == []


def test_fragment_garbage_names_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.config"
    bad.write_text("CONFIG_A=y\nPREEMPT_RT=y\n")
    with pytest.raises(InputError, match="line 2: not a Kconfig line") as info:
        read_fragment(bad)
    assert info.value.path == str(bad)
