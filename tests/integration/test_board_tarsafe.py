"""Archives from a board never write outside their destination, with or without Python's
tarfile data filter (Debian 12's Python 3.11.2 lacks it)."""

from __future__ import annotations

import io
import os
import stat
import subprocess
import tarfile
from pathlib import Path

import pytest

from rtgate.board import tarsafe


def _archive(*members: tuple[str, bytes | str]) -> tarfile.TarFile:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, payload in members:
            info = tarfile.TarInfo(name)
            if isinstance(payload, str):
                info.type, info.linkname = tarfile.SYMTYPE, payload
                tar.addfile(info)
            else:
                info.size = len(payload)
                tar.addfile(info, io.BytesIO(payload))
    buf.seek(0)
    return tarfile.open(fileobj=buf, mode="r")


@pytest.fixture(params=["data-filter", "fallback"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "fallback":
        monkeypatch.delattr(tarfile, "data_filter", raising=False)
    return str(request.param)


def test_plain_archive_is_extracted(tmp_path: Path, mode: str) -> None:
    tarsafe.extract(_archive(("raw/cyclictest.json", b"{}"), ("raw/link", "cyclictest.json")),
                    tmp_path)
    assert (tmp_path / "raw" / "cyclictest.json").read_bytes() == b"{}"


@pytest.mark.parametrize("name", ["../evil", "{abs}/evil", "raw/up"])
def test_nothing_lands_outside(tmp_path: Path, mode: str, name: str) -> None:
    """A member escaping by "..", an absolute path or a symlink is refused (or, for an absolute
    path, the data filter makes it relative): never written outside."""
    name = name.format(abs=tmp_path)
    member = (name, "../../evil") if name == "raw/up" else (name, b"x")
    try:
        tarsafe.extract(_archive(member), tmp_path / "dest")
    except tarfile.TarError:
        pass
    assert not (tmp_path / "evil").exists()
    assert not os.path.lexists(tmp_path / "dest" / "raw" / "up")


def test_setuid_and_world_writable_modes_are_dropped(tmp_path: Path, mode: str) -> None:
    """A board's archive (made here by GNU tar) with a setuid, a world-writable file and a sticky
    world-writable directory extracts with none of those bits: as root, a setuid file would run
    as root; a writable one could be rewritten after the gate judged it."""
    src = tmp_path / "src"
    (src / "raw").mkdir(parents=True)
    for name, bits in (("suid", 0o4755), ("open", 0o777)):
        (src / "raw" / name).write_bytes(b"#!/bin/sh\n")
        (src / "raw" / name).chmod(bits)
    (src / "raw").chmod(0o1777)
    archive = tmp_path / "board.tar"
    subprocess.run(["tar", "-cf", str(archive), "-C", str(src), "raw"], check=True)
    assert {m.name: stat.S_IMODE(m.mode) for m in tarfile.open(archive).getmembers()} == {
        "raw": 0o1777, "raw/suid": 0o4755, "raw/open": 0o777}
    with tarfile.open(archive) as tar:
        tarsafe.extract(tar, tmp_path / "dest")
    for name in ("raw", "raw/suid", "raw/open"):
        bits = stat.S_IMODE((tmp_path / "dest" / name).stat().st_mode)
        assert bits & (stat.S_ISUID | stat.S_ISGID | stat.S_ISVTX | 0o022) == 0, (name, oct(bits))
    assert (tmp_path / "dest" / "raw" / "suid").stat().st_mode & stat.S_IXUSR
