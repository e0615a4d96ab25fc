"""No text rtgate prints can start a GitHub workflow command (rtgate.ciout)."""

from __future__ import annotations

import io

import pytest

from rtgate.ciout import CommandGuard, escape


def test_escape_is_githubs_for_command_data_and_defuses_double_colons() -> None:
    assert escape("50% a\r\nb") == "50% a%0D%0Ab"
    assert escape("%0A%25%3a") == "%250A%2525%253a"
    assert escape("x\n::error::y") == "x%0A:%3Aerror:%3Ay"
    assert escape("tab\tkept, \x1b[31mred\u2028") == "tab\tkept, %1B[31mred%2028"
    assert escape("6.12.0-rt5 run-20261125T0300Z") == "6.12.0-rt5 run-20261125T0300Z"


def guarded(*writes: str) -> str:
    inner = io.StringIO()
    guard = CommandGuard(inner)  # type: ignore[arg-type]
    for text in writes:
        guard.write(text)
    guard.flush()
    return inner.getvalue()


@pytest.mark.parametrize("writes, seen", [
    (["::error::x\n"], "%3A:error::x\n"),
    (["ok\n  ::warning::x\n"], "ok\n  %3A:warning::x\n"),
    (["ok\r::add-mask::x"], "ok\r%3A:add-mask::x"),
    ([":", ":set-output name=a::b\n"], "%3A:set-output name=a::b\n"),
    (["  ", ":", ":x"], "  %3A:x"),
    (["a::b\n", ":c\n", ":\n"], "a::b\n:c\n:\n"),
    (["PASS max_us 7 :: fine\n"], "PASS max_us 7 :: fine\n"),
])
def test_no_line_written_through_the_guard_starts_with_two_colons(writes: list[str],
                                                                   seen: str) -> None:
    out = guarded(*writes)
    assert out == seen
    assert not [line for line in out.splitlines() if line.lstrip().startswith("::")]
