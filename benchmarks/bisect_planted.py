"""Benchmark: `rtgate bisect` finds and confirms the planted latency in an 8-patch series.

tests/data/bisect/series on qemu-arm64 (stock, idle): seven harmless patches and, at position 5,
the planted latency switched on by default (tests/data/bisect/README.md), judged with
tests/data/bisect/thresholds.yml and the end-to-end bisect's settings (a step's margin
--min-effect-pct 900, 12 planned rounds a side, docs/ab-bisect.md), through the real CLI.
Every variant is really built: the run gets a private kernel-artifact cache (so no variant is a
cache hit from an earlier run) that shares the user's ccache and source trees (so a variant
rebuilds only what its patches change, as a maintainer's bisect would).

Printed: the culprit and whether it was confirmed, the measurements made against the issue's
bound (ceil(log2 8) search steps plus the confirmation), the wall time, and each variant's build
time. Takes 15-25 minutes on 2 cores under TCG.

    python benchmarks/bisect_planted.py [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rtgate.kernel.cache import cache_root

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "bisect"
PATCHES = 8
# What a variant's build may reuse; the kernel artifacts themselves (kernels/) stay private.
SHARED = ("ccache", "sources", "work", "rtla", "initramfs")


def private_cache(home: Path) -> Path:
    """A cache root whose kernel artifacts are empty and whose build inputs are the user's."""
    shared = cache_root("trusted")
    home.mkdir(parents=True)
    for name in SHARED:
        if (shared / name).exists():
            (home / name).symlink_to(shared / name)
    return home


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, help="keep the bisect's output here (default: a temp dir)")
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="rtgate-bench-bisect-") as tmp:
        out = args.out or Path(tmp) / "bisect"
        env = {**os.environ, "RTGATE_CACHE": str(private_cache(Path(tmp) / "cache"))}
        started = time.monotonic()
        proc = subprocess.run(
            [sys.executable, "-m", "rtgate", "bisect", "--board", "qemu-arm64", "--flavor",
             "stock", "--series", str(DATA / "series"), "--scenarios", "idle",
             "--round-duration", "10s", "--step-time", "11m", "--planned-rounds", "12",
             "--min-effect-pct", "900", "--thresholds", str(DATA / "thresholds.yml"),
             "--out", str(out)],
            cwd=ROOT, env=env, check=False)
        wall = time.monotonic() - started
        doc = json.loads((out / "bisect.json").read_text())
        builds = sorted(
            (meta.parent.parent.parent.name, json.loads(meta.read_text()))
            for meta in (out / "variants").glob("*/kernels/stock/metadata.json"))
    culprit = doc["culprit_patch"]
    steps = [s["purpose"] for s in doc["steps"]]
    search = sum(s in ("ends", "search") for s in steps)
    bound = math.ceil(math.log2(PATCHES))
    print(f"bisect_planted qemu-arm64 stock idle, {PATCHES} patches: exit {proc.returncode}, "
          f"outcome {doc['outcome']}, culprit "
          f"{culprit['number'] if culprit else None} ({culprit['file'] if culprit else '-'})")
    print(f"  measurements: {len(steps)} = ends + {search - 1} search (bound ceil(log2 "
          f"{PATCHES}) = {bound}) + {len(steps) - search} confirmation; "
          f"{doc['measured_s']:.0f} s measuring, wall {wall:.0f} s")
    for name, meta in builds:
        print(f"  variant {name}: build {meta['build_seconds']:.0f} s"
              f"{' (cache hit)' if meta.get('cache_hit') else ''}")
    total = sum(meta["build_seconds"] for _, meta in builds)
    print(f"  builds: {len(builds)}, {total:.0f} s in all ({total / wall:.0%} of the wall time)")
    return 0 if proc.returncode == 1 and doc["outcome"] == "confirmed" else 1


if __name__ == "__main__":
    sys.exit(main())
