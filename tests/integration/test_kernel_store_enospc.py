"""A full disk while a build is stored in the cache (issue 31, item 4): the staging directory is
removed and the build fails as an infrastructure error (exit 3), never a half entry. The cache
sits on a 1 MiB tmpfs of the test's own; the image is 2 MiB."""

from __future__ import annotations

import io
import os
import subprocess
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from steps import cache_mount_check

from rtgate.errors import InfraError
from rtgate.kernel import build
from rtgate.kernel.plan import make_plan
from rtgate.kernel.runtime import get_runtime

pytestmark = pytest.mark.integration


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mnt = tmp_path / "kernels"
    mnt.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


def test_enospc_while_storing_leaves_no_staging(tmp_path: Path, small_disk: Path) -> None:
    root = (tmp_path / "work" / "qemu-arm64-rt").resolve()
    slot = build._Slot(root, tmp_path.resolve(), trusted=False)
    source = tmp_path / "linux.tar"
    with tarfile.open(source, "w") as tar:
        tar.addfile(tarfile.TarInfo("linux/Makefile"), io.BytesIO(b""))
    plan = make_plan("qemu-arm64", "rt", get_runtime("host"), source=f"tar:{source}")
    image = slot.obj / plan.target.image
    image.parent.mkdir(parents=True)
    image.write_bytes(os.urandom(2 << 20))
    (slot.obj / ".config").write_text("CONFIG_X=y\n")
    slot.log.write_text("log\n")
    entry = small_disk / plan.cache_key
    with pytest.raises(InfraError, match="cannot store the kernel in the cache: No space left"):
        build._store(plan, slot, entry, "6.6.0", 1.0, "host")
    assert list(small_disk.iterdir()) == []


@pytest.mark.parametrize("workflow", ["latency-gate.yml", "latency-bisect.yml"])
def test_a_pull_requests_build_needs_a_filesystem_of_its_own(tmp_path: Path, small_disk: Path,
                                                             workflow: str) -> None:
    script = cache_mount_check(workflow)
    plain = tmp_path / "plain"
    plain.mkdir()
    for cache, code in ((plain, 3), (small_disk, 0)):
        proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
                              env={"PATH": os.environ["PATH"], "RTGATE_CACHE": str(cache)},
                              capture_output=True, text=True)
        assert proc.returncode == code, proc.stdout + proc.stderr
    assert "is no filesystem of its own" in subprocess.run(
        ["bash", "-c", script], env={"PATH": os.environ["PATH"], "RTGATE_CACHE": str(plain)},
        capture_output=True, text=True).stdout
