"""bench/firmware/rpi5.yml, the doctor's list of bad and too-old Pi 5 EEPROM releases: every
entry cites its source, and the doctor's row for a `vcgencmd` answer flags exactly what the
shipped list says (the doctor against the fake Pi: tests/integration/test_rpi5_ssh.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rtgate import paths
from rtgate.board import doctor
from rtgate.errors import InputError

SOURCE = "https://github.com/raspberrypi/rpi-eeprom/commit/"


def answer(date: str, time: str, commit: str, timestamp: int) -> str:
    """`vcgencmd bootloader_version` on a Pi 5 (rpi-eeprom's firmware-2712/versions.txt)."""
    return f"{date} {time}\nversion {commit} (release)\ntimestamp {timestamp}\n"


def test_every_shipped_entry_cites_the_eeprom_repository() -> None:
    shipped = doctor.known_versions("rpi5")
    assert shipped.schema_ == doctor.SCHEMA_ID
    assert shipped.known and shipped.minimum
    for entry in [*shipped.known, *shipped.minimum]:
        assert entry.source.startswith(SOURCE) and len(entry.source) == len(SOURCE) + 40, entry
    dates = [d for k in shipped.known for d in (k.version, k.from_, k.through) if d is not None]
    for d in [*dates, *(m.version for m in shipped.minimum)]:
        assert doctor.RELEASE_DATE.fullmatch(d), d
    # Every listed bad release is newer than every minimum: a minimum would flag it anyway.
    assert min(dates) > max(m.version for m in shipped.minimum)


@pytest.mark.parametrize(("said", "state", "words"), [
    (answer("2026/08/12", "00:06:56", "f5e89631", 1786493216), "ok", []),
    (answer("2025/05/08", "15:13:17", "69471177", 1746713597), "ok", []),
    # The default release at the rpi-eeprom commit read: inside the listed bad range.
    (answer("2026/05/26", "16:01:25", "086b83e3", 1779807685), "fail",
     ["ignores os_prefix when checking for the initramfs", "aa33b8dc"]),
    # The range's edges are bad releases themselves; the days either side are not listed.
    (answer("2025/12/08", "00:00:00", "00000000", 0), "fail", ["aa33b8dc"]),
    (answer("2026/06/17", "00:00:00", "00000000", 0), "fail", ["aa33b8dc"]),
    (answer("2025/12/07", "00:00:00", "00000000", 0), "ok", []),
    (answer("2026/06/18", "00:00:00", "00000000", 0), "ok", []),
    (answer("2024/11/12", "16:10:44", "4b019946", 1731427844), "fail",
     ["older than 2025/05/08", "e5a60491"]),
    # The first Pi 5 release: older than every minimum, each named.
    (answer("2023/09/13", "11:37:06", "9d494316", 1694601426), "fail",
     ["older than 2023/10/30", "older than 2024/01/22", "older than 2024/04/17",
      "older than 2024/04/18", "older than 2025/05/08"]),
    ("error=1 error_msg=\"Command not registered\"", "warn", ["check it by hand"]),
], ids=["2026-08-12", "2025-05-08", "2026-05-26", "first-in-range", "last-in-range",
        "day-before-range", "day-after-range", "2024-11-12", "2023-09-13", "no-date"])
def test_the_doctor_flags_what_the_shipped_list_says(said: str, state: str,
                                                     words: list[str]) -> None:
    row = doctor.judge_version("bootloader", said, doctor.known_versions("rpi5"))
    assert row.state == state, row
    for w in words:
        assert w in row.todo, (w, row.todo)
    assert ("update it" in row.todo) == (state == "fail")


def shipped_as(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> Path:
    """A data root whose bench/firmware/rpi5.yml is ``text``."""
    path = tmp_path / "bench" / "firmware" / "rpi5.yml"
    path.parent.mkdir(parents=True)
    path.write_text(text)
    monkeypatch.setattr(paths, "ROOT", tmp_path)
    return path


def refusal(path: Path) -> str:
    with pytest.raises(InputError) as caught:
        doctor.known_versions("rpi5")
    line = caught.value.oneline()
    assert str(path) in line and "\n" not in line, line
    return line


def test_a_minimum_that_is_not_a_release_date_is_refused_naming_the_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = shipped_as(tmp_path, monkeypatch,
                      "schema: rtgate/firmware-known/v2\nknown: []\nminimum:\n"
                      "  - {component: bootloader, version: '2025-05-08', why: x, "
                      "source: 'https://example.org/x'}\n")
    line = refusal(path)
    assert "minimum" in line and "version" in line, line


ENTRY = "component: bootloader, problem: x, source: 'https://example.org/x'"


@pytest.mark.parametrize(("form", "words"), [
    ("from: '2026/06/17', through: '2025/12/08'", ["from 2026/06/17 is after through 2025/12/08"]),
    ("version: '2026/05/26', from: '2025/12/08', through: '2026/06/17'",
     ["give version or a range (from and through), not both"]),
    ("from: '2025/12/08'", ["a range needs both from and through"]),
    ("", ["give version or a range (from and through) (got"]),
    ("from: '2025-12-08', through: '2026/06/17'", ["known.0.from", "2025-12-08"]),
], ids=["from-after-through", "both-forms", "from-alone", "neither-form", "not-a-date"])
def test_a_malformed_known_entry_is_refused_naming_the_file_and_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, form: str, words: list[str]) -> None:
    path = shipped_as(tmp_path, monkeypatch, "schema: rtgate/firmware-known/v2\nknown:\n"
                      f"  - {{{ENTRY}{', ' if form else ''}{form}}}\n")
    line = refusal(path)
    assert f"{path}:3" in line and "known.0" in line, line
    for w in words:
        assert w in line, (w, line)


def test_a_v1_file_reads_as_before_but_a_range_needs_v2(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = shipped_as(tmp_path, monkeypatch, "schema: rtgate/firmware-known/v1\nknown:\n"
                      f"  - {{{ENTRY}, version: '2026/05/26'}}\n")
    v1 = doctor.known_versions("rpi5")
    said = answer("2026/05/26", "16:01:25", "086b83e3", 1779807685)
    assert doctor.judge_version("bootloader", said, v1).state == "fail"
    path.write_text("schema: rtgate/firmware-known/v1\nknown:\n"
                    f"  - {{{ENTRY}, from: '2025/12/08', through: '2026/06/17'}}\n")
    line = refusal(path)
    assert f"{path}:3" in line and "known.0: a release range (from/through) needs " \
        "'schema: rtgate/firmware-known/v2'" in line, line


def test_a_range_without_a_date_to_compare_is_a_warning(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shipped_as(tmp_path, monkeypatch, "schema: rtgate/firmware-known/v2\nknown:\n"
               f"  - {{{ENTRY}, from: '2025/12/08', through: '2026/06/17'}}\n")
    row = doctor.judge_version("bootloader", "version 086b83e3 (release)",
                               doctor.known_versions("rpi5"))
    assert row.state == "warn" and "the bad range 2025/12/08 to 2026/06/17" in row.todo, row
