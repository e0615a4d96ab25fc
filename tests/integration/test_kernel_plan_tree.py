"""Kernel build plans that ask the host for its Debian kernel source (dpkg-query): keys,
series, the CLI's errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from clirun import RunCli

from rtgate.errors import InputError
from rtgate.kernel.patches import read_series
from rtgate.kernel.plan import Toolchain, cache_key, make_plan
from rtgate.kernel.runtime import HostRuntime


def write_series(tmp_path: Path, patches: dict[str, str]) -> Path:
    for name, text in patches.items():
        (tmp_path / name).write_text(text)
    series = tmp_path / "series"
    series.write_text("# under test\n" + "".join(f"{name}\n" for name in patches))
    return series


def test_cli_plan_is_json_with_every_input(rtgate_cli: RunCli) -> None:
    proc = rtgate_cli("kernel", "plan", "--board", "qemu-arm64", "--flavor", "rt")
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout)
    assert plan["schema"] == "rtgate/kernel-plan/v1"
    assert plan["source"]["kind"] == "debian"
    assert plan["source"]["location"] == "linux-source-6.12"
    assert plan["source"]["ref"].startswith("6.12.")
    assert plan["base_config"] == "tinyconfig"
    assert [f["name"] for f in plan["fragments"]] == ["qemu-arm64.config", "tracing.config",
                                                      "rt.config"]
    assert all(len(f["sha256"]) == 64 for f in plan["fragments"])
    assert plan["toolchain"]["gcc"].startswith("aarch64-linux-gnu-gcc")
    assert len(plan["cache_key"]) == 64


def test_same_inputs_same_key_and_flavor_changes_it() -> None:
    runtime = HostRuntime()
    a = make_plan("qemu-arm64", "rt", runtime)
    b = make_plan("qemu-arm64", "rt", runtime)
    assert a.cache_key == b.cache_key
    assert make_plan("qemu-arm64", "stock", runtime).cache_key != a.cache_key


def test_patch_change_changes_key(tmp_path: Path) -> None:
    runtime = HostRuntime()
    series = write_series(tmp_path, {"0001-a.patch": "one\n"})
    before = make_plan("qemu-arm64", "rt", runtime, series=series)
    assert [p.name for p in before.patches] == ["0001-a.patch"]
    (tmp_path / "0001-a.patch").write_text("two\n")
    after = make_plan("qemu-arm64", "rt", runtime, series=series)
    assert after.cache_key != before.cache_key
    assert after.patches[0].sha256 != before.patches[0].sha256


def test_fragment_change_changes_key(tmp_path: Path) -> None:
    runtime = HostRuntime()
    extra = tmp_path / "extra.config"
    extra.write_text("CONFIG_HZ_1000=y\n")
    one = make_plan("qemu-arm64", "rt", runtime, extra_fragments=[extra])
    extra.write_text("CONFIG_HZ_250=y\n")
    two = make_plan("qemu-arm64", "rt", runtime, extra_fragments=[extra])
    assert one.fragments[-1].name == "extra.config"
    assert one.cache_key != two.cache_key != make_plan("qemu-arm64", "rt", runtime).cache_key


def test_source_ref_and_toolchain_change_key(tmp_path: Path) -> None:
    plan = make_plan("qemu-arm64", "rt", HostRuntime())
    args = (plan.target, plan.flavor)
    key = cache_key(*args, plan.source, plan.fragments, plan.patches, plan.toolchain)
    assert key == plan.cache_key
    newer = plan.source.model_copy(update={"ref": "6.12.999-1"})
    assert cache_key(*args, newer, plan.fragments, plan.patches, plan.toolchain) != key
    gcc13 = Toolchain(cross_compile="aarch64-linux-gnu-", gcc="aarch64-linux-gnu-gcc 13.2.0",
                      binutils=plan.toolchain.binutils)
    assert cache_key(*args, plan.source, plan.fragments, plan.patches, gcc13) != key


def test_rpi5_plan_resolves_offline(rtgate_cli: RunCli) -> None:
    proc = rtgate_cli("kernel", "plan", "--board", "rpi5", "--flavor", "rt")
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout)
    assert plan["source"] == {"kind": "git", "location": "https://github.com/raspberrypi/linux",
                              "ref": "rpi-6.12.y"}
    assert plan["base_config"] == "bcm2712_defconfig"
    assert plan["board"]["image_name"] == "kernel_2712.img"
    assert plan["board"]["dtbs"] and plan["board"]["modules"]
    assert [f["name"] for f in plan["fragments"]] == ["rt.config"]


def test_series_comments_order_and_missing_patch(rtgate_cli: RunCli, tmp_path: Path) -> None:
    (tmp_path / "b.patch").write_text("b")
    (tmp_path / "a.patch").write_text("a")
    series = tmp_path / "series"
    series.write_text("# header\nb.patch   # first\n\na.patch\n")
    assert [p.name for p in read_series(series)] == ["b.patch", "a.patch"]
    series.write_text("b.patch\nmissing.patch\n")
    proc = rtgate_cli("kernel", "plan", "--board", "qemu-arm64", "--flavor", "rt",
                      "--patches", str(series))
    assert proc.returncode == 2
    assert f"{series}: line 2: patch missing.patch not found" in proc.stderr


@pytest.mark.parametrize("args, message", [
    (["--board", "pi9", "--flavor", "rt"], "unknown kernel board 'pi9'"),
    (["--board", "qemu-arm64", "--flavor", "turbo"], "unknown flavor 'turbo'"),
    (["--board", "qemu-arm64", "--flavor", "rt", "--source", "svn:x"], "unknown kind 'svn'"),
    (["--board", "qemu-arm64", "--flavor", "rt", "--source", "debian:linux-source-0.01"],
     "linux-source-0.01 is not installed"),
])
def test_bad_input_is_one_line_and_exit_2(rtgate_cli: RunCli,
                                          args: list[str], message: str) -> None:
    proc = rtgate_cli("kernel", "plan", *args)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert proc.stderr.startswith("rtgate: ") and proc.stderr.count("\n") == 1


@pytest.mark.parametrize("line, message", [
    ("/etc/hostname", "is outside the series' directory"),
    ("../outside.patch", "is outside the series' directory"),
    ("sub/../../outside.patch", "is outside the series' directory"),
    ("sub/link.patch", "resolves outside the series' directory (a symbolic link)"),
])
def test_series_cannot_name_a_file_outside_its_directory(rtgate_cli: RunCli,
                                                         tmp_path: Path, line: str,
                                                        message: str) -> None:
    # A pull request writes the series: the plan hashes what it names, the build applies it and
    # bisect copies it to the same relative name under its own output.
    patches = tmp_path / "patches"
    (patches / "sub").mkdir(parents=True)
    (tmp_path / "outside.patch").write_text("secret")
    (patches / "sub" / "link.patch").symlink_to(tmp_path / "outside.patch")
    (patches / "sub" / "inside.patch").write_text("fine")
    series = patches / "series"
    series.write_text(f"sub/inside.patch\n{line}\n")
    with pytest.raises(InputError, match=re.escape(message)):
        read_series(series)
    proc = rtgate_cli("kernel", "plan", "--board", "qemu-arm64", "--flavor", "rt",
                      "--patches", str(series))
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"rtgate: {series}: line 2: ") and message in proc.stderr
    series.write_text("sub/inside.patch\n")
    assert [p.name for p in read_series(series)] == ["sub/inside.patch"]
