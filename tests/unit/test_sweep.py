"""rtgate sweep's table, plots and page from real qemu-arm64 results (tests/data/sweep)."""

from __future__ import annotations

from pathlib import Path

import pytest
from clirun import RunCli

from rtgate.board.base import KernelArtifacts
from rtgate.pipeline.kernels import dynamic
from rtgate.pipeline.sweeprender import Point, table
from rtgate.result import load_result

DATA = Path(__file__).parents[1] / "data" / "sweep"


def _points() -> list[Point]:
    return [Point(m, m, s, load_result(DATA / m / s / "result.json"))
            for m in ("none", "rt") for s in ("idle", "net")]


def test_table_has_a_row_per_model_and_load_from_the_results() -> None:
    points = _points()
    text = table(points, "qemu-arm64", True)
    rt_net = points[3].result
    assert rt_net is not None
    assert (f"| `rt` | `net` | `{rt_net.totals.samples}` | `17` | `679.23` | `62862` | `≥20000` "
            "| `complete` |") in text
    assert "no real-time claim" in text
    assert text.count("\n| `") == 4


def test_dynamic_from_the_version_banner(tmp_path: Path) -> None:
    image = tmp_path / "Image"
    image.write_bytes(b"")
    k = KernelArtifacts(dir=tmp_path, image=image, release="6.12.117",
                        uts_version="#1 SMP PREEMPT_DYNAMIC Sun Nov 22 19:09:45 UTC 2026")
    assert dynamic(k)
    assert not dynamic(KernelArtifacts(dir=tmp_path, image=image, release="6.12.117",
                                       uts_version="#1 SMP Sun Nov 22 19:09:45 UTC 2026"))


@pytest.mark.parametrize(("argv", "message"), [
    (["--board", "qemu-arm64", "--models", "none,lazy"], "unknown preemption model(s) lazy"),
    (["--board", "local"], "runs its own kernel"),
])
def test_sweep_refuses_bad_input(rtgate_cli: RunCli,
                                 tmp_path: Path, argv: list[str], message: str) -> None:
    proc = rtgate_cli("sweep", *argv, "--duration", "1s", "--out", str(tmp_path))
    assert proc.returncode == 2 and message in proc.stderr
