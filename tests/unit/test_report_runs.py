"""Finding results and the files published with them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from clirun import RunCli

from rtgate.report.runs import collect

DATA = Path(__file__).parents[1] / "data" / "report"


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
