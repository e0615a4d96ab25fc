"""Assembling a bench run's result from what its programs left, without running any."""

from __future__ import annotations

from pathlib import Path

import pytest

from rtgate.harness.thermal import ThermalSampler


@pytest.fixture
def zones(tmp_path: Path) -> Path:
    for n, (kind, milli) in enumerate([("cpu-thermal", "48500"), ("gpu", "51000")]):
        zone = tmp_path / f"thermal_zone{n}"
        zone.mkdir()
        (zone / "type").write_text(kind + "\n")
        (zone / "temp").write_text(milli + "\n")
    (tmp_path / "thermal_zone2").mkdir()  # a zone whose temp cannot be read
    return tmp_path


def test_thermal_sampler_keeps_the_maximum(zones: Path) -> None:
    sampler = ThermalSampler(zones, interval_s=3600)
    with sampler:
        (zones / "thermal_zone0" / "temp").write_text("73250\n")
    # one sample on entry (gpu 51.0) and one on exit (cpu 73.25)
    assert sampler.max_c == 73.25 and sampler.zone == "thermal_zone0 cpu-thermal"
    (zones / "thermal_zone0" / "temp").write_text("20000\n")
    sampler.sample()
    assert sampler.max_c == 73.25


def test_thermal_sampler_without_zones(tmp_path: Path) -> None:
    with ThermalSampler(tmp_path) as sampler:
        pass
    assert sampler.max_c is None and sampler.zone is None
