"""Bounded build outputs (issue 31, item 4): sparse bombs and oversized outputs of a build are
refused before the controller reads or copies them; the log keeps its tail (a full disk while
storing: tests/integration/test_kernel_store_enospc.py).

The bombs are the review's: `truncate -s 8G .config` (or utsversion.h, or the image) inside the
build container costs nothing and was a MemoryError on the host or a 1 GiB copy in the cache.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rtgate.errors import InfraError
from rtgate.kernel import bounded, build
from rtgate.kernel.progress import BuildProgress


def slot(tmp_path: Path) -> build._Slot:
    root = (tmp_path / "cache" / "work" / "qemu-arm64-rt").resolve()
    (root / "build" / "include" / "generated").mkdir(parents=True)
    (root / "stage" / "modules").mkdir(parents=True)
    return build._Slot(root, (tmp_path / "cache").resolve(), trusted=False)


@pytest.mark.parametrize(("name", "kind"), [(".config", "config"), ("Image", "image"),
                                            ("include/generated/utsversion.h", "header")])
def test_a_sparse_output_is_refused_unread(tmp_path: Path, name: str, kind: str) -> None:
    s = slot(tmp_path)
    bomb = s.obj / name
    with bomb.open("wb") as fh:
        fh.truncate(8 << 30)  # 8 GiB of holes
    with pytest.raises(InfraError, match="over its cap|sparse"):
        s.built(bomb, kind)


def test_the_version_header_bomb_is_no_memory_error(tmp_path: Path) -> None:
    s = slot(tmp_path)
    header = s.obj / "include" / "generated" / "utsversion.h"
    header.write_text('#define UTS_VERSION "#1 SMP PREEMPT_RT"\n')
    assert build._uts_version(s) == "#1 SMP PREEMPT_RT"
    with header.open("r+b") as fh:
        fh.truncate(8 << 30)
    with pytest.raises(InfraError, match="header is 8589934592 bytes, over its cap"):
        build._uts_version(s)


def test_a_sparse_file_below_the_cap_is_refused_too(tmp_path: Path) -> None:
    s = slot(tmp_path)
    image = s.obj / "Image"
    with image.open("wb") as fh:
        fh.truncate(64 << 20)  # within the image cap, all holes
    with pytest.raises(InfraError, match="sparse"):
        s.built(image, "image")
    image.write_bytes(os.urandom(2 << 20))  # a real file of that kind passes
    assert s.built(image, "image") == image


def test_a_modules_tree_is_capped_in_size_members_and_holes(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    s = slot(tmp_path)
    modules = s.root / "stage" / "modules"
    (modules / "a.ko").write_bytes(b"\0" * 4096)
    assert s.built(modules, "modules", links_inside=True) == modules
    with (modules / "bomb.ko").open("wb") as fh:
        fh.truncate(1 << 30)
    with pytest.raises(InfraError, match="sparse file bomb.ko"):
        s.built(modules, "modules", links_inside=True)
    (modules / "bomb.ko").unlink()
    monkeypatch.setitem(bounded.MEMBERS, "modules", 10)
    for i in range(11):
        (modules / f"m{i}.ko").touch()
    with pytest.raises(InfraError, match="over 10 entries"):
        s.built(modules, "modules", links_inside=True)


def test_the_log_keeps_its_tail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bounded, "LOG_TAIL", 1000)
    monkeypatch.setattr("rtgate.kernel.progress.LOG_TAIL", 1000)
    log = tmp_path / "build.log"
    with BuildProgress(log, "t", enabled=False) as prog:
        for i in range(500):
            prog.line(f"line {i:04d} " + "x" * 20)
    text = log.read_text()
    assert len(text.encode()) < 1100 and text.startswith("### rtgate: build.log cut")
    assert text.rstrip().endswith("line 0499 " + "x" * 20)
