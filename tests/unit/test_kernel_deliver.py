"""A built kernel as untrusted data (issue 23): delivery copies only what a kernel build leaves,
as regular files, into a fresh directory; a kernel directory's metadata names no file outside it.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from clirun import RunCli

from rtgate.board.base import KernelArtifacts
from rtgate.errors import InfraError
from rtgate.kernel.cache import METADATA_SCHEMA
from rtgate.kernel.deliver import deliver
from rtgate.kernel.targets import load_target

IMAGE = b"arm64 Image\n"
CONFIG = b"CONFIG_PREEMPT_RT=y\n"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def built(root: Path, board: str = "qemu-arm64") -> Path:
    """A kernel directory as `rtgate kernel build --out` leaves it."""
    out = root / "built"
    out.mkdir()
    target = load_target(board)
    files = {target.image_name: IMAGE, ".config": CONFIG}
    if target.modules:
        files["modules.tar.gz"] = b"modules"
    if target.dtbs:
        files["dtbs/broadcom/bcm2712-rpi-5-b.dtb"] = b"dtb"
        files["dtbs/overlays/README"] = b"readme"
    for name, data in files.items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_bytes(data)
    (out / "build.log").write_text("make\n")
    meta = {"schema": METADATA_SCHEMA, "plan": {"board": target.model_dump(), "flavor": "rt"},
            "kernel_release": "6.12.0", "uts_version": "#1 SMP PREEMPT_RT",
            "outputs": {name: _sha(data) for name, data in files.items()}}
    (out / "metadata.json").write_text(json.dumps(meta))
    return out


@pytest.mark.parametrize("board", ["qemu-arm64", "rpi5"])
def test_a_kernel_is_delivered_whole_as_regular_files(tmp_path: Path, board: str) -> None:
    src = built(tmp_path, board)
    done = deliver(src, tmp_path / "delivery" / "k")
    assert done.complete
    theirs = sorted(str(p.relative_to(src)) for p in src.rglob("*") if p.is_file())
    assert done.files == theirs
    for name in done.files:
        copy = done.dest / name
        assert not copy.is_symlink() and copy.read_bytes() == (src / name).read_bytes()
    KernelArtifacts.from_dir(done.dest)


def _leak(src: Path) -> None:
    (src / "leak").symlink_to("/proc/self/environ")


def _tmpdir(src: Path) -> None:
    (src / ".tmpdir").symlink_to(src.parent, target_is_directory=True)


def _image_link(src: Path) -> None:
    (src / "Image").rename(src / "real")
    (src / "Image").symlink_to("real")


def _hidden(src: Path) -> None:
    (src / ".gate-verdict.json").write_text("{}")


def _forged_dir(src: Path) -> None:
    (src / "gate-qemu").mkdir()
    (src / "gate-qemu" / "result.json").write_text("{}")


def _fifo(src: Path) -> None:
    os.mkfifo(src / "pipe")


@pytest.mark.parametrize("plant, named", [
    (_leak, "leak (a symbolic link)"),
    (_tmpdir, ".tmpdir (a symbolic link)"),
    (_image_link, "Image (a symbolic link)"),
    (_hidden, ".gate-verdict.json (not a file a kernel build leaves)"),
    (_forged_dir, "gate-qemu/result.json (not a file a kernel build leaves)"),
    (_fifo, "pipe (not a regular file)"),
])
def test_links_and_unexpected_names_are_refused_by_name(
        tmp_path: Path, plant: Callable[[Path], None], named: str) -> None:
    src = built(tmp_path)
    plant(src)
    dest = tmp_path / "delivery"
    with pytest.raises(InfraError, match="refused, nothing delivered") as caught:
        deliver(src, dest)
    assert named in str(caught.value) and caught.value.code == 3
    assert not dest.exists()


def test_the_cli_refuses_with_exit_3_naming_the_links(rtgate_cli: RunCli,
                                                      tmp_path: Path) -> None:
    src = built(tmp_path)
    _leak(src)
    _tmpdir(src)
    proc = rtgate_cli("kernel", "deliver", "--from", str(src), "--to", str(tmp_path / "d"))
    assert proc.returncode == 3
    assert proc.stderr.count("\n") == 1
    assert "leak (a symbolic link)" in proc.stderr and ".tmpdir (a symbolic link)" in proc.stderr
    assert "ghs_" not in proc.stderr and not (tmp_path / "d").exists()


def test_delivery_needs_a_fresh_directory(rtgate_cli: RunCli, tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    proc = rtgate_cli("kernel", "deliver", "--from", str(built(tmp_path)), "--to",
                      str(tmp_path / "d"))
    assert proc.returncode == 2 and "must be a fresh one" in proc.stderr


def test_a_copy_that_is_not_the_recorded_one_is_refused(tmp_path: Path) -> None:
    src = built(tmp_path)
    (src / "Image").write_bytes(b"another kernel\n")
    with pytest.raises(InfraError, match=r"Image \(sha256 .*metadata.json records"):
        deliver(src, tmp_path / "d")
    assert not (tmp_path / "d").exists()


def _meta(src: Path, edit: Callable[[dict], None]) -> None:  # type: ignore[type-arg]
    meta = json.loads((src / "metadata.json").read_text())
    edit(meta)
    (src / "metadata.json").write_text(json.dumps(meta))


@pytest.mark.parametrize("image_name", ["/etc/hostname", "../../../../etc/os-release"])
def test_metadata_naming_a_file_outside_is_refused(tmp_path: Path, image_name: str) -> None:
    src = built(tmp_path)

    def point(meta: dict) -> None:  # type: ignore[type-arg]
        meta["plan"]["board"]["image_name"] = image_name
        meta["outputs"][image_name] = _sha(b"")
    _meta(src, point)
    with pytest.raises(InfraError, match="is not a kernel target of this rtgate"):
        deliver(src, tmp_path / "d")
    # The board side reads a kernel directory the same way: the image is one of its own files.
    with pytest.raises(InfraError, match="not a plain path inside its directory") as caught:
        KernelArtifacts.from_dir(src)
    assert caught.value.path == str(src / "metadata.json")


def test_an_image_link_inside_resolving_outside_is_refused(tmp_path: Path) -> None:
    src = built(tmp_path)
    (src / "Image").unlink()
    (src / "Image").symlink_to("/etc/hostname")
    with pytest.raises(InfraError, match="resolves outside its directory"):
        KernelArtifacts.from_dir(src)


def test_a_dtbs_link_resolving_outside_is_refused_on_delivery(tmp_path: Path) -> None:
    src = built(tmp_path, "rpi5")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret").write_bytes(b"s")
    for name in ("broadcom/bcm2712-rpi-5-b.dtb", "overlays/README"):
        (src / "dtbs" / name).unlink()
    for d in ("broadcom", "overlays"):
        (src / "dtbs" / d).rmdir()
    (src / "dtbs").rmdir()
    (src / "dtbs").symlink_to(tmp_path / "outside")
    _meta(src, lambda meta: meta["outputs"].update({"dtbs/secret": _sha(b"s")}))
    with pytest.raises(InfraError, match="'dtbs/[^']*', which resolves outside") as caught:
        deliver(src, tmp_path / "d")
    assert caught.value.path == str(src / "metadata.json")
    assert not (tmp_path / "d").exists()


@pytest.mark.parametrize("plant, code, said", [
    (lambda src: _meta(src, lambda m: m["plan"]["board"].update(image_name="/etc/hostname")),
     3, "metadata.json: names '/etc/hostname', which is not a plain path"),
    (lambda src: (src / "metadata.json").write_text("[1, 2"), 3, "metadata.json: not a kernel"),
    (lambda src: (src / "Image").unlink(), 3, "kernel build has no image Image"),
    (lambda src: (src / "metadata.json").unlink(), 2, "not a kernel build (no metadata.json)"),
])
def test_board_run_refuses_a_hostile_kernel_directory_with_exit_3(
        rtgate_cli: RunCli, tmp_path: Path, plant: Callable[[Path], object], code: int,
        said: str) -> None:
    src = built(tmp_path)
    plant(src)
    proc = rtgate_cli("board", "run", "--board", "qemu-arm64", "--kernel", str(src),
                      "--scenario", "idle", "--duration", "1", "--out", str(tmp_path / "out"))
    assert proc.returncode == code, proc.stderr
    assert said in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr


def test_outputs_a_target_does_not_make_are_refused(tmp_path: Path) -> None:
    src = built(tmp_path)
    (src / "modules.tar.gz").write_bytes(b"m")
    _meta(src, lambda meta: meta["outputs"].update({"modules.tar.gz": _sha(b"m")}))
    with pytest.raises(InfraError, match="records outputs a qemu-arm64 build does not make: "
                                         "modules.tar.gz"):
        deliver(src, tmp_path / "d")


def test_a_failed_build_delivers_its_log_and_config_only(rtgate_cli: RunCli,
                                                         tmp_path: Path) -> None:
    src = tmp_path / "failed"
    src.mkdir()
    (src / "build.log").write_text("error: boom\n")
    (src / ".config").write_bytes(CONFIG)
    proc = rtgate_cli("kernel", "deliver", "--from", str(src), "--to", str(tmp_path / "d"))
    assert proc.returncode == 3 and "a failed build" in proc.stderr
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == [".config", "build.log"]
