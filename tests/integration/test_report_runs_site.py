"""Symlinks next to a result, through a whole site (gnuplot)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from clirun import RunCli
from test_report_runs import DATA


@pytest.mark.integration
def test_symlinks_next_to_a_result_are_never_followed_or_published(rtgate_cli: RunCli,
                                                                   tmp_path: Path) -> None:
    # A stand-in for /etc/hostname: a file outside the results tree.
    secret = tmp_path / "outside" / "hostname"
    secret.parent.mkdir()
    secret.write_text("build-host-7.internal\n")
    (secret.parent / "cyclictest.json").symlink_to(secret)
    results = tmp_path / "results"
    linked_files = results / "linked-files"
    shutil.copytree(DATA / "candidate" / "stock-idle", linked_files)
    for name in ("junit.xml", "raw/cyclictest.json", "raw/cyclictest.hist"):
        (linked_files / name).unlink()
        (linked_files / name).symlink_to(secret)
    linked_dir = results / "linked-dir"
    shutil.copytree(DATA / "qemu" / "rt-idle", linked_dir)
    shutil.rmtree(linked_dir / "raw")
    (linked_dir / "raw").symlink_to(secret.parent)

    history, site = tmp_path / "history", tmp_path / "site"
    proc = rtgate_cli("report", results, "--history", history, "--out", site)
    assert proc.returncode == 0, proc.stderr
    published = [p for p in [*history.rglob("*"), *site.rglob("*")] if p.is_file()]
    assert len(published) > 10  # both runs are published, without those files
    assert not [p for p in published if b"build-host-7" in p.read_bytes()]
    assert not [p for p in published if p.is_symlink()]
    for skipped in ("raw/cyclictest.json", "raw/cyclictest.hist"):
        assert f"rtgate: {linked_files / skipped}: a symbolic link, not followed" in proc.stderr
    assert f"rtgate: {linked_dir / 'raw'}: a symbolic link, not followed" in proc.stderr
