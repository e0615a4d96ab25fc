"""The guest's real initramfs: built from Debian arm64 packages, cached, checked for its
libraries."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest

from rtgate.board.qemu import initramfs
from rtgate.board.spec import QemuOptions, load_board
from rtgate.errors import InfraError


def test_library_check_names_the_missing_library(tmp_path: Path) -> None:
    """A real dynamically linked program without its libraries beside it."""
    (tmp_path / "usr" / "bin").mkdir(parents=True)
    shutil.copy(shutil.which("iperf3") or "/usr/bin/iperf3", tmp_path / "usr" / "bin")
    with pytest.raises(InfraError, match=r"iperf3 needs lib\S+\.so"):
        initramfs.check_libraries(tmp_path, ["usr/bin/iperf3"])
    with pytest.raises(InfraError, match="initramfs has no usr/bin/cyclictest"):
        initramfs.check_libraries(tmp_path, ["usr/bin/cyclictest"])


@pytest.mark.integration
@pytest.mark.timeout(600)
def test_real_initramfs_holds_the_guest_programs_and_is_cached(tmp_path: Path) -> None:
    opts = load_board("qemu-arm64").options
    assert isinstance(opts, QemuOptions)
    built = initramfs.build(opts.packages, opts.skip_packages)
    names = subprocess.run(f"gzip -dc {built.path} | cpio -t --quiet", shell=True, check=True,
                           capture_output=True, text=True).stdout.split()
    for program in ("init", *initramfs.PROGRAMS):
        assert program in names
    assert not any(n.startswith("usr/share/doc/") for n in names)
    assert "rt-tests:arm64" in built.packages and "python3:arm64" not in built.packages
    started = time.monotonic()
    again = initramfs.build(opts.packages, opts.skip_packages)
    assert again.path == built.path and time.monotonic() - started < 5
