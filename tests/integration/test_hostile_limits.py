"""The hostile-input corpus's cases that would exhaust memory were the file read: each runs
`python -m rtgate` as a process under a 1 GiB address-space limit and a 20 s timeout, and must
end in exit 2 with one line naming the file. (The rest of the corpus runs in-process:
tests/unit/test_hostile_corpus.py.)"""

from __future__ import annotations

import resource
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
THRESHOLDS = ROOT / "thresholds.yml"
PAPER = DATA / "results" / "paper-rpi5-rt-all-in.result.json"
RESULT = DATA / "gate" / "gate-local" / "running" / "idle" / "result.json"
GiB = 1 << 30


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (GiB, GiB))


def rtgate(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rtgate", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=20, preexec_fn=_limits)


def _sparse(path: Path, head: bytes, size: int) -> Path:
    """A file of ``size`` bytes that takes no disk: ``head``, then a hole."""
    with path.open("wb") as fh:
        fh.write(head)
        fh.truncate(size)
    return path


Slot = Callable[[Path, Path], list[str | Path]]
SLOTS: dict[str, Slot] = {
    "parse": lambda t, p: ["parse", p, "-o", t / "out.json"],
    "check-result": lambda t, p: ["check", p, "--thresholds", THRESHOLDS, "--junit", t / "j.xml"],
    "check-thresholds": lambda t, p: ["check", PAPER, "--thresholds", p, "--junit", t / "j.xml"],
    "thresholds-diff": lambda t, p: ["thresholds", "diff", THRESHOLDS, p],
    "compare": lambda t, p: ["compare", RESULT, p, "--json", t / "c.json"],
    "report": lambda t, p: ["report", p, "--out", t / "site"],
    "bisect-series": lambda t, p: [
        "bisect", "--board", "qemu-arm64", "--flavor", "stock", "--series", p, "--scenarios",
        "idle", "--round-duration", "10s", "--step-time", "5m", "--out", t / "b"],
}


@pytest.mark.parametrize("slot", SLOTS)
def test_dev_zero_is_refused_not_read(tmp_path: Path, slot: str) -> None:
    proc = rtgate(*SLOTS[slot](tmp_path, Path("/dev/zero")))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("rtgate: /dev/zero: a character device, not a regular file")


@pytest.mark.parametrize("slot, head, size, said", [
    ("check-result", b'{"schema": "rtgate/result/v2"', 2 * GiB,
     "more than 128 MiB, larger than a result may be"),
    ("compare", b"{", 200 << 20, "more than 128 MiB, larger than a result may be"),
    ("report", b"{", 200 << 20, "more than 128 MiB, larger than a result may be"),
    ("check-thresholds", b"schema: rtgate/thresholds/v2\n", 2 * GiB,
     "more than 1 MiB, larger than a thresholds file may be"),
    ("thresholds-diff", b"schema: rtgate/thresholds/v2\n", 4 << 20,
     "more than 1 MiB, larger than a thresholds file may be"),
    ("bisect-series", b"0001-a.patch\n", 2 * GiB, "more than 1 MiB, larger than a patch series"),
    ("parse", b"# RTLA timerlat histogram\n# Time unit is microseconds (us)\n", 2 * GiB,
     "more than 256 MiB, larger than an rtla output may be"),
])
def test_a_file_over_the_cap_for_its_kind_is_refused_unread(
        tmp_path: Path, slot: str, head: bytes, size: int, said: str) -> None:
    path = _sparse(tmp_path / "big", head, size)
    proc = rtgate(*SLOTS[slot](tmp_path, path))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(f"rtgate: {path}: {said}"), proc.stderr


@pytest.mark.parametrize("slot", ["check-result", "check-thresholds", "bisect-series"])
def test_a_file_that_claims_no_size_is_read_only_to_its_cap(tmp_path: Path, slot: str) -> None:
    # /proc's files are regular with a size of 0: read as text, they are refused as what they
    # are not, never read without end. /proc/self/environ stands for them all.
    proc = rtgate(*SLOTS[slot](tmp_path, Path("/proc/self/environ")))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("rtgate: /proc/self/environ: "), proc.stderr
    assert len(proc.stderr.splitlines()) == 1, proc.stderr
