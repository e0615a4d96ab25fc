"""The QEMU board's initramfs: dependency resolution from apt's real output, the shared-library
check on real ELF files. The real archive, built from Debian arm64 packages, is
tests/e2e/test_initramfs_build.py."""

from __future__ import annotations

from pathlib import Path

from rtgate.board.qemu import initramfs

DATA = Path(__file__).parents[1] / "data" / "board"


def test_dependency_groups_from_real_apt_output() -> None:
    groups = initramfs._dependency_groups((DATA / "apt-cache-depends.txt").read_text())
    assert set(groups) == {"iperf3", "libc6", "rt-tests"}
    # A virtual dependency is replaced by its providers; "|" joins alternatives in one group.
    assert ["init-system-helpers"] in groups["iperf3"]
    assert ["libiperf0:arm64"] in groups["iperf3"]
    assert ["debconf", "cdebconf:arm64", "debconf"] in groups["iperf3"]
    assert groups["libc6"] == [["libgcc-s1:arm64"]]
    assert groups["rt-tests"] == [["libc6:arm64"], ["libnuma1:arm64"], ["python3:arm64"]]


def test_cache_key_follows_versions_and_init_script() -> None:
    base = initramfs.cache_key({"rt-tests:arm64": "2.4-1"}, "#!/bin/sh\n")
    assert base == initramfs.cache_key({"rt-tests:arm64": "2.4-1"}, "#!/bin/sh\n")
    assert base != initramfs.cache_key({"rt-tests:arm64": "2.5-1"}, "#!/bin/sh\n")
    assert base != initramfs.cache_key({"rt-tests:arm64": "2.4-1"}, "#!/bin/sh\necho\n")
