"""Block maxima from -v logs matter to the A/B comparison: four rounds against four, the latter
with a 20 ms stall planted every second second (tests/data/cyclictest/ab-verbose/README.md).
Read without the blocks (what `rtgate parse` of a -v log gave before) the stall is not seen: the
comparison tests p99.9 and cannot tell (the first rule called it *same* at a 2 ms margin); with
the blocks it is tested on the block maxima and is *worse*."""

from __future__ import annotations

import gzip
from dataclasses import replace
from pathlib import Path

import pytest
from clirun import RunCli

from rtgate.outcome import Comparison
from rtgate.result import load_result
from rtgate.stats import ab

DATA = Path(__file__).parents[1] / "data" / "cyclictest" / "ab-verbose"
KEY = ("local", "stock", "idle")
MARGIN_US = 2000


@pytest.fixture(scope="module")
def rounds(tmp_path_factory: pytest.TempPathFactory,
           rtgate_cli: RunCli) -> dict[str, list[ab.Round]]:
    work = tmp_path_factory.mktemp("ab-verbose")
    out: dict[str, list[ab.Round]] = {"clean": [], "stall": []}
    for kind, found in out.items():
        for n in range(1, 5):
            log = work / f"{kind}-{n}.log"
            log.write_bytes(gzip.decompress((DATA / f"{kind}-{n}.log.gz").read_bytes()))
            result = work / f"{kind}-{n}.json"
            proc = rtgate_cli("parse", log, "-o", result, "--board", "local", "--scenario", "idle")
            assert proc.returncode == 0, proc.stderr
            r = load_result(result)
            assert r.status == "complete", r.reasons
            for t in r.threads:
                assert t.blocks is not None and t.blocks.block_cycles == 1000
                assert len(t.blocks.maxima_us) == 20
            found.append(ab.Round.of(r))
    return out


def decide(a: list[ab.Round], b: list[ab.Round]) -> ab.Decision:
    (decision,) = ab.decide([ab.KeyRounds(KEY, a, b, ab.Margin(relative=0.0, floor_us=MARGIN_US))])
    return decision


def test_without_the_blocks_the_stall_is_not_seen(rounds: dict[str, list[ab.Round]]) -> None:
    # Fresh summaries: a round caches the metrics it has computed.
    blind = {k: [replace(r, blocks={}, summaries={}) for r in v] for k, v in rounds.items()}
    decision = decide(blind["clean"], blind["stall"])
    assert decision.headline is not None and decision.headline.metric != ab.BLOCK_METRIC
    assert decision.outcome is Comparison.UNKNOWN, decision


def test_with_the_blocks_the_stall_is_worse(rounds: dict[str, list[ab.Round]]) -> None:
    decision = decide(rounds["clean"], rounds["stall"])
    assert decision.outcome is Comparison.WORSE, decision
    assert decision.headline is not None and decision.headline.metric == ab.BLOCK_METRIC
    # The stall, certainly larger than the margin at the clean rounds' block maxima.
    margin = ab.Margin(relative=0.0, floor_us=MARGIN_US).ratio(decision.headline.a_geomean_us)
    assert decision.headline.low > margin


def test_parse_of_a_verbose_log_is_what_the_rounds_read(rtgate_cli: RunCli,
                                                        tmp_path: Path) -> None:
    log = tmp_path / "stall-1.log"
    log.write_bytes(gzip.decompress((DATA / "stall-1.log.gz").read_bytes()))
    proc = rtgate_cli("parse", log, "-o", tmp_path / "r.json")
    assert proc.returncode == 0, proc.stderr
    (t0, _) = load_result(tmp_path / "r.json").threads
    assert t0.blocks is not None
    # Thread 0 shares CPU 0 with the planted loop: every second block holds a stall.
    assert sum(m >= 15000 for m in t0.blocks.maxima_us) >= 8
