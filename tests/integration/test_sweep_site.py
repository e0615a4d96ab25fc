"""Sweep pages and the static builds a sweep measured, with real tools."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_sweep import _points

from rtgate.kernel.cache import TRUST_ENV
from rtgate.kernel.plan import make_plan
from rtgate.kernel.runtime import get_runtime
from rtgate.pipeline.settings import KernelSource
from rtgate.pipeline.sweep import static_builds
from rtgate.pipeline.sweeprender import Point, page, plots_for
from rtgate.pipeline.sweeprender import build_note as _build_note


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
