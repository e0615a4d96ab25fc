"""The hostile-input corpus: every command that takes a file, handed what a pull request, an
artifact or a user could hand it, in this process (the ``rtgate_cli`` fixture) under a hang
guard. A file a user hands over is exit 2 with one line naming it; a guest's or a LAVA server's
reply is exit 3 (InfraError) naming the field; never a hang, a traceback or a MemoryError.

What could exhaust memory were it read (``/dev/zero``, sparse files of gigabytes, archive
bombs run through the CLI) runs as a process under a 1 GiB address-space limit:
tests/integration/test_hostile_limits.py. docs/security.md counts both files' cases.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import json
import os
import queue
import signal
import tarfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from clirun import RunCli
from fakekernel import built_kernel

from rtgate.board.lava import client as lava_client
from rtgate.board.lava.client import Lava, LavaError
from rtgate.board.lava.driver import payload as lava_payload
from rtgate.board.qemu import guestenv
from rtgate.board.qemu.console import SerialConsole
from rtgate.board.qemu.guestenv import GuestFacts, board_records, unpack
from rtgate.errors import Exit, InfraError
from rtgate.result import Percentile
from rtgate.stats.histogram import Sparse, percentile

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
THRESHOLDS = ROOT / "thresholds.yml"
HISTOGRAM_RESULT = DATA / "gate" / "gate-local" / "running" / "idle" / "result.json"
PAPER = DATA / "results" / "paper-rpi5-rt-all-in.result.json"
SERIES = DATA / "bisect" / "series"
HANG_S = 20


@contextmanager
def hang_guard(seconds: int = HANG_S) -> Iterator[None]:
    """A blocked open or read (a FIFO) is interrupted after ``seconds``: the test fails on the
    exit code instead of hanging the suite."""
    def fire(signum: int, frame: object) -> None:
        raise TimeoutError(f"hung for {seconds} s")
    previous = signal.signal(signal.SIGALRM, fire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


# --- files that are not regular files, at every place a command reads one -------------------

def _fifo(path: Path) -> str:
    os.mkfifo(path)
    return "a FIFO, not a regular file"


def _directory(path: Path) -> str:
    path.mkdir()
    return "a directory, not a regular file"


def _device(path: Path) -> str:
    path.symlink_to("/dev/null")
    return "a character device, not a regular file"


def _link_to_fifo(path: Path) -> str:
    os.mkfifo(path.with_name(path.name + ".fifo"))
    path.symlink_to(path.name + ".fifo")
    return "a FIFO, not a regular file"


IRREGULAR: dict[str, Callable[[Path], str]] = {
    "fifo": _fifo, "directory": _directory, "device": _device, "link-to-fifo": _link_to_fifo}


def _kernels(tmp: Path) -> Path:
    (tmp / "k" / "stock").mkdir(parents=True)
    return tmp / "k"


# Each slot: where the hostile file goes (under tmp) and the command that reads it there.
Slot = Callable[[Path], tuple[Path, list[str | Path]]]

SLOTS: dict[str, Slot] = {
    "parse": lambda t: (t / "raw.txt", ["parse", t / "raw.txt", "-o", t / "out.json"]),
    "check-result": lambda t: (t / "r.json", ["check", t / "r.json", "--thresholds", THRESHOLDS,
                                              "--junit", t / "j.xml"]),
    "check-thresholds": lambda t: (t / "th.yml", ["check", PAPER, "--thresholds", t / "th.yml",
                                                  "--junit", t / "j.xml"]),
    "thresholds-diff-old": lambda t: (t / "old.yml", ["thresholds", "diff", t / "old.yml",
                                                      THRESHOLDS]),
    "thresholds-diff-new": lambda t: (t / "new.yml", ["thresholds", "diff", THRESHOLDS,
                                                      t / "new.yml"]),
    "compare": lambda t: (t / "b.json", ["compare", t / "b.json", HISTOGRAM_RESULT, "--json",
                                         t / "c.json"]),
    "report": lambda t: ((t / "run").mkdir() or t / "run" / "r.result.json", [
        "report", t / "run" / "r.result.json", "--out", t / "site"]),
    "report-history": lambda t: ((t / "h").mkdir() or t / "h" / "index.jsonl", [
        "report", HISTOGRAM_RESULT, "--history", t / "h", "--out", t / "site"]),
    "publish-context": lambda t: (t / "ctx" / "context.json", [
        "publish", "--context", (t / "ctx").mkdir() or t / "ctx", "--markdown", t / "c.md"]),
    # A build's directory as `rtgate kernel build` leaves it: the hostile file is the only problem.
    "ab-thresholds": lambda t: (t / "th.yml", [
        "ab", "--board", "qemu-arm64", "--base", built_kernel(t / "k" / "stock").parent,
        "--cand", t / "k", "--flavors", "stock", "--scenarios", "idle", "--max-time", "1m",
        "--round-duration", "10s", "--out", t / "ab", "--thresholds", t / "th.yml"]),
    "ab-kernel-metadata": lambda t: (_kernels(t) / "stock" / "metadata.json", [
        "ab", "--board", "qemu-arm64", "--base", t / "k", "--cand", t / "k", "--flavors",
        "stock", "--scenarios", "idle", "--max-time", "1m", "--round-duration", "10s",
        "--out", t / "ab"]),
    "bisect-series": lambda t: (t / "series", [
        "bisect", "--board", "qemu-arm64", "--flavor", "stock", "--series", t / "series",
        "--scenarios", "idle", "--round-duration", "10s", "--step-time", "5m", "--out",
        t / "b"]),
    "bisect-state": lambda t: ((t / "b").mkdir() or t / "b" / "state.json", [
        "bisect", "--board", "qemu-arm64", "--flavor", "stock", "--series", SERIES,
        "--scenarios", "idle", "--round-duration", "10s", "--step-time", "5m",
        "--planned-rounds", "8", "--out", t / "b"]),
    # One static kernel: the sweep records its point as infrastructure and goes on.
    "sweep-kernel-metadata": lambda t: (
        (t / "k" / "none").mkdir(parents=True) or t / "k" / "none" / "metadata.json", [
            "sweep", "--board", "qemu-arm64", "--kernels", t / "k", "--duration", "10s",
            "--out", t / "sw", "--models", "none", "--static"]),
}


@pytest.mark.parametrize("kind", IRREGULAR)
@pytest.mark.parametrize("slot", SLOTS)
def test_a_file_that_is_no_regular_file_is_refused_at_once(
        rtgate_cli: RunCli, tmp_path: Path, slot: str, kind: str) -> None:
    path, argv = SLOTS[slot](tmp_path)
    said = IRREGULAR[kind](path)
    if slot in ("compare", "report") and kind == "directory":
        said = "no result.json below this directory"  # a directory of runs is their input
    with hang_guard():
        proc = rtgate_cli(*argv)
    # A kernel directory is a build's output, untrusted data: unusable is incomplete.
    code = Exit.INCOMPLETE if slot.endswith("kernel-metadata") else Exit.INPUT
    assert proc.returncode == code, proc.stderr
    if slot == "sweep-kernel-metadata":
        # The sweep's own report of the point, in its table (stderr may wrap).
        assert f"{path}: not a kernel build: {said}" in proc.stdout, proc.stdout
        return
    assert str(path) in proc.stderr and said in proc.stderr, proc.stderr
    assert len(proc.stderr.splitlines()) == 1, proc.stderr


@pytest.mark.parametrize("kind", IRREGULAR)
def test_publish_judges_an_artifact_whose_result_is_no_regular_file_as_an_input_error(
        rtgate_cli: RunCli, tmp_path: Path, kind: str) -> None:
    result = tmp_path / "g" / "gate-rpi5" / "rt" / "all-in" / "result.json"
    result.parent.mkdir(parents=True)
    said = IRREGULAR[kind](result)
    with hang_guard():
        proc = rtgate_cli("publish", tmp_path / "g" / "gate-rpi5", "--thresholds", THRESHOLDS,
                          "--boards", ROOT / "bench" / "boards", "--markdown", tmp_path / "c.md",
                          "--outcome", tmp_path / "o.json")
    assert proc.returncode == Exit.INPUT, proc.stderr
    assert json.loads((tmp_path / "o.json").read_text())["outcome"] == "input"
    if result.is_symlink():  # the publisher follows no link an artifact holds
        said = "a symbolic link"
    assert f"{result}: {said}" in (tmp_path / "c.md").read_text()


# --- regular files whose content no document of their kind holds ----------------------------

def _result(**histogram: Any) -> str:
    data = json.loads(HISTOGRAM_RESULT.read_text())
    data["threads"][0]["histogram"].update(histogram)
    return json.dumps(data)


def _buckets_plus(*pairs: list[int]) -> list[list[int]]:
    data = json.loads(HISTOGRAM_RESULT.read_text())
    return [*data["threads"][0]["histogram"]["buckets"], *pairs]


RESULT_CONTENT = {
    "invalid-utf8": (b'{"schema": "rtgate/result/v2", "run_id": "\xff\xfe"}', "not UTF-8 text"),
    "a-list": (b"[1, 2, 3]", "not an rtgate result (schema 'list'"),
    "5000-digits": (b'{"schema": "rtgate/result/v2", "n": ' + b"9" * 5000 + b"}",
                    "holds an integer of more than"),
    "truncated": (HISTOGRAM_RESULT.read_bytes()[:200], "not a JSON document"),
    "empty": (b"", "not a JSON document"),
    "limit-2e9": (_result(limit_us=2_000_000_000).encode(),
                  "histogram.limit_us: Input should be less than or equal to 600000000"),
    "bucket-1e12": (_result(limit_us=10**12 + 1,
                            buckets=_buckets_plus([10**12, 1])).encode(),
                    "histogram.limit_us: Input should be less than or equal to 600000000"),
    "bucket-at-limit": (_result(buckets=_buckets_plus([20000, 1])).encode(),
                        "a bin at 20000 µs, at or above the histogram's limit"),
    "bucket-negative": (_result(buckets=[[-5, 1]]).encode(), "histogram.buckets.0.0"),
    "buckets-descending": (_result(buckets=[[9, 1], [8, 1]]).encode(),
                           "bins not ascending: 8 µs after 9 µs"),
    "bucket-width-2e6": (_result(bucket_us=2_000_000).encode(), "histogram.bucket_us"),
}


@pytest.mark.parametrize("slot", ["check-result", "compare"])
@pytest.mark.parametrize("case", RESULT_CONTENT)
def test_a_result_no_result_may_be_is_exit_2(rtgate_cli: RunCli, tmp_path: Path, slot: str,
                                             case: str) -> None:
    path, argv = SLOTS[slot](tmp_path)
    content, said = RESULT_CONTENT[case]
    path.write_bytes(content)
    with hang_guard():
        proc = rtgate_cli(*argv)
    assert proc.returncode == Exit.INPUT, proc.stderr
    assert str(path) in proc.stderr and said in proc.stderr, proc.stderr


@pytest.mark.parametrize("case", ["limit-2e9", "bucket-1e12", "bucket-at-limit"])
def test_report_refuses_a_histogram_out_of_bounds_without_drawing_it(
        rtgate_cli: RunCli, tmp_path: Path, case: str) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "result.json").write_bytes(RESULT_CONTENT[case][0])
    with hang_guard():
        proc = rtgate_cli("report", run / "result.json", "--out", tmp_path / "site")
    assert proc.returncode == Exit.INPUT, proc.stderr
    assert RESULT_CONTENT[case][1] in proc.stderr


DOCUMENT_CONTENT = {
    "a-list": (b"[1, 2]", "(schema 'list'"),
    "invalid-utf8": (b"\xff\xfe{}", "not UTF-8 text"),
    "5000-digits": (b'{"schema": 1' + b"0" * 5000 + b"}", "holds an integer of more than"),
    "nan": (b'{"schema": NaN}', "not a finite number"),
}


@pytest.mark.parametrize("case", DOCUMENT_CONTENT)
def test_a_hostile_bisect_state_is_exit_2(rtgate_cli: RunCli, tmp_path: Path,
                                          case: str) -> None:
    path, argv = SLOTS["bisect-state"](tmp_path)
    content, said = DOCUMENT_CONTENT[case]
    path.write_bytes(content)
    with hang_guard():
        proc = rtgate_cli(*argv)
    assert proc.returncode == Exit.INPUT, proc.stderr
    assert proc.stderr.startswith(f"rtgate: {path}: ") and said in proc.stderr, proc.stderr


@pytest.mark.parametrize("case", ["invalid-utf8", "5000-digits"])
def test_a_hostile_publish_context_is_exit_2(rtgate_cli: RunCli, tmp_path: Path,
                                             case: str) -> None:
    path, argv = SLOTS["publish-context"](tmp_path)
    path.write_bytes(DOCUMENT_CONTENT[case][0])
    with hang_guard():
        proc = rtgate_cli(*argv)
    assert proc.returncode == Exit.INPUT, proc.stderr
    assert proc.stderr.startswith(f"rtgate: {path}: "), proc.stderr


@pytest.mark.parametrize("slot", ["check-thresholds", "thresholds-diff-new", "ab-thresholds"])
@pytest.mark.parametrize("content, said", [
    (b"schema: rtgate/thresholds/v2\nbudgets: []\n# \xff\n", "not UTF-8 text"),
    (b"- 1\n- 2\n", ""),
    (b"schema: rtgate/thresholds/v2\0\n", "not valid YAML: unacceptable character #x0000"),
])
def test_hostile_thresholds_are_exit_2(rtgate_cli: RunCli, tmp_path: Path, slot: str,
                                       content: bytes, said: str) -> None:
    path, argv = SLOTS[slot](tmp_path)
    path.write_bytes(content)
    with hang_guard():
        proc = rtgate_cli(*argv)
    assert proc.returncode == Exit.INPUT, proc.stderr
    assert str(path) in proc.stderr and said in proc.stderr, proc.stderr


def test_a_series_in_no_text_is_exit_2(rtgate_cli: RunCli, tmp_path: Path) -> None:
    path, argv = SLOTS["bisect-series"](tmp_path)
    path.write_bytes(b"0001-a.patch\n\xc3\x28\n")
    with hang_guard():
        proc = rtgate_cli(*argv)
    assert proc.returncode == Exit.INPUT, proc.stderr
    assert proc.stderr == f"rtgate: {path}: not UTF-8 text: invalid continuation byte at byte 13\n"


def test_a_verbose_log_with_a_latency_of_eleven_days_is_exit_2(rtgate_cli: RunCli,
                                                              tmp_path: Path) -> None:
    lines = (DATA / "cyclictest" / "verbose.txt").read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if line.split()[:2] == ["0:", "0:"])
    lines[at] = "       0:       0:      1000000000000"
    path, argv = SLOTS["parse"](tmp_path)
    path.write_text("\n".join(lines) + "\n")
    with hang_guard():
        proc = rtgate_cli(*argv)
    assert proc.returncode == Exit.INPUT, proc.stderr
    assert proc.stderr.startswith(f"rtgate: {path}: holds what no result may: limit_us")
    assert not (tmp_path / "out.json").exists()


# --- what rtgate prints in CI cannot become a workflow command -------------------------------

@pytest.mark.parametrize("field", ["run_id", "scenario"])
def test_check_prints_a_hostile_value_on_its_own_line_escaped(
        rtgate_cli: RunCli, tmp_path: Path, field: str) -> None:
    data = json.loads(PAPER.read_text())
    data[field] = "x\n::error::forged %0A\r::add-mask::y"
    (tmp_path / "r.json").write_text(json.dumps(data))
    with hang_guard():
        proc = rtgate_cli("check", tmp_path / "r.json", "--thresholds", THRESHOLDS,
                          "--junit", tmp_path / "j.xml", "--allow-unbudgeted")
    assert proc.returncode in (Exit.OK, Exit.BUDGET, Exit.INCOMPLETE), proc.stderr
    out = proc.stdout + proc.stderr
    assert "x%0A:%3Aerror:%3Aforged %250A%0D:%3Aadd-mask:%3Ay" in out
    assert not [line for line in out.splitlines() if line.lstrip().startswith("::")]


def test_no_line_rtgate_prints_starts_a_workflow_command(rtgate_cli: RunCli,
                                                         tmp_path: Path) -> None:
    """Whatever print missed the escaping: a reason in a partial result, printed by check."""
    data = json.loads(PAPER.read_text())
    data["status"], data["reasons"] = "partial", ["lost\n  ::set-output name=x::y"]
    (tmp_path / "r.json").write_text(json.dumps(data))
    proc = rtgate_cli("check", tmp_path / "r.json", "--thresholds", THRESHOLDS,
                      "--junit", tmp_path / "j.xml")
    assert proc.returncode == Exit.INCOMPLETE, proc.stderr
    out = proc.stdout + proc.stderr
    assert not [line for line in out.splitlines() if line.lstrip().startswith("::")], out


# --- the guest's replies: capped and typed, exit 3 naming the field --------------------------

def _tgz(files: dict[str, bytes], *, sizes: dict[str, int] | None = None) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _facts(nproc: bytes) -> GuestFacts:
    return GuestFacts.from_tar(_tgz({"meta/nproc": nproc}))


@pytest.mark.parametrize("nproc", [b"four", b"0", b"-1", b"1e9", b"\xff", b"99999999999999"])
def test_a_guest_nproc_that_is_no_cpu_count_is_exit_3_naming_it(nproc: bytes) -> None:
    with pytest.raises(InfraError, match="the guest's meta/nproc is .*, not a CPU count") as exc:
        _ = _facts(nproc).cpus
    assert exc.value.code == Exit.INCOMPLETE


def test_a_guest_nproc_in_words_is_read() -> None:
    assert _facts(b"4\n").cpus == 4


@pytest.mark.parametrize("reader", ["facts", "unpack"])
@pytest.mark.parametrize("damage", ["truncated", "not-gzip", "corrupt-deflate", "empty"])
def test_a_damaged_guest_archive_is_exit_3(tmp_path: Path, reader: str, damage: str) -> None:
    good = _tgz({"meta/nproc": b"4\n", "raw/x": bytes(range(256)) * 40})
    middle = len(good) // 2
    data = {"truncated": good[:middle], "not-gzip": b"RTGATE" * 10,
            "corrupt-deflate": good[:20] + b"\xff" * 64 + good[84:], "empty": b""}[damage]
    with pytest.raises(InfraError, match="not a readable archive"):
        if reader == "facts":
            GuestFacts.from_tar(data)
        else:
            unpack(data, tmp_path)


@pytest.mark.parametrize("reader", ["facts", "unpack"])
def test_a_guest_archive_bomb_stops_at_the_cap(tmp_path: Path, reader: str,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    # 8 MiB of zeros (over the 4 MiB facts cap; the results cap made 1 MiB here) gzip to
    # ~8 KiB: refused from the headers, nothing written.
    monkeypatch.setattr(guestenv, "RESULTS_CAP", 1 << 20)
    bomb = _tgz({"meta/a": bytes(8 << 20)})
    assert len(bomb) < 64 << 10
    with pytest.raises(InfraError, match="would unpack to more than"):
        if reader == "facts":
            GuestFacts.from_tar(bomb)
        else:
            unpack(bomb, tmp_path)
    assert not (tmp_path / "meta" / "a").exists()


def test_a_guest_archive_of_too_many_files_is_refused(tmp_path: Path) -> None:
    many = _tgz({f"raw/{i}": b"" for i in range(guestenv.MEMBERS_CAP + 1)})
    with pytest.raises(InfraError, match=f"{guestenv.MEMBERS_CAP} files"):
        unpack(many, tmp_path)


@pytest.mark.parametrize("reader", ["facts", "unpack"])
def test_a_guest_reply_over_the_wire_cap_is_refused_unread(tmp_path: Path, reader: str,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(guestenv, "WIRE_CAP", 1000)
    with pytest.raises(InfraError, match="compressed, more than"):
        if reader == "facts":
            GuestFacts.from_tar(os.urandom(2000))
        else:
            unpack(os.urandom(2000), tmp_path)


@pytest.mark.parametrize("early, start", [
    ("oops 12.5", "10.0"), ("0 twelve", "10.0"), ("0 12.5", "nan"), ("0 inf", "1.0")])
def test_a_load_note_that_is_no_number_is_exit_3_naming_the_file(
        tmp_path: Path, early: str, start: str) -> None:
    (tmp_path / "stress.early").write_text(early)
    (tmp_path / "stress.start").write_text(start)

    class Load:
        name, argv = "stress", ["stress-ng"]

    class Plan:
        loads = [Load()]

    with pytest.raises(InfraError, match="not a number") as exc:
        board_records(Plan(), tmp_path)  # type: ignore[arg-type]
    assert exc.value.path is not None and exc.value.path.startswith(str(tmp_path / "stress."))


def _console(tmp_path: Path, lines: list[str]) -> SerialConsole:
    console = SerialConsole.__new__(SerialConsole)
    console.log = tmp_path / "console.log"
    console._lines = queue.Queue()  # noqa: SLF001 - fed as the reader thread would
    for line in lines:
        console._lines.put(line)  # noqa: SLF001
    return console


def _block(data: bytes) -> list[str]:
    encoded = base64.b64encode(data).decode()
    return [*(encoded[i:i + 76] for i in range(0, len(encoded), 76)),
            f"RTGATE-END {hashlib.sha256(data).hexdigest()}"]


def test_a_console_reply_over_its_cap_is_refused_as_it_arrives(tmp_path: Path) -> None:
    console = _console(tmp_path, _block(os.urandom(10_000)))
    with pytest.raises(InfraError, match="the guest's reply exceeds"):
        console.payload(deadline=float("inf"), cap=4096)


def test_a_console_reply_within_its_cap_arrives(tmp_path: Path) -> None:
    data = os.urandom(3000)
    assert _console(tmp_path, _block(data)).payload(deadline=float("inf"), cap=4096) == data


def test_a_console_reply_in_no_base64_is_exit_3(tmp_path: Path) -> None:
    console = _console(tmp_path, ["abc", "RTGATE-END 00"])
    with pytest.raises(InfraError, match="not base64"):
        console.payload(deadline=float("inf"), cap=4096)


# --- LAVA's replies ---------------------------------------------------------------------------

class Canned(Lava):
    """The REST client reading canned replies instead of a server."""

    def __init__(self, replies: dict[str, bytes]) -> None:
        self.base, self.token, self.replies = "http://lava.invalid", "t", replies

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> bytes:
        return self.replies[path.split("?")[0]]


@pytest.mark.parametrize("log, field", [
    (b"- just a string\n", "log entry 0 is a str"),
    (b"- [1, 2]\n", "log entry 0 is a list"),
    (b"- {dt: '2026', lvl: 7, msg: x}\n", "field 'lvl' is int"),
    (b"{dt: '2026', lvl: target}\n", "is a dict, not a list of entries"),
    (b"- {a: [b\n", "is not YAML"),
])
def test_a_lava_log_of_no_entries_is_exit_3_naming_the_entry(log: bytes, field: str) -> None:
    with pytest.raises(LavaError, match=field) as exc:
        Canned({"jobs/7/logs/": log}).log(7)
    assert exc.value.code == Exit.INCOMPLETE


@pytest.mark.parametrize("reply, field", [
    (b'{"health": "Complete"}', "field 'state' is NoneType"),
    (b'{"state": 3, "health": "Complete"}', "field 'state' is int"),
    (b'["Finished"]', "field 'state' is list"),
    (b'{"state": "Finished", "health": "Complete", "actual_device": 5}', "'actual_device'"),
    (b"<html>502</html>", "not a JSON reply"),
    (b'{"state": ' + b"1" * 5000 + b"}", "not a JSON reply"),
])
def test_a_lava_job_reply_of_the_wrong_shape_is_exit_3_naming_the_field(
        reply: bytes, field: str) -> None:
    with pytest.raises(LavaError, match=field):
        Canned({"jobs/7/": reply}).job(7)


@pytest.mark.parametrize("reply", [b'{"job_ids": []}', b'{"job_ids": ["7"]}', b'{}', b"[]"])
def test_a_lava_submission_reply_without_a_job_id_is_exit_3(reply: bytes) -> None:
    with pytest.raises(LavaError, match="job_ids"):
        Canned({"jobs/": reply}).submit("job")


def test_a_lava_listing_of_non_objects_is_exit_3() -> None:
    with pytest.raises(LavaError, match="results"):
        Canned({"tags/": b'{"results": [1], "next": null}'}).listing("tags")


class Endless(Lava):
    """A server whose listing always has a next page."""

    def __init__(self) -> None:
        self.base, self.token, self.pages = "http://lava.invalid", "t", 0

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> bytes:
        self.pages += 1
        return b'{"results": [{"id": 1, "name": "x"}], "next": "http://lava.invalid/tags/"}'


def test_a_lava_listing_without_end_is_refused_at_its_cap(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lava_client, "LISTING_CAP", 250)
    server = Endless()
    with hang_guard(), pytest.raises(LavaError, match="more than 250 entries") as exc:
        server.listing("tags")
    assert exc.value.code == Exit.INCOMPLETE and server.pages == 250


def test_a_lava_reply_over_the_cap_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    class Response(io.BytesIO):
        def __enter__(self) -> Response:
            return self

    monkeypatch.setattr(lava_client, "REPLY_CAP", 1000)
    monkeypatch.setattr(lava_client.urllib.request, "urlopen",
                        lambda req, timeout: Response(gzip.compress(b"") + bytes(5000)))
    with pytest.raises(LavaError, match="a reply of more than"):
        Lava.call(Canned({}), "GET", "jobs/7/")


@pytest.mark.parametrize("lines, said", [
    (["RTGATE-BEGIN", "abc", "RTGATE-END 00"], "not base64"),
    (["RTGATE-BEGIN", "no end"], "no complete results block"),
])
def test_a_lava_results_block_that_is_no_block_is_exit_3(tmp_path: Path, lines: list[str],
                                                         said: str) -> None:
    with pytest.raises(InfraError, match=said):
        lava_payload(lines, tmp_path / "lava-job.log")


def test_a_lava_results_block_over_the_cap_is_refused(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("rtgate.board.lava.driver.WIRE_CAP", 1000)
    with pytest.raises(InfraError, match="exceeds"):
        lava_payload(["RTGATE-BEGIN", *_block(os.urandom(4000))], tmp_path / "lava-job.log")


# --- within the bounds, statistics cost by non-empty bins, never by µs of range --------------

def test_compare_of_results_with_a_bin_at_the_range_bound_finishes(rtgate_cli: RunCli,
                                                                   tmp_path: Path) -> None:
    far = _result(limit_us=600_000_000, buckets=_buckets_plus([599_999_999, 1]))
    (tmp_path / "a.json").write_text(far)
    (tmp_path / "b.json").write_text(far.replace('"run_id": "', '"run_id": "b-', 1))
    with hang_guard():
        proc = rtgate_cli("compare", tmp_path / "a.json", tmp_path / "b.json", "--json",
                          tmp_path / "c.json")
    assert proc.returncode in (Exit.OK, Exit.UNDECIDED), proc.stderr
    assert json.loads((tmp_path / "c.json").read_text())


def test_percentiles_of_a_histogram_spanning_the_range_bound_are_exact() -> None:
    hist = Sparse.from_pairs([(3, 999), (599_999_999, 1)])
    assert percentile(hist, 0, 600_000_000, 99.9) == Percentile(value_us=3)
    assert percentile(hist, 0, 600_000_000, 99.99) == Percentile(value_us=599_999_999)
    assert hist.values.nbytes == 16  # two bins, whatever their range
