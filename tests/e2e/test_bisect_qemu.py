"""The end-to-end bisect on the virtual board: four patches, the planted latency third.

tests/data/bisect/series-4: two harmless patches, the planted latency switched on by default
(1 s with interrupts off every ~3 s), one harmless patch. Each variant is a real kernel build
(cache and ccache: a leaf file's comment per harmless patch) and every step real A/B rounds on
qemu-arm64 under TCG. The plant is decided by the budget (a candidate round over 500 ms is worse
at once); the harmless prefixes by the A/B comparison ("same" within the 200 ms minimum effect).
Rounds of 10 s: each still holds three stalls of the plant, which the budget judges, and a
harmless prefix's intervals at 20 s were ±16 ms (p99) and ±38 ms (p99.9), a fifth of the 200 ms
margin; the 5 s rounds of the qemu-arm64 calibration found the plant at the first look 10 of 10.
A step-time of 5 min keeps the plan the alpha spending sees about what 20 s rounds and 10 min
gave (the rounds a side the cap allows at the first pair's pace). About 4 minutes with the
kernels cached.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from clirun import RunProcess

pytestmark = [pytest.mark.integration, pytest.mark.kernel, pytest.mark.timeout(3600)]

DATA = Path(__file__).parents[1] / "data" / "bisect"
PATCHES = 4
CULPRIT = 3


# Not run: it would spend 10 minutes of the suite failing the same way every time.
@pytest.mark.xfail(run=False, reason=(
    "a harmless step cannot end same within its cap on the emulator under the current A/B "
    "rule (round-to-round log sd 0.55-0.77, margins at most 100 %); issue 22 "
    "stays open for it (docs/journal.md, \"the series-4 bisect under rule 2\")"))
def test_bisect_names_and_confirms_the_planted_patch(rtgate_process: RunProcess,
                                                     tmp_path: Path) -> None:
    out = tmp_path / "bisect"
    proc = rtgate_process("bisect", "--board", "qemu-arm64", "--flavor", "stock", "--series",
                          str(DATA / "series-4"), "--scenarios", "idle", "--round-duration",
                          "10s", "--step-time", "5m", "--thresholds",
                          str(DATA / "thresholds.yml"), "--out", str(out), timeout=3000)
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
