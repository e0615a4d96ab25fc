"""`rtgate report` drawing a site's plots (gnuplot)."""

from __future__ import annotations

from pathlib import Path

import pytest
from clirun import RunCli
from test_report_cli import DATA


@pytest.mark.integration
def test_report_prints_the_index_and_survives_a_broken_stored_run(rtgate_cli: RunCli,
                                                                  tmp_path: Path) -> None:
    history, site = tmp_path / "history", tmp_path / "site"
    first = rtgate_cli("report", DATA / "qemu", "--history", history, "--out", site)
    assert first.returncode == 0, first.stderr
    assert first.stdout == f"{site / 'index.html'}\n"
    assert "4 added, 0 already there, 0 corrupt" in first.stderr

    stored = sorted((history / "runs").iterdir())[0]
    (stored / "result.json").write_text("{ broken")
    again = rtgate_cli("report", "--history", history, "--out", tmp_path / "site2")
    assert again.returncode == 0, again.stderr
    assert f"{stored / 'result.json'}: not a JSON document" in again.stderr
    assert (stored / "result.json").read_text() == "{ broken"  # kept for a human to look at
    published = {p.name for p in (tmp_path / "site2" / "runs").iterdir()}
    assert published == {p.name for p in (history / "runs").iterdir()} - {stored.name}


@pytest.mark.integration
def test_an_out_dir_reused_for_other_results_keeps_only_what_it_publishes(
        rtgate_cli: RunCli, tmp_path: Path) -> None:
    site = tmp_path / "site"
    assert rtgate_cli("report", DATA / "qemu", "--out", site).returncode == 0
    # What an older rtgate published there: a copied JUnit and raw files under their own names.
    kept = site / "runs" / "local-stock-idle-20261121T235604Z"
    for stale in ("junit.xml", "raw/cyclictest.json", "raw/old/evil.svg"):
        (kept / stale).parent.mkdir(parents=True, exist_ok=True)
        (kept / stale).write_text("<svg/>")
    assert rtgate_cli("report", DATA / "local", "--out", site).returncode == 0
    assert sorted(p.name for p in (site / "runs").iterdir()) == [
        "local-stock-cpu-20261121T235642Z", "local-stock-idle-20261121T235604Z"]
    assert not list((site / "plots").glob("*qemu*"))
    assert sorted(p.relative_to(kept).as_posix() for p in kept.rglob("*")) == [
        "histogram.dat", "histogram.png", "histogram.svg", "index.html", "raw",
        "raw/cyclictest.json.txt", "raw/cyclictest.txt", "result.json"]
