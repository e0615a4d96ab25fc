"""Cold build vs warm rebuild of qemu-arm64 rt after a one-line patch change.

Cold: an empty ccache (a fresh machine or CI runner without a cache). Warm: the same build with
a one-line change to kernel/sched/rt.c in a patch series, which is a new cache key (no artifact
cache hit), so only ccache makes it fast: every object but the changed file's comes from ccache.
Prints both times and their ratio, measured in this run. Takes one full kernel build plus a
rebuild: tens of minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import difflib
import os
import sys
import tempfile
import time
from pathlib import Path

from rtgate.kernel.build import build
from rtgate.kernel.cache import cache_root
from rtgate.kernel.source import materialize, resolve

TARGET = "kernel/sched/rt.c"


def series_with_one_line_change(tree: Path, workdir: Path, marker: str) -> Path:
    """A one-patch series that changes one comment line of TARGET (the code stays the same)."""
    lines = (tree / TARGET).read_text().splitlines(keepends=True)
    index = next(i for i, line in enumerate(lines) if line.startswith(" * "))
    changed = [*lines[:index], f" * rtgate bench {marker}\n", *lines[index + 1:]]
    patch = workdir / "0001-one-line.patch"
    patch.write_text("".join(difflib.unified_diff(lines, changed, f"a/{TARGET}",
                                                  f"b/{TARGET}")))
    series = workdir / "series"
    series.write_text(f"{patch.name}\n")
    return series


def timed_build(series: Path, out: Path) -> float:
    started = time.monotonic()
    result = build("qemu-arm64", "rt", series=series, out=out, progress=sys.stderr.isatty())
    assert not result.cache_hit, "a cache hit would measure a copy, not a build"
    return time.monotonic() - started


def main() -> int:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    with tempfile.TemporaryDirectory(prefix="rtgate-bench-kernel-") as tmp:
        work = Path(tmp)
        # A private cache: the cold build really starts from nothing, and the user's kernels
        # and ccache are neither used nor polluted.
        os.environ["RTGATE_CACHE"] = str(work / "cache")
        tree = materialize(resolve("debian:linux-source-6.12"), cache_root())
        (work / "a").mkdir()
        (work / "b").mkdir()
        # The marker differs per run so that nothing outside this run can be a cache hit.
        cold = timed_build(series_with_one_line_change(tree, work / "a", f"{time.time()} a"),
                           work / "out-a")
        warm = timed_build(series_with_one_line_change(tree, work / "b", f"{time.time()} b"),
                           work / "out-b")
    print(f"kernel_rebuild qemu-arm64 rt: cold {cold:.0f} s, warm (ccache, one-line patch "
          f"change) {warm:.0f} s, cold/warm ratio {cold / warm:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
