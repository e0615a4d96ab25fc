"""The end-to-end bisect on the virtual board: four patches, the planted latency third.

tests/data/bisect/series-4: two harmless patches, the planted latency switched on by default
(1 s with interrupts off every ~3 s), one harmless patch. Each variant is a real kernel build
(cache and ccache: a leaf file's comment per harmless patch) and every step real A/B rounds on
qemu-arm64 under TCG. The plant is decided by the budget (a candidate round over 900 ms is worse
at once: the plant's maximum is ~1 s by construction); the harmless prefixes by the A/B
comparison, *same* within the bisect's own margin, --min-effect-pct 900 (a ratio of x10 either
way; docs/ab-bisect.md, "The bisect's margin"): the emulator's rounds' block-max p90 vary by a log
sd of 0.55-0.77, so the gate's 100 % at most cannot be certified in a step's cap, while the plant
moves the block-max p90 from tens of ms to ~1 s. 12 planned rounds a side
(benchmarks/bisect_same_within_cap.py: a harmless step *same* by then in 99.8 % at log sd 0.75,
98 % at 0.9; median 6-7 rounds a side) and an 11 min step cap that reaches them at up to ~55 s a
pair: a run at host load 4-6 saw a log sd of ~0.9 and needed 8 rounds a side. The plan is fixed
on the command line, so a run can be replayed (tests/data/bisect/replay/ is one, recorded with
these settings by `make bisect-fixture`). 7-9 minutes with the variants' kernels cached
(2026-11-27, host load 4-6; the journal).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from clirun import RunProcess

pytestmark = [pytest.mark.integration, pytest.mark.kernel, pytest.mark.timeout(5400)]

DATA = Path(__file__).parents[1] / "data" / "bisect"
PATCHES = 4
CULPRIT = 3


def test_bisect_names_and_confirms_the_planted_patch(rtgate_process: RunProcess,
                                                     tmp_path: Path) -> None:
    out = tmp_path / "bisect"
    proc = rtgate_process("bisect", "--board", "qemu-arm64", "--flavor", "stock", "--series",
                          str(DATA / "series-4"), "--scenarios", "idle", "--round-duration",
                          "10s", "--step-time", "11m", "--planned-rounds", "12",
                          "--min-effect-pct", "900", "--thresholds",
                          str(DATA / "thresholds.yml"), "--out", str(out), timeout=4800)
    assert proc.returncode == 1, proc.stdout + proc.stderr[-4000:]
    doc = json.loads((out / "bisect.json").read_text())
    assert doc["outcome"] == "confirmed", doc["why"]
    culprit = doc["culprit_patch"]
    assert culprit["number"] == CULPRIT
    assert culprit["file"] == "0005-rtgate-planted-latency-on.patch"
    # How it knows: the culprit against its parent worse in every repeat, the revert same as
    # the good end — each a row of the evidence table, each backed by its A/B rounds.
    purposes = [s["purpose"] for s in doc["steps"]]
    search = sum(p in ("ends", "search") for p in purposes)
    assert search <= math.ceil(math.log2(PATCHES)) + 1, purposes
    parents = [s["measurement"]["outcome"] for s in doc["steps"] if s["purpose"] == "parent"]
    reverts = [s["measurement"]["outcome"] for s in doc["steps"] if s["purpose"] == "revert"]
    assert parents == ["worse", "worse"] and reverts in (["same"], ["better"]), purposes
    for step in doc["steps"]:
        ab = Path(step["measurement"]["detail"]["ab"])
        assert ab.is_file() and list(ab.parent.glob("*/round-*/stock/idle/result.json"))
    text = (out / "bisect.md").read_text()
    assert "culprit found and confirmed" in text and "0005-rtgate-planted-latency-on.patch" in text
