"""The LAVA job templates (bench/lava/), rendered by the lava driver's own code path
(LavaBoard.definition) for a real scenario's plan, without a lab: what the job deploys, boots
and types. tests/e2e/test_lava.py checks the same renderings against LAVA 2023.01's job schema and
runs the qemu one for real; the Raspberry Pi 5 template is untested on hardware.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
import yaml

from rtgate.board.base import KernelArtifacts
from rtgate.board.lava.driver import LavaBoard
from rtgate.board.spec import load_board
from rtgate.cyclictest.version import parse_help
from rtgate.errors import InputError

DATA = Path(__file__).parents[1] / "data"
CAPS = parse_help((DATA / "help" / "cyclictest-2.40.txt").read_text())


def images(*roles: str) -> dict[str, tuple[str, str]]:
    return {role: (f"http://192.0.2.10:8099/{role}/file-{i}", f"{i + 1:064x}")
            for i, role in enumerate(roles)}


def board(name: str, tmp_path: Path, root: Path | None = None) -> LavaBoard:
    lava = LavaBoard(load_board(name, root), tmp_path)
    lava.caps = CAPS  # the command line is built for this cyclictest's options
    return lava


def render(lava: LavaBoard, given: dict[str, tuple[str, str]]) -> dict[str, Any]:
    plan = lava._plan("idle", 30, None)
    job: dict[str, Any] = yaml.safe_load(lava.definition(plan, given))
    return job


def typed_script(job: dict[str, Any]) -> str:
    """The script the interactive test types, decoded as the guest's init decodes it."""
    (test,) = [a["test"] for a in job["actions"] if "test" in a]
    (command,) = [step["command"] for step in test["interactive"][0]["script"]]
    lines = command.splitlines()
    assert lines[-1] == "RTGATE-GO"
    return base64.b64decode("".join(lines[:-1])).decode()


def test_rpi5_tftp_job_deploys_the_build_boots_u_boot_and_types_the_run(tmp_path: Path) -> None:
    given = images("kernel", "ramdisk", "dtb")
    job = render(board("lava-rpi5", tmp_path, DATA / "lava"), given)

    assert job["device_type"] == "bcm2712-rpi-5-b" and job["tags"] == ["rtgate-rpi5-01"]
    deploy, boot = job["actions"][0]["deploy"], job["actions"][1]["boot"]
    assert deploy["to"] == "tftp"
    for role in ("kernel", "ramdisk", "dtb"):
        assert (deploy[role]["url"], deploy[role]["sha256sum"]) == given[role]
    assert deploy["kernel"]["type"] == "image"
    assert deploy["ramdisk"]["install_overlay"] is False
    assert (boot["method"], boot["commands"], boot["prompts"]) == ("u-boot", "ramdisk",
                                                                   ["RTGATE-READY"])
    assert job["context"]["console_device"] == "ttyAMA10"
    assert "rdinit=/init" in job["context"]["extra_kernel_args"]
    # The run: the scenario's -i100 (no interval override on real hardware), a thread per CPU.
    script = typed_script(job)
    run = next(line for line in script.splitlines() if line.lstrip().startswith("cyclictest -m"))
    assert " -i100 " in run and "--duration=30" in run and " -t " in run
    assert "RTGATE-BEGIN" in script
    # Timeouts hold warm-up, the run and the board's margin.
    assert job["timeouts"]["action"]["seconds"] >= 30 + 300


def test_qemu_job_renders_through_the_same_path(tmp_path: Path) -> None:
    given = images("kernel", "ramdisk")
    job = render(board("lava-qemu", tmp_path), given)
    images_ = job["actions"][0]["deploy"]["images"]
    assert (images_["kernel"]["url"], images_["kernel"]["sha256sum"]) == given["kernel"]
    assert "-i1000" in typed_script(job)  # the board's interval_us, as on qemu-arm64


def test_a_template_needing_a_device_tree_without_one_names_the_template(
        tmp_path: Path) -> None:
    lava = board("lava-rpi5", tmp_path, DATA / "lava")
    with pytest.raises(InputError, match="'dtb' is undefined") as err:
        render(lava, images("kernel", "ramdisk"))
    assert str(err.value.path).endswith("bench/lava/rpi5-tftp.yaml.j2")


def test_the_device_tree_comes_from_the_kernel_builds_dtbs_only(tmp_path: Path) -> None:
    build = tmp_path / "kernel"
    (build / "dtbs" / "broadcom").mkdir(parents=True)
    dtb = build / "dtbs" / "broadcom" / "bcm2712-rpi-5-b.dtb"
    dtb.write_bytes(b"\xd0\x0d\xfe\xed")
    (build / "Image").write_bytes(b"kernel")
    lava = board("lava-rpi5", tmp_path, DATA / "lava")
    lava.kernel = KernelArtifacts(dir=build, image=build / "Image", release="6.12.0",
                                  dtbs=build / "dtbs")
    assert lava._dtb("broadcom/bcm2712-rpi-5-b.dtb") == dtb.resolve()
    with pytest.raises(InputError, match="outside the kernel build's dtbs/"):
        lava._dtb("../Image")
    with pytest.raises(InputError, match="no dtbs/broadcom/missing.dtb"):
        lava._dtb("broadcom/missing.dtb")
