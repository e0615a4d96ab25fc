"""Board descriptions are data: one YAML file per board under ``bench/boards/``.

Each driver has its own typed options block, validated when the file is loaded, so a typo in a
lab's board file is a one-line input error naming the file, not a crash in the middle of a boot.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationInfo,
    field_validator,
    model_validator,
)

from rtgate import paths
from rtgate.board.privileges import Route
from rtgate.errors import InputError
from rtgate.yamlsource import load_named

Driver = Literal["local", "qemu", "ssh", "lava"]
LOOPBACK = "127.0.0.1"
_NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"
ToolName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")]
Sha256 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]


class _Options(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PeerOptions(_Options):
    """Which scenario loads the controller runs against a remote board (rtgate.board.peer)."""

    loads: list[str] = Field(
        default_factory=lambda: ["iperf3-client"],
        description="Names of scenario loads the controller runs against the board.")
    board_listen: str = Field(
        "0.0.0.0", description=f"Replaces {LOOPBACK} in the board's loads: a server there must "
                               "accept the peer's connections.")
    board_address: str = Field(
        LOOPBACK, description=f"Replaces {LOOPBACK} in the peer's loads: where the controller "
                              "reaches the board (QEMU: the forwarded loopback port).")
    board_port: int = Field(5201, description="Replaces {port} in the board's loads.")


class LocalOptions(_Options):
    """The local board needs no settings: it measures the machine rtgate runs on."""


class QemuOptions(_Options):
    """A QEMU virtual board booting the built Image with an rtgate initramfs."""

    binary: str = "qemu-system-aarch64"
    machine: str = "virt"
    cpu: str = "cortex-a76"
    memory: str = "1G"
    smp: int = Field(
        2, ge=1, description="vCPUs wanted; capped at the host CPUs rtgate may use, because "
                             "oversubscribed vCPUs turn emulator scheduling into latency noise.")
    console: str = Field("ttyAMA0", description="The guest's serial console device.")
    append: list[str] = Field(
        default_factory=lambda: ["panic=-1", "loglevel=1"],
        description="Extra kernel command-line words (panic=-1 turns a panic into a QEMU exit).")
    peer: PeerOptions = Field(default_factory=PeerOptions)
    interval_us: int | None = Field(
        None, ge=50, description="Replaces the scenario's cyclictest interval (-i) on this board: "
                                 "an emulator cannot sample as fast as the hardware it stands for.")
    boot_timeout_s: float = Field(120, gt=0)
    run_margin_s: float = Field(
        90, gt=0, description="Time allowed beyond the scenario duration for loads to start, "
                              "the run to finish and the results to be sent back.")
    packages: list[str] = Field(
        default_factory=lambda: ["busybox-static", "rt-tests", "stress-ng", "iperf3"],
        description="Debian packages (guest architecture) whose programs the initramfs holds.")
    skip_packages: list[str] = Field(
        default_factory=list,
        description="Dependencies never needed in the initramfs (interpreters, maintainer-script "
                    "helpers); the shared-library check still catches a wrong omission.")


class SshOptions(_Options):
    """A Raspberry Pi 5 reached over SSH, booting test kernels with the firmware's tryboot."""

    host: str
    user: str = "root"
    port: int = 22
    identity_file: str | None = None
    ssh_options: list[str] = Field(
        default_factory=lambda: ["BatchMode=yes", "ConnectTimeout=5", "ServerAliveInterval=5",
                                 "ServerAliveCountMax=3"],
        description="`-o` options for ssh and scp.")
    sudo: str = Field("sudo", description="Prefix for commands that need root ('' when root).")
    measure_privilege: Route = Field(
        "sudo", description="How cyclictest gets SCHED_FIFO 99, mlockall and /dev/cpu_dma_latency "
                            "(rtgate.board.privileges): `sudo` runs the bench (and its loads) "
                            "through the sudo prefix, as root; `file-capabilities` runs it as "
                            "`user`, cyclictest carrying cap_ipc_lock,cap_sys_nice=ep.")
    firmware_dir: str = "/boot/firmware"
    # Plain names: the slot is replaced wholesale (rm -rf) on every deploy.
    slot: str = Field("rtgate", pattern=_NAME,
                      description="Side-slot directory under firmware_dir (os_prefix).")
    kernel_image: str = Field("kernel_2712.img", pattern=_NAME,
                              description="Image name the Pi 5 firmware loads.")
    modules_dir: str = "/lib/modules"
    reboot_tryboot: str = "reboot '0 tryboot'"
    reboot_normal: str = "reboot"
    boot_id_command: str = Field(
        "cat /proc/sys/kernel/random/boot_id",
        description="Changes on every boot: tells a rebooted board from one that never went down.")
    boot_timeout_s: float = Field(300, gt=0)
    poll_interval_s: float = Field(5, gt=0)
    bench_command: str = Field(
        "rtgate bench --board local --scenario {scenario} --duration {duration} --out {out}",
        description="Runs the measurement on the board; {scenario} {duration} {out} are filled.")
    remote_out: str = "/var/tmp/rtgate-run"
    tuning_state: str = Field(
        "/run/rtgate-tuning",
        description="Where a tuning profile's old run-time values wait to be put back; on a "
                    "tmpfs, so a reboot (which undoes the writes) drops them too.")
    peer: PeerOptions = Field(default_factory=PeerOptions)
    run_margin_s: float = Field(120, gt=0)
    console_command: str | None = Field(
        None, description="Run on the controller while a test kernel boots and runs (e.g. "
                          "reading a debug probe's serial line); its output is kept as "
                          "OUT/console.log. None: no console.")
    power_cycle_command: str | None = Field(
        None, description="Run on the controller when the board does not come back (a smart "
                          "plug, a PoE port, a relay): the board then boots config.txt's "
                          "known-good kernel. None: a person power-cycles it.")
    tryboot_flag: str = Field(
        "/proc/device-tree/chosen/bootloader/tryboot",
        description="The firmware's flag (a big-endian 1) that this boot was a tryboot: the "
                    "board runs a test kernel.")
    pstore_dir: str = Field(
        "/sys/fs/pstore", description="Where the board's kernel keeps a dying kernel's log "
                                      "(ramoops/efi-pstore); emptied before each tryboot, read "
                                      "after a fallback.")
    pstore_archive_dir: str = Field(
        "/var/lib/systemd/pstore",
        description="Where systemd-pstore moves pstore's records at boot (its default "
                    "Unlink=yes empties pstore_dir): what it archived since the tryboot is read "
                    "too.")
    boots_command: str = Field(
        "journalctl --list-boots --no-pager -q",
        description="Lists the journal's boots, oldest first, the boot id in the second column: "
                    "the test boot is found by the boot id rtgate recorded.")
    boot_log_command: str = Field(
        "journalctl -k -b {boot} --no-pager -q", pattern=r"\{boot\}",
        description="Prints one boot's kernel log from a persistent journal ({boot}: its id); "
                    "read for the test boot after a fallback, never `-b -1`.")
    tools: dict[ToolName, Sha256] = Field(
        default_factory=dict,
        description="Pinned sha256 of the board's tools, checked before every deploy and run: a "
                    "command name as the board's PATH resolves it (cyclictest, stress-ng, "
                    "iperf3 …), and `rtgate`, the Python environment bench_command runs from. "
                    "rtgate/board/rpi5/tooldigest.sh prints them (docs/rpi5.md).")


class ImageStoreOptions(_Options):
    """A store the lab reads images from: rtgate PUTs them there (lava.store.ImageStore)."""

    put: str = Field(pattern=r"^https?://", description="Base URL rtgate uploads to (HTTP PUT).")
    get: str = Field(pattern=r"^https?://",
                     description="Base URL the lab's workers download the same names from.")
    token_env: str | None = Field(
        None, pattern=r"^[A-Z_][A-Z0-9_]*$",
        description="Environment variable holding a bearer token for the uploads (never the "
                    "token itself); none: uploads without one.")


class LavaOptions(_Options):
    """A board in a LAVA lab: deploy, boot and run become one LAVA job (board.lava.driver)."""

    server: str = Field(description="The LAVA server's base URL (http[s]://host[:port]).")
    token_env: str = Field(
        "LAVA_TOKEN", pattern=r"^[A-Z_][A-Z0-9_]*$",
        description="Environment variable holding the API token; the token is never in the file.")
    device_type: str = Field(description="LAVA device type the job asks for.")
    tags: list[str] = Field(default_factory=list, description="LAVA device tags the job needs.")
    template: str = Field(
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$",
        description="Job template under bench/lava/ (Jinja2; see docs/lava.md for its variables).")
    context: dict[str, Any] = Field(
        default_factory=dict, description="Extra variables for the job template.")
    serve_host: str | None = Field(
        None, description="Address the lab's workers reach this controller at: rtgate serves "
                          "the kernel and initramfs there over HTTP for the job to download.")
    image_store: ImageStoreOptions | None = Field(
        None, description="Upload the images to this store instead of serving them.")
    serve_port: int = Field(0, ge=0, le=65535, description="0: any free port.")
    cpus: int = Field(1, ge=1, description="CPUs the device gives the kernel (the plan's -t).")
    interval_us: int | None = Field(
        None, ge=50, description="Replaces the scenario's cyclictest interval (-i) on this board.")
    packages: list[str] = Field(
        default_factory=lambda: ["busybox-static", "rt-tests", "stress-ng"],
        description="Debian packages (guest architecture) whose programs the initramfs holds.")
    skip_packages: list[str] = Field(default_factory=list)
    queue_timeout_s: float = Field(600, gt=0, description="Longest wait for a device.")
    run_margin_s: float = Field(
        300, gt=0, description="Time allowed beyond the scenario for deploy, boot and results.")
    poll_interval_s: float = Field(2, gt=0)

    @model_validator(mode="after")
    def _one_image_source(self) -> LavaOptions:
        if (self.serve_host is None) == (self.image_store is None):
            raise ValueError("give either serve_host (rtgate serves the images) or "
                             "image_store (rtgate uploads them), not both or neither")
        return self


_OPTIONS: dict[str, type[_Options]] = {
    "local": LocalOptions, "qemu": QemuOptions, "ssh": SshOptions, "lava": LavaOptions,
}


class BoardSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    description: str
    driver: Driver
    virtual: bool | Literal["auto"] = Field(
        description="VM or emulator: its numbers are no real-time claim. `auto`: detect at run "
                    "time (the local board may itself be a VM).")
    kind: str | None = Field(
        None, pattern=_NAME,
        description="The kind of board this instance is (rpi5 for rpi5-b): its budgets, gate "
                    "plan, calibration record and history are the kind's. None: its own name.")
    arch: str | None = None
    scenarios: list[str] = Field(
        default_factory=lambda: ["all-in"], min_length=1,
        description="What the gate measures on this board when no scenario is named: the "
                    "paper's all-in on real hardware, a load the board can carry otherwise.")
    kernel_target: str | None = Field(
        None, description="The kernel target its kernels are built for (kernel/targets/NAME.yml, "
                          "`rtgate kernel build --board NAME`); none for local.")
    options: LocalOptions | QemuOptions | SshOptions | LavaOptions = Field(
        default_factory=LocalOptions, description="Driver-specific settings.")

    @model_validator(mode="before")
    @classmethod
    def _renamed_keys(cls, data: Any) -> Any:
        # The key's name before lab boards and kernel build targets had words of their own.
        if isinstance(data, dict) and "kernel_board" in data:
            raise ValueError("kernel_board is now kernel_target (a file in kernel/targets/)")
        return data

    @field_validator("options", mode="before")
    @classmethod
    def _options_of_driver(cls, value: Any, info: ValidationInfo) -> Any:
        # The driver names the options model; a union would silently pick whichever fits.
        model = _OPTIONS.get(info.data.get("driver", ""))
        if model is None or isinstance(value, model):
            return value
        return model.model_validate(value or {})


def kind_of(spec: BoardSpec) -> str:
    """The board's kind: what budgets, calibration and the gate's plan are keyed by."""
    return spec.kind or spec.name


def board_kind(name: str, root: Path) -> str:
    """The kind of the board named, as the board files in ``root`` say (its file's ``kind:``,
    else its name); a name with no board file (a result from another lab) is its own kind."""
    return kind_of(load_board(name, root)) if board_path(name, root).is_file() else name


def board_path(name: str, root: Path | None = None) -> Path:
    return (root or paths.BOARDS) / f"{name}.yml"


def load_board(name: str, root: Path | None = None) -> BoardSpec:
    return load_named(board_path(name, root), BoardSpec, "board")


def load_target_board(name: str, why: str) -> BoardSpec:
    """A board that boots the kernels rtgate builds for its kernel target; ``why`` says what
    needs one."""
    spec = load_board(name)
    if not spec.kernel_target:
        raise InputError(f"board {spec.name!r} runs its own kernel: {why}")
    return spec


def list_boards(root: Path | None = None) -> list[BoardSpec]:
    return [load_board(p.stem, root) for p in sorted((root or paths.BOARDS).glob("*.yml"))]


def flavors_of(spec: BoardSpec, requested: list[str] | None) -> list[str]:
    """The flavors a run on this board measures: stock and rt by default on a board that boots
    its kernels; one label at most (default: the running kernel's) on one that does not."""
    if spec.kernel_target:
        return requested or ["stock", "rt"]
    if requested and len(requested) > 1:
        raise InputError(f"board {spec.name!r} runs its own kernel and cannot boot "
                         f"{', '.join(requested)}: give at most one flavor label")
    return requested or [""]  # "": the result's flavor comes from the running kernel


def scenarios_of(spec: BoardSpec, requested: list[str] | None) -> list[str]:
    """``board`` stands for the board's own scenarios, so one list (the nightly's ``idle,board``)
    fits boards whose hardware carries different loads."""
    named = requested or ["board"]
    return list(dict.fromkeys(s for r in named for s in (spec.scenarios if r == "board" else [r])))
