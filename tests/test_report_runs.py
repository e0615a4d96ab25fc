"""Finding results and the files published with them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from clirun import RunCli

from rtgate.report.runs import collect

DATA = Path(__file__).parent / "data" / "report"


def test_raw_files_are_found_as_recorded_or_under_raw(tmp_path: Path) -> None:
    # Bench records absolute paths of the capture directory; a copy finds them under raw/.
    shutil.copytree(DATA / "candidate" / "stock-cpu", tmp_path / "copy")
    (run,) = collect([tmp_path / "copy"])
    assert [p.relative_to(tmp_path) for p in run.raw] == [
        Path("copy/raw/cyclictest.json"), Path("copy/raw/cyclictest.hist")]


def test_the_same_run_given_twice_is_one_run() -> None:
    runs = collect([DATA / "qemu", DATA / "qemu" / "rt-cpu" / "result.json"])
    assert len(runs) == 4


def test_named_result_files_in_a_directory_are_results_too(tmp_path: Path) -> None:
    shutil.copy(DATA / "qemu" / "rt-idle" / "result.json", tmp_path / "rt-idle.result.json")
    shutil.copy(DATA / "qemu" / "rt-cpu" / "result.json", tmp_path / "notes.json")
    assert [r.result.scenario for r in collect([tmp_path])] == ["idle"]


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


@pytest.mark.parametrize("named", [False, True])
def test_a_symlinked_result_is_refused(rtgate_cli: RunCli, tmp_path: Path, named: bool) -> None:
    shutil.copytree(DATA / "qemu" / "rt-idle", tmp_path / "elsewhere")
    (tmp_path / "results" / "run").mkdir(parents=True)
    link = tmp_path / "results" / "run" / "result.json"
    link.symlink_to(tmp_path / "elsewhere" / "result.json")
    proc = rtgate_cli("report", link if named else tmp_path / "results",
                      "--out", tmp_path / "site")
    assert proc.returncode == 2
    assert proc.stderr == f"rtgate: {link}: a symbolic link, not followed\n"
    assert not (tmp_path / "site").exists()
