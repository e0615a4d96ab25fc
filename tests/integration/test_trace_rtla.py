"""rtla built here from the trusted kernel source (host and arm64), cached; the tracer probe."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from rtgate.board.qemu import initramfs
from rtgate.board.spec import QemuOptions, load_board
from rtgate.kernel.cache import cache_root
from rtgate.kernel.source import materialize, resolve
from rtgate.trace import autoanalysis, rtla

pytestmark = pytest.mark.integration


def _kernelversion() -> str:
    tree = materialize(resolve(rtla.DEFAULT_SOURCE), cache_root("trusted"))
    return subprocess.run(["make", "-sC", str(tree), "kernelversion"], capture_output=True,
                          text=True, check=True).stdout.strip()


def test_host_rtla_is_the_kernel_sources_and_has_auto_analysis() -> None:
    built = rtla.build("host")
    assert built.version == _kernelversion()
    out = subprocess.run([str(built.path), "--version"], capture_output=True, text=True)
    assert f"rtla version {built.version}" in out.stdout + out.stderr
    # Debian 12's own rtla (6.1) lacks these: the reason to build it.
    help_text = subprocess.run([str(built.path), "timerlat", "top", "--help"],
                               capture_output=True, text=True)
    assert "--aa-only" in help_text.stdout + help_text.stderr
    assert "--dump-tasks" in help_text.stdout + help_text.stderr


def test_arm64_rtla_is_an_aarch64_program_linking_debians_libtracefs() -> None:
    built = rtla.build("arm64")
    header = subprocess.run(["readelf", "-h", "-d", str(built.path)], capture_output=True,
                            text=True, check=True).stdout
    assert "AArch64" in header
    assert "[libtracefs.so.1]" in header and "[libtraceevent.so.1]" in header


def test_the_cache_serves_the_same_binary_and_rebuilds_a_tampered_one() -> None:
    first = rtla.build("host")
    stamp = first.path.stat().st_mtime_ns
    assert rtla.build("host").path.stat().st_mtime_ns == stamp  # a hit: not rebuilt
    original = first.path.read_bytes()
    first.path.write_bytes(original + b"tampered")
    again = rtla.build("host")
    assert again.path.read_bytes() == original


@pytest.mark.parametrize(("tracers", "expected"), [
    (None, "no tracefs"),
    ("nop function\n", "no timerlat tracer (available: nop function)"),
    ("timerlat osnoise function nop\n", None),
])
def test_tracer_probe_says_what_the_kernel_lacks(tmp_path: Path, tracers: str | None,
                                                 expected: str | None) -> None:
    if tracers is not None:
        (tmp_path / "available_tracers").write_text(tracers)
    why = autoanalysis.missing(tmp_path)
    assert (why is None) if expected is None else (expected in (why or ""))


def test_the_guest_initramfs_carries_rtla_and_its_libraries(tmp_path: Path) -> None:
    spec = load_board("qemu-arm64")
    assert isinstance(spec.options, QemuOptions)
    built = rtla.build("arm64")
    roots = [*spec.options.packages, *rtla.RUNTIME_PACKAGES]
    image = initramfs.build(roots, spec.options.skip_packages,
                            extra={"usr/bin/rtla": built.path})
    listing = subprocess.run(f"gzip -dc {image.path} | cpio -t --quiet", shell=True,
                             capture_output=True, text=True, check=True).stdout.split()
    assert "usr/bin/rtla" in listing
    assert any(name.endswith("/libtracefs.so.1") for name in listing)
    # The archive is keyed by the binary too: another rtla is another initramfs.
    other = tmp_path / "rtla"
    other.write_bytes(built.path.read_bytes() + b"\0")
    key = initramfs.cache_key(image.packages, initramfs.INIT_SCRIPT.read_text(),
                              {"usr/bin/rtla": built.path})
    assert key == image.path.name.split(".")[0]
    assert key != initramfs.cache_key(image.packages, initramfs.INIT_SCRIPT.read_text(),
                                      {"usr/bin/rtla": other})
