"""Archives from a board never write outside their destination, with or without Python's
tarfile data filter (Debian 12's Python 3.11.2 lacks it)."""

from __future__ import annotations

import io
import os
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
