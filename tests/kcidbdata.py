"""Real gate runs laid out as gate artifacts, with build records, for `rtgate kcidb`'s tests.

The results are real: qemu-arm64 gate results of the sweep (tests/data/sweep), the Pi 5 paper's
(tests/data/results). The build records are made by rtgate's own build code
(``rtgate.kernel.build``'s metadata of a real plan of kernel/targets and kernel/configs).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rtgate.kernel import record
from rtgate.kernel.build import _metadata
from rtgate.kernel.patches import read_series
from rtgate.kernel.plan import CONFIGS_DIR, BuildPlan, Fragment, Toolchain, cache_key
from rtgate.kernel.source import Source, sha256_file
from rtgate.kernel.targets import load_target

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
SWEEP = DATA / "sweep"
PAPER_RT = DATA / "results" / "paper-rpi5-rt-all-in.result.json"
PAPER_STOCK = DATA / "results" / "paper-rpi5-stock-all-in.result.json"
REPLAY = DATA / "bisect" / "replay"
SERIES_4 = DATA / "bisect" / "series-4"
GCC = "aarch64-linux-gnu-gcc (Debian 12.2.0-14+deb12u1) 12.2.0"
PI5_COMPATIBLE = ["raspberrypi,5-model-b", "brcm,bcm2712"]
ORIGIN = "rtgate_lab"


def build_record(directory: Path, target: str, flavor: str, source: Source,
                 series: Path | None = ROOT / "kernel" / "patches" / "series",
                 release: str = "6.12.57") -> dict[str, Any]:
    """A build's metadata.json as rtgate.kernel.build writes it, for a real plan's inputs."""
    t = load_target(target)
    fragments = [Fragment(name=p.name, path=str(p), sha256=sha256_file(p))
                 for p in [CONFIGS_DIR / n for n in t.fragments] + [CONFIGS_DIR /
                                                                  f"{flavor}.config"]]
    patches = read_series(series) if series else []
    chain = Toolchain(cross_compile=t.cross_compile, gcc=GCC, binutils="GNU ld 2.40")
    plan = BuildPlan(target=t, flavor=flavor, source=source, base_config=t.base_config,
                     fragments=fragments, series=str(series) if series else None,
                     patches=patches, toolchain=chain,
                     cache_key=cache_key(t, flavor, source, fragments, patches, chain))
    meta = _metadata(plan, release, "#1 SMP PREEMPT_RT", 412.5, "host", {})
    directory.mkdir(parents=True, exist_ok=True)
    (directory / record.METADATA).write_text(json.dumps(meta))
    (directory / record.CONFIG).write_text("CONFIG_PREEMPT_RT=y\n")
    (directory / record.LOG).write_text("  LD      vmlinux\n")
    return meta


DEBIAN = Source(kind="debian", location="linux-source-6.12", ref="6.12.57-1")
RPI_COMMIT = "4f2a3c1d0e9b8a7f6e5d4c3b2a1f0e9d8c7b6a5f"
RPI = Source(kind="git", location="https://github.com/raspberrypi/linux", ref=RPI_COMMIT)


def place(gate: Path, flavor: str, scenario: str, source: Path, **changes: Any) -> Path:
    data = json.loads(source.read_text())
    for dotted, value in changes.items():
        *parents, leaf = dotted.split("__")
        target = data
        for p in parents:
            target = target[p]
        target[leaf] = value
    path = gate / flavor / scenario / "result.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


def qemu_gate(tmp: Path) -> Path:
    """A qemu-arm64 gate artifact of real results: the sweep's rt runs (net, idle), its
    PREEMPT_NONE runs as the board's stock flavor, with both builds' records."""
    gate = tmp / "gate-qemu-arm64"
    for scenario in ("net", "idle"):
        place(gate, "rt", scenario, SWEEP / "rt" / scenario / "result.json")
        place(gate, "stock", scenario, SWEEP / "none" / scenario / "result.json",
              kernel__flavor="stock")
    for flavor in ("stock", "rt"):
        build_record(gate / "builds" / flavor, "qemu-arm64", flavor, DEBIAN, series=SERIES_4)
    return gate


def pi5_gate(tmp: Path, rt: Path = PAPER_RT, **changes: Any) -> Path:
    gate = tmp / "gate-rpi5"
    place(gate, "rt", "all-in", rt, **{"environment__dt_compatible": PI5_COMPATIBLE, **changes})
    place(gate, "stock", "all-in", PAPER_STOCK, environment__dt_compatible=PI5_COMPATIBLE)
    for flavor in ("stock", "rt"):
        build_record(gate / "builds" / flavor, "rpi5", flavor, RPI, series=SERIES_4)
    return gate
