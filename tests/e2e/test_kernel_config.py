"""The configure stage for real (kbuild, merge_config.sh, olddefconfig, patch): no compile.

Patches and Kconfig verification run before any compile, so `--config-only` exercises them in
seconds to a minute. The rpi5 board needs the raspberrypi/linux tree, which CI cannot fetch: its
config merge runs on a small fake tree (tests/data/kernel/fake-rpi-tree + the real kbuild).
"""

from __future__ import annotations

import difflib
import json
import shutil
import tarfile
from pathlib import Path

import pytest
from clirun import RunCli

from rtgate.kernel.cache import cache_root
from rtgate.kernel.kconfig import parse_config
from rtgate.kernel.source import materialize, resolve

pytestmark = pytest.mark.integration
FAKE_RPI = Path(__file__).parents[1] / "data" / "kernel" / "fake-rpi-tree"
TARGET = "kernel/sched/rt.c"


@pytest.fixture(scope="module")
def pristine() -> Path:
    return materialize(resolve("debian:linux-source-6.12"), cache_root())


def one_line_patch(tree: Path, old: str, new: str) -> str:
    """A -p1 patch that replaces the first line containing `old` in TARGET."""
    lines = (tree / TARGET).read_text().splitlines(keepends=True)
    index = next(i for i, line in enumerate(lines) if old in line)
    changed = [*lines[:index], lines[index].replace(old, new), *lines[index + 1:]]
    return "".join(difflib.unified_diff(lines, changed, f"a/{TARGET}", f"b/{TARGET}"))


def test_patch_applies_and_pristine_tree_stays_pristine(rtgate_cli: RunCli,
                                                        tmp_path: Path, pristine: Path) -> None:
    before = (pristine / TARGET).read_text()
    (tmp_path / "0001-comment.patch").write_text(one_line_patch(pristine, "Real-Time", "RT"))
    (tmp_path / "series").write_text("0001-comment.patch\n")
    proc = rtgate_cli("kernel", "build", "--board", "qemu-arm64", "--flavor", "stock",
                      "--patches", str(tmp_path / "series"), "--config-only", "--quiet",
                      "--out", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    assert f"patching file {TARGET}" in (tmp_path / "out" / "build.log").read_text()
    assert (pristine / TARGET).read_text() == before
    meta = json.loads((tmp_path / "out" / "metadata.json").read_text())
    assert meta["plan"]["patches"][0]["name"] == "0001-comment.patch"


def test_patch_that_does_not_apply_names_it_and_shows_the_hunk(rtgate_cli: RunCli, tmp_path: Path,
                                                               pristine: Path) -> None:
    good = one_line_patch(pristine, "Real-Time", "RT")
    # A hunk removing a line that is not in the file (a stale patch): patch(1) rejects it.
    bad = one_line_patch(pristine, "int ", "long ").replace("\n-", "\n-stale ", 1)
    (tmp_path / "0001-ok.patch").write_text(good)
    (tmp_path / "0002-stale.patch").write_text(bad)
    (tmp_path / "series").write_text("0001-ok.patch\n0002-stale.patch\n")
    out = tmp_path / "out"
    proc = rtgate_cli("kernel", "build", "--board", "qemu-arm64", "--flavor", "rt", "--patches",
                      str(tmp_path / "series"), "--quiet", "--out", str(out))
    assert proc.returncode == 2, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith(f"rtgate: {tmp_path / 'series'}: patch 0002-stale.patch does not "
                           "apply: ")
    assert "FAILED" in last
    # The rejected hunk itself is printed above the one-line error.
    removed = next(line for line in bad.splitlines() if line.startswith("-stale "))
    assert "@@ " in proc.stderr and removed in proc.stderr
    assert "0002-stale.patch" in (out / "build.log").read_text()


def test_option_kconfig_drops_is_an_error_listing_it(rtgate_cli: RunCli, tmp_path: Path) -> None:
    # RCU_BOOST needs PREEMPT_RT (or RCU_EXPERT): on a stock kernel olddefconfig drops it.
    extra = tmp_path / "boost.config"
    extra.write_text("CONFIG_LOG_BUF_SHIFT=16\nCONFIG_RCU_BOOST=y\n")
    out = tmp_path / "out"
    proc = rtgate_cli("kernel", "build", "--board", "qemu-arm64", "--flavor", "stock",
                      "--fragment", str(extra), "--config-only", "--quiet", "--out", str(out))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1
    assert "Kconfig dropped 1 requested option(s)" in proc.stderr
    assert "CONFIG_RCU_BOOST=y (boost.config:2)" in proc.stderr
    assert "CONFIG_LOG_BUF_SHIFT" not in proc.stderr
    # The raw evidence is kept where the error points.
    assert proc.stderr.startswith(f"rtgate: {out / '.config'}: ")
    assert parse_config(out / ".config")["CONFIG_LOG_BUF_SHIFT"] == "16"


@pytest.fixture(scope="module")
def fake_rpi_source(tmp_path_factory: pytest.TempPathFactory, pristine: Path) -> str:
    """A tarball of the fake raspberrypi tree with the real kbuild (Makefile, scripts/)."""
    tree = tmp_path_factory.mktemp("fake-rpi") / "linux"
    shutil.copytree(FAKE_RPI, tree)
    shutil.copy(pristine / "Makefile", tree / "Makefile")
    shutil.copytree(pristine / "scripts", tree / "scripts")
    tarball = tree.parent / "rpi-linux.tar.gz"
    with tarfile.open(tarball, "w:gz") as tar:
        tar.add(tree, arcname="linux")
    return f"tar:{tarball}"


@pytest.mark.parametrize("flavor, rt", [("rt", "y"), ("stock", None)])
def test_rpi5_config_merge_on_a_fake_tree(rtgate_cli: RunCli,
                                          tmp_path: Path, fake_rpi_source: str, flavor: str,
                                          rt: str | None) -> None:
    out = tmp_path / "out"
    proc = rtgate_cli("kernel", "build", "--board", "rpi5", "--flavor", flavor, "--source",
                      fake_rpi_source, "--config-only", "--quiet", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    config = parse_config(out / ".config")
    # From bcm2712_defconfig, then the flavor fragment on top.
    assert config["CONFIG_ARCH_BCM2835"] == "y" and config["CONFIG_PREEMPT"] == "y"
    assert config.get("CONFIG_PREEMPT_RT") == rt
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["plan"]["base_config"] == "bcm2712_defconfig"
    assert meta["plan"]["source"]["kind"] == "tar"
    assert meta["config_only"] is True


def test_compile_failure_is_exit_3_with_the_log_kept(rtgate_cli: RunCli,
                                                     tmp_path: Path, pristine: Path) -> None:
    # kernel/bounds.c is the first file kbuild compiles: the failure comes in seconds.
    target = "kernel/bounds.c"
    lines = (pristine / target).read_text().splitlines(keepends=True)
    broken = [*lines, '#error "rtgate: deliberately broken"\n']
    (tmp_path / "0001-break.patch").write_text(
        "".join(difflib.unified_diff(lines, broken, f"a/{target}", f"b/{target}")))
    (tmp_path / "series").write_text("0001-break.patch\n")
    out = tmp_path / "out"
    proc = rtgate_cli("kernel", "build", "--board", "qemu-arm64", "--flavor", "stock",
                      "--patches", str(tmp_path / "series"), "--quiet", "--out", str(out))
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr.count("\n") == 1
    assert proc.stderr.startswith(f"rtgate: {out / 'build.log'}: make failed (exit 2): ")
    assert "deliberately broken" in proc.stderr
    assert "deliberately broken" in (out / "build.log").read_text()
    assert not (out / "Image").exists()
