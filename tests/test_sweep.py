"""rtgate sweep's table, plots and page from real qemu-arm64 results (tests/data/sweep)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clirun import RunCli

from rtgate.board.base import KernelArtifacts
from rtgate.kernel.cache import TRUST_ENV
from rtgate.kernel.plan import make_plan
from rtgate.kernel.runtime import get_runtime
from rtgate.pipeline import KernelSource
from rtgate.result import load_result
from rtgate.sweep import Point, _build_note, dynamic, page, plots_for, static_builds, table

DATA = Path(__file__).parent / "data" / "sweep"


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


@pytest.mark.integration
def test_an_overlay_per_scenario_and_an_escaped_page(tmp_path: Path) -> None:
    points = _points()
    hostile = points[0].result
    assert hostile is not None
    points.append(Point("full", "<b>x</b>", "idle", hostile))
    figures = plots_for(points, tmp_path)
    assert [s for s, _ in figures] == ["idle", "net"]
    for _, stem in figures:
        assert (tmp_path / f"{stem}.svg").stat().st_size > 0
    html = page(points, "Kernels: none 389 s", figures, "qemu-arm64", True)
    assert "&lt;b&gt;x&lt;/b&gt;" in html and "<b>x</b>" not in html
    assert 'src="plots/sweep-idle.svg"' in html


def test_dynamic_from_the_version_banner(tmp_path: Path) -> None:
    image = tmp_path / "Image"
    image.write_bytes(b"")
    k = KernelArtifacts(dir=tmp_path, image=image, release="6.12.117",
                        uts_version="#1 SMP PREEMPT_DYNAMIC Sun Nov 22 19:09:45 UTC 2026")
    assert dynamic(k)
    assert not dynamic(KernelArtifacts(dir=tmp_path, image=image, release="6.12.117",
                                       uts_version="#1 SMP Sun Nov 22 19:09:45 UTC 2026"))


def test_time_saved_counts_only_the_static_builds_measured(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The saving is what the replaced static builds took when the kernel cache built them,
    never a multiple of the dynamic build's time; one never built is named, not guessed."""
    monkeypatch.setenv("RTGATE_CACHE", str(tmp_path))
    monkeypatch.delenv(TRUST_ENV, raising=False)
    entry = tmp_path / "kernels" / make_plan("qemu-arm64", "none", get_runtime("host")).cache_key
    entry.mkdir(parents=True)
    (entry / "metadata.json").write_text(json.dumps({"build_seconds": 512.3}))
    built = KernelSource(kernels=None, source=None, patches=None, runtime="host")
    static = static_builds("qemu-arm64", ["none", "full", "rt"], built)
    assert static == {"none": 512.3, "preempt": None}
    note = _build_note({}, static, prebuilt=False)
    assert ("one non-RT build instead of 2 static (none, preempt). Build time saved, as "
            "measured: none 512 s; preempt not counted (no build of the same inputs recorded "
            "in the kernel cache).") in note
    prebuilt = KernelSource(kernels=tmp_path, source=None, patches=None, runtime="host")
    assert static_builds("qemu-arm64", ["none"], prebuilt) == {"none": None}


@pytest.mark.parametrize(("argv", "message"), [
    (["--board", "qemu-arm64", "--models", "none,lazy"], "unknown preemption model(s) lazy"),
    (["--board", "local"], "runs its own kernel"),
])
def test_sweep_refuses_bad_input(rtgate_cli: RunCli,
                                 tmp_path: Path, argv: list[str], message: str) -> None:
    proc = rtgate_cli("sweep", *argv, "--duration", "1s", "--out", str(tmp_path))
    assert proc.returncode == 2 and message in proc.stderr
