"""Finding results and the files published with them."""

from __future__ import annotations

import shutil
from pathlib import Path

from rtgate.report.runs import collect

DATA = Path(__file__).parent / "data" / "report"


def test_a_pipeline_junit_above_its_results_is_found_but_never_above_the_given_dir(
        tmp_path: Path) -> None:
    # rtgate pipeline: OUT/<flavor>/<scenario>/result.json and one OUT/junit.xml.
    out = tmp_path / "ci" / "out"
    shutil.copytree(DATA / "qemu" / "rt-idle", out / "rt" / "idle")
    shutil.copy(DATA / "candidate" / "stock-idle" / "junit.xml", out / "junit.xml")
    (tmp_path / "ci" / "junit.xml").write_text("<testsuites/>")  # someone else's

    (run,) = collect([out])
    assert run.junit == out / "junit.xml"
    (run,) = collect([out / "rt"])
    assert run.junit is None
    (run,) = collect([out / "rt" / "idle" / "result.json"])
    assert run.junit is None


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
