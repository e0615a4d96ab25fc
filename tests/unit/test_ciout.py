"""No text rtgate prints can start a GitHub workflow command (rtgate.ciout).

The runner's two parsers (actions/runner src/Runner.Common/ActionCommand.cs): V2 wants ``::``
at the start of the line after ``TrimStart()``; V1 finds ``##[`` anywhere in it. Both compare
culture-sensitively, skipping ignorable code points; ``v1``/``v2`` below model that.
"""

from __future__ import annotations

import io

import pytest

from rtgate.ciout import CommandGuard, escape

_SKIPPED = "\u00ad\u200b\u200d\u2060\ufeff\x00\x1b\ufe0f"


def _compared(line: str) -> str:
    return "".join(c for c in line if c not in _SKIPPED)


def v2(line: str) -> bool:
    return _compared(line).lstrip().startswith("::")


def v1(line: str) -> bool:
    return "##[" in _compared(line)


def test_escape_is_githubs_for_command_data_and_defuses_double_colons() -> None:
    assert escape("50% a\r\nb") == "50% a%0D%0Ab"
    assert escape("%0A%25%3a%5b") == "%250A%2525%253a%255b"
    assert escape("x\n::error::y") == "x%0A:%3Aerror:%3Ay"
    assert escape("tab\tkept, \x1b[31mred\u2028") == "tab\tkept, %1B[31mred%2028"
    assert escape("6.12.0-rt5 run-20261125T0300Z 7 µs") == "6.12.0-rt5 run-20261125T0300Z 7 µs"


def test_escape_defuses_the_legacy_syntax_anywhere_in_a_line() -> None:
    forged = "run-1 ##[error]forged ##[add-mask]x ###[group]g"
    assert escape(forged) == "run-1 ##%5Berror]forged ##%5Badd-mask]x ###%5Bgroup]g"
    assert not v1(escape(forged))


@pytest.mark.parametrize("value", [
    "#\u00ad#[error]x", ":\u200b:error::x", "\ufeff::warning::x", "#\u2060#\u200d[group]",
    "\u00a0\u2003::error::x", "#\x00#[add-mask]s",
])
def test_escape_leaves_no_ignorable_to_split_a_command(value: str) -> None:
    line = escape(value)
    assert not v1(line) and not v2(line)
    assert all(c not in line for c in _SKIPPED)


def guarded(*writes: str) -> str:
    inner = io.StringIO()
    guard = CommandGuard(inner)  # type: ignore[arg-type]
    for text in writes:
        guard.write(text)
    guard.flush()
    return inner.getvalue()


@pytest.mark.parametrize("writes, seen", [
    (["::error::x\n"], ":%3Aerror::x\n"),
    (["ok\n  ::warning::x\n"], "ok\n  :%3Awarning::x\n"),
    (["ok\r::add-mask::x"], "ok\r:%3Aadd-mask::x"),
    ([":", ":set-output name=a::b\n"], ":%3Aset-output name=a::b\n"),
    (["  ", ":", ":x"], "  :%3Ax"),
    (["a::b\n", ":c\n", ":\n"], "a::b\n:c\n:\n"),
    (["PASS max_us 7 :: fine\n"], "PASS max_us 7 :: fine\n"),
    (["\u00a0\u3000::error::x\n"], "\u00a0\u3000:%3Aerror::x\n"),
    ([":\u200b:error::x\n"], ":\u200b%3Aerror::x\n"),
    (["run-1 ##[error]forged\n"], "run-1 ##%5Berror]forged\n"),
    (["a #", "#", "[add-mask]x\n"], "a ##%5Badd-mask]x\n"),
    (["a #\u00ad", "#[group]\n"], "a #\u00ad#%5Bgroup]\n"),
    (["####[x] # #[y] #\n#[z]\n"], "####%5Bx] # #[y] #\n#[z]\n"),
])
def test_no_line_written_through_the_guard_is_a_workflow_command(writes: list[str],
                                                                 seen: str) -> None:
    out = guarded(*writes)
    assert out == seen
    assert not [line for line in out.splitlines() if v1(line) or v2(line)]
