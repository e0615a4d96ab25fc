"""`rtgate report` as a CLI contract: what it prints, its exit codes, one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from clirun import RunCli

DATA = Path(__file__).parents[1] / "data" / "report"


def test_a_malformed_result_is_a_one_line_input_error_naming_it(rtgate_cli: RunCli,
                                                                tmp_path: Path) -> None:
    bad = tmp_path / "run" / "result.json"
    bad.parent.mkdir()
    bad.write_text('{"schema": "rtgate/result/v1", "run_id": 7}')
    proc = rtgate_cli("report", tmp_path / "run", "--out", tmp_path / "site")
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"rtgate: {bad}: invalid result at ")
    assert proc.stderr.count("\n") == 1
    assert bad.read_text() == '{"schema": "rtgate/result/v1", "run_id": 7}'  # left as given


@pytest.mark.parametrize("args, message", [
    (("--out", "SITE"), "rtgate: rtgate report: give results or --history DIR (or both)\n"),
    (("EMPTY", "--out", "SITE"), "rtgate: EMPTY: no result.json below this directory\n"),
])
def test_nothing_to_report_is_a_usage_error(rtgate_cli: RunCli,
                                            tmp_path: Path, args: tuple[str, ...],
                                            message: str) -> None:
    (tmp_path / "EMPTY").mkdir()
    real = [str(tmp_path / a) if a in ("SITE", "EMPTY") else a for a in args]
    proc = rtgate_cli("report", *real)
    assert proc.returncode == 2
    assert proc.stderr == message.replace("EMPTY", str(tmp_path / "EMPTY"))


def test_an_invalid_thresholds_file_is_named(rtgate_cli: RunCli, tmp_path: Path) -> None:
    bad = tmp_path / "thresholds.yml"
    bad.write_text("schema: rtgate/thresholds/v2\nbudgets:\n  - board: x\n")
    proc = rtgate_cli("report", DATA / "qemu", "--thresholds", bad, "--out", tmp_path / "site")
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"rtgate: {bad}:")


def test_an_empty_history_is_an_empty_site(rtgate_cli: RunCli, tmp_path: Path) -> None:
    proc = rtgate_cli("report", "--history", tmp_path / "h", "--out", tmp_path / "site")
    assert proc.returncode == 0, proc.stderr
    assert "No runs yet." in (tmp_path / "site" / "index.html").read_text()


def test_runs_that_all_failed_in_the_lab_still_make_a_site_and_exit_3(rtgate_cli: RunCli,
                                                                      tmp_path: Path) -> None:
    """A newcomer's demo whose every QEMU run failed must end with a page saying why."""
    from rtgate.gate import infrarecord
    from rtgate.gate.verdict import Infra

    out = tmp_path / "demo"
    for flavor in ("stock", "rt"):
        infrarecord.save(Infra("qemu-arm64", flavor, "net", out / flavor / "net" / "console.log",
                               'qemu: failed to find romfile "efi-virtio.rom" <b>x</b>'),
                         out / flavor / "net")
    (out / "junit.xml").write_text("<testsuites/>")
    proc = rtgate_cli("report", out, "--out", tmp_path / "site")
    assert proc.returncode == 3, proc.stderr
    index = Path(proc.stdout.strip())
    html = index.read_text()
    assert html.count('<tr class="infra-row">') == 2
    assert "efi-virtio.rom" in html and "<b>x</b>" not in html  # escaped, not markup
    assert "No runs yet" not in html


def test_a_crashed_kernel_is_listed_apart_with_its_line_and_exits_1(rtgate_cli: RunCli,
                                                                     tmp_path: Path) -> None:
    """The site's "Kernels that crashed" holds a run whose record names a dying line its
    evidence beside it holds; the same claim without that evidence is a lab failure (exit 3)."""
    from rtgate.gate import infrarecord
    from rtgate.gate.verdict import Crash

    said = "Kernel panic - not syncing: <b>Attempted to kill init!</b>"
    out = tmp_path / "run"
    home = out / "rt" / "all-in"
    (home / "previous-boot").mkdir(parents=True)
    evidence = home / "previous-boot" / "journal-kernel.txt"
    evidence.write_text(f"[    1.0] {said}\n")
    infrarecord.save(Crash("rpi5", "rt", "all-in", home / "ssh.log", f"crashed: {said}",
                           said=said, evidence=evidence), home)
    proc = rtgate_cli("report", out, "--out", tmp_path / "site")
    assert proc.returncode == 1, proc.stderr
    html = Path(proc.stdout.strip()).read_text()
    assert html.count('<tr class="crash-row">') == 1 and 'class="infra-row"' not in html
    assert "Attempted to kill init!" in html and "<b>Attempted" not in html
    assert "previous-boot/journal-kernel.txt" in html

    evidence.write_text("[    1.0] a quiet boot\n")
    proc = rtgate_cli("report", out, "--out", tmp_path / "site2")
    assert proc.returncode == 3, proc.stderr
    html = Path(proc.stdout.strip()).read_text()
    assert 'class="crash-row"' not in html and html.count('<tr class="infra-row">') == 1


@pytest.mark.parametrize("text, problem", [
    ('{"schema": "rtgate/infra/v1", "board": "b"}', "not an rtgate infrastructure record"),
    ("{not json", "not an rtgate infrastructure record"),
])
def test_a_malformed_infra_record_is_a_one_line_input_error(rtgate_cli: RunCli,
                                                            tmp_path: Path, text: str,
                                                             problem: str) -> None:
    bad = tmp_path / "run" / "infra.json"
    bad.parent.mkdir()
    bad.write_text(text)
    proc = rtgate_cli("report", tmp_path / "run", "--out", tmp_path / "site")
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"rtgate: {bad}: {problem}")
    assert proc.stderr.count("\n") == 1
    assert bad.read_text() == text
