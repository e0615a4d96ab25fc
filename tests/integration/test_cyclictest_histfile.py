"""The harness hands cyclictest -N ``--histfile=/dev/null`` (rtgate.cyclictest.command): safe as
root only because cyclictest writes the histfile in place and never renames over it.

rt-tests' source, print_hist() in src/cyclictest/cyclictest.c, the only place the histfile is
opened:

    if (use_histfile) {
        fd = fopen(histfile, "w");

at line 1420 of tag v2.4 (commit ca4a6293da23ad0fd708ea1fecb2d465a9ea6093, the Debian 2.4-1
package installed here, `cyclictest V 2.40`), line 1368 of v2.0 and line 1506 of v2.8 and v2.10
(git://git.kernel.org/pub/scm/utils/rt-tests/rt-tests.git, read from a mirror of it). fopen's
"w" is open(O_WRONLY|O_CREAT|O_TRUNC) on the path itself: a character device is written to,
never replaced. The file has no rename() at all; its unlink() calls are -F's FIFO and the
--rstat shared memory, neither of which the harness passes.

The tests run the installed cyclictest with the harness's own command line, the /dev/null swapped
for a device node of the test's own (the same major/minor, in its tmp directory: should the
rule ever break, the host's /dev/null is not the one destroyed), and for a hard link, whose
second name sees the histogram only if the first was written in place.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from devnodes import NODEV, opens_devices

from rtgate.cyclictest.command import CyclictestSpec, build
from rtgate.cyclictest.version import detect

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(shutil.which("cyclictest") is None,
                                 reason="cyclictest not installed"),
              pytest.mark.skipif(os.geteuid() != 0, reason="mknod and -p99 need root")]

DEV_NULL = "--histfile=/dev/null"


def harness_argv(tmp_path: Path) -> list[str]:
    """The harness's -N command line, 100 cycles: the histfile is written once, at the end."""
    spec = CyclictestSpec(args=["-m", "-p99", "-i1000", "-t1", "-l100"], histogram_us=100)
    cmd = build(spec, detect(), duration_s=5, outdir=str(tmp_path), source=Path("x.yml"))
    assert cmd.nsecs and DEV_NULL in cmd.argv and cmd.histfile is None
    # -v's stream is not what is tested here: without the reducer it would fill stdout.
    return [a for a in cmd.argv if a not in ("-v", "--verbose")]


def run_with_histfile(tmp_path: Path, histfile: Path) -> None:
    argv = [f"--histfile={histfile}" if a == DEV_NULL else a for a in harness_argv(tmp_path)]
    subprocess.run(argv, check=True, timeout=60, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


def test_a_character_device_as_the_histfile_stays_the_device(tmp_path: Path) -> None:
    if not opens_devices(tmp_path):
        pytest.skip(NODEV)
    null = os.stat("/dev/null")
    node = tmp_path / "null"
    os.mknod(node, 0o666 | stat.S_IFCHR, null.st_rdev)
    before = os.stat(node)
    run_with_histfile(tmp_path, node)
    after = os.stat(node)
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == null.st_rdev
    assert after.st_ino == before.st_ino
    # The run itself happened: its --json is beside it.
    assert (tmp_path / "cyclictest.json").stat().st_size > 0


def test_the_histfile_is_written_in_place(tmp_path: Path) -> None:
    hist = tmp_path / "cyclictest.hist"
    hist.write_text("old\n")
    other = tmp_path / "second-name"
    os.link(hist, other)
    inode = hist.stat().st_ino
    run_with_histfile(tmp_path, hist)
    assert hist.stat().st_ino == inode and hist.stat().st_nlink == 2
    # Truncated and rewritten through the same inode: the other name sees the histogram.
    text = other.read_text()
    assert text.startswith("# Histogram") and "old" not in text
