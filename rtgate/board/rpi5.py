"""The Raspberry Pi 5 over SSH, booting the kernel under test with the firmware's one-shot tryboot.

The known-good boot files are never written. The test kernel goes into a side slot
(``firmware_dir/slot/``: ``kernel_2712.img``, the device trees, ``overlays/``, a copy of
``cmdline.txt``) and its modules into ``/lib/modules/<release>``; ``tryboot.txt`` is the
known-good ``config.txt`` plus ``os_prefix=slot/``. ``reboot '0 tryboot'`` makes the firmware read
``tryboot.txt`` for that one boot only: a crash, a hang caught by the watchdog, or any later
reset comes back on ``config.txt``. rtgate runs on a controller host, because a job cannot
survive its own machine rebooting; the board runs ``rtgate bench`` and the controller is the
iperf3 peer.
"""

from __future__ import annotations

import hashlib
import shlex
import subprocess
import tarfile
import tempfile
import time
from datetime import datetime
from pathlib import Path

import yaml
from rich.console import Console

from rtgate.bench.loads import LISTEN_TIMEOUT_S
from rtgate.bench.plan import Params, timeout_for
from rtgate.bench.scenario import load_scenario
from rtgate.board import tarsafe
from rtgate.board.base import Board, KernelArtifacts, Measurement, RawRun
from rtgate.board.guestenv import LoadReport
from rtgate.board.peer import PeerLoads, controller_cpus, split
from rtgate.board.spec import BoardSpec, SshOptions
from rtgate.board.ssh import SshSession
from rtgate.errors import InfraError, InputError
from rtgate.result import Board as ResultBoard
from rtgate.result import load_result

SLOT_MARK = ".rtgate-slot"
"""Marks a modules directory rtgate wrote, so it never overwrites a kernel someone installed."""


class Rpi5Board(Board):
    def __init__(self, spec: BoardSpec, workdir: Path) -> None:
        super().__init__(spec)
        assert isinstance(spec.options, SshOptions)
        self.opts: SshOptions = spec.options
        self.workdir = workdir
        self.ssh = SshSession(self.opts, workdir / "ssh.log")
        self.known_good: str | None = None
        self.config_sha: str | None = None
        self.tried = False
        self.console = Console(stderr=True)

    def _fw(self, name: str = "") -> str:
        return f"{self.opts.firmware_dir.rstrip('/')}/{name}" if name else self.opts.firmware_dir

    def _read(self, name: str) -> bytes:
        return self.ssh.run(f"cat {shlex.quote(self._fw(name))}").stdout

    def _rm(self, path: str) -> str:
        return self.ssh.root(f"rm -rf {shlex.quote(path)}")

    # deploy ---------------------------------------------------------------------------------

    def deploy(self, kernel: KernelArtifacts | None) -> None:
        if kernel is None:
            raise InputError(f"board {self.spec.name!r} needs a kernel build to deploy "
                             "(rtgate kernel build --board rpi5)")
        self.kernel = kernel
        self.known_good = self.ssh.output("uname -r")
        config = self._read("config.txt")
        self.config_sha = hashlib.sha256(config).hexdigest()
        slot = self._fw(self.opts.slot)
        files: dict[str, Path | bytes] = {self.opts.kernel_image: kernel.image}
        if kernel.dtbs is not None:
            # The firmware looks for DTBs at os_prefix/ and overlays at os_prefix/overlays/.
            for dtb in sorted(kernel.dtbs.rglob("*.dtb")):
                files[dtb.name] = dtb
            for overlay in sorted(kernel.dtbs.rglob("overlays/*")):
                files[f"overlays/{overlay.name}"] = overlay
        # os_prefix applies to cmdline.txt too: the slot boots with the known-good command line.
        files["cmdline.txt"] = self._read("cmdline.txt")
        self.ssh.run(self._rm(slot))
        self.ssh.put_tree(files, slot)
        if kernel.modules is not None:
            self._deploy_modules(kernel)
        tryboot = config.rstrip(b"\n") + (
            f"\n\n# rtgate: one-shot boot of {kernel.release} from the side slot\n"
            f"[all]\nos_prefix={self.opts.slot}/\nkernel={self.opts.kernel_image}\n").encode()
        self.ssh.put_tree({"tryboot.txt": tryboot}, self._fw())

    def _deploy_modules(self, kernel: KernelArtifacts) -> None:
        assert kernel.modules is not None
        target = f"{self.opts.modules_dir.rstrip('/')}/{kernel.release}"
        q = shlex.quote(target)
        owner = self.ssh.output(f"if [ -e {q} ]; then ls -a {q}; else echo absent; fi")
        if owner != "absent" and SLOT_MARK not in owner.split():
            raise InputError(f"{self.ssh.target}:{target} exists and was not written by rtgate: "
                             "refusing to overwrite an installed kernel's modules",
                             path=kernel.modules)
        with tempfile.TemporaryDirectory(prefix="rtgate-modules-") as tmp:
            with tarfile.open(kernel.modules) as tar:
                tarsafe.extract(tar, Path(tmp))
            found = [p for p in Path(tmp).rglob(kernel.release) if p.parent.name == "modules"]
            if not found:
                raise InputError(f"no lib/modules/{kernel.release} in the archive",
                                 path=kernel.modules)
            files: dict[str, Path | bytes] = {
                str(p.relative_to(found[0])): p for p in found[0].rglob("*") if p.is_file()}
            files[SLOT_MARK] = f"{kernel.release}\n".encode()
            self.ssh.run(self._rm(target))
            self.ssh.put_tree(files, target)

    # boot / restore -------------------------------------------------------------------------

    def _reboot(self, command: str, what: str) -> None:
        """Reboot with ``command`` and wait until the board answers from a new boot."""
        before = self.ssh.output(self.opts.boot_id_command)
        # The connection usually drops while the command runs: its status tells nothing.
        self.ssh.run(self.ssh.root(command), check=False, timeout_s=60)
        deadline = time.monotonic() + self.opts.boot_timeout_s
        with self.console.status(f"{self.spec.name}: {what}: waiting for a new boot (up to "
                                 f"{self.opts.boot_timeout_s:g} s)"):
            while self.ssh.reachable(self.opts.boot_id_command) in (None, before):
                if time.monotonic() > deadline:
                    raise InfraError(
                        f"{self.spec.name} did not come back within "
                        f"{self.opts.boot_timeout_s:g} s after `{command}` ({what}); config.txt "
                        "was not touched, so a power cycle boots the known-good kernel; session "
                        "log kept", path=self.ssh.log)
                time.sleep(self.opts.poll_interval_s)

    def boot(self) -> str:
        if self.kernel is None:
            raise InputError("deploy a kernel before booting")
        self.tried = True
        self._reboot(self.opts.reboot_tryboot, "tryboot")
        running = self.ssh.output("uname -r"), self.ssh.output("uname -v")
        if problem := self.kernel.mismatch(*running):
            raise InfraError(f"{self.spec.name} after tryboot: {problem}; session log kept",
                             path=self.ssh.log)
        return running[0]

    def restore(self) -> None:
        if not self.tried:
            return
        if self.ssh.reachable() is None:
            raise InfraError(f"{self.spec.name} is unreachable: power-cycle it (tryboot is "
                             "one-shot, it comes back on config.txt)", path=self.ssh.log)
        assert self.known_good is not None
        self.ssh.run(self.ssh.root(f"rm -f {shlex.quote(self._fw('tryboot.txt'))}"))
        self._reboot(self.opts.reboot_normal, "restore")
        self.tried = False
        if (release := self.ssh.output("uname -r")) != self.known_good:
            raise InfraError(f"{self.spec.name} restored to release {release!r}, expected the "
                             f"known-good {self.known_good!r}; session log kept",
                             path=self.ssh.log)
        if hashlib.sha256(self._read("config.txt")).hexdigest() != self.config_sha:
            raise InfraError("config.txt changed while rtgate used the board", path=self.ssh.log)

    def close(self) -> None:
        self.ssh.close()

    # run / collect --------------------------------------------------------------------------

    def _wait_listening(self, port: int) -> None:
        pattern = f"^ *[0-9]+: [0-9A-F]+:{port:04X} [0-9A-F]+:[0-9A-F]+ 0A"
        deadline = time.monotonic() + LISTEN_TIMEOUT_S + 30
        while time.monotonic() < deadline:
            if self.ssh.run(f"grep -qE '{pattern}' /proc/net/tcp /proc/net/tcp6",
                            check=False).returncode == 0:
                return
            time.sleep(0.5)
        raise InfraError(f"nothing listens on {self.spec.name}:{port} for the peer's loads",
                         path=self.ssh.log)

    def run(self, scenario: str, duration_s: int, out: Path, *, flavor: str | None = None,
            scale: float | None = None) -> RawRun:
        spec, _ = load_scenario(scenario)
        on_board, on_peer = split(spec, self.opts.peer, self.opts.peer.board_port)
        remote = self.opts.remote_out.rstrip("/")
        self.ssh.run(f"rm -rf {shlex.quote(remote)} && mkdir -p {shlex.quote(remote)}")
        scenario_yml = yaml.safe_dump(on_board.model_dump(exclude_none=True), sort_keys=False)
        self.ssh.put_tree({f"{spec.name}.yml": scenario_yml.encode()}, remote)
        command = self.opts.bench_command.format(
            scenario=shlex.quote(f"{remote}/{spec.name}.yml"), duration=duration_s,
            out=shlex.quote(f"{remote}/out"))
        if scale is not None:
            command += f" --scale {scale:g}"
        if flavor is not None:
            command += f" --flavor {shlex.quote(flavor)}"
        out.mkdir(parents=True, exist_ok=True)
        rawdir = (out / "raw").resolve()
        rawdir.mkdir(exist_ok=True)
        budget = spec.warmup_s + duration_s + self.opts.run_margin_s
        with tempfile.TemporaryDirectory(prefix="rtgate-peer-") as scratch, \
                open(out / "bench.log", "wb") as log:
            params = Params(cpus=controller_cpus(), port=self.opts.peer.board_port, tmpdir=scratch,
                            scale=scale or spec.scale, timeout_s=timeout_for(spec, duration_s))
            peer = PeerLoads(on_peer, params, rawdir, Path(scratch))
            self.ssh.note(f"$ {command}  (in the background)")
            bench = subprocess.Popen(self.ssh.argv(command), stdout=log, stderr=log,
                                     stdin=subprocess.DEVNULL)
            status = self.console.status(f"{self.spec.name}: {spec.name}: rtgate bench "
                                         f"({spec.warmup_s:g} s warm-up + {duration_s} s)")
            try:
                status.start()
                if peer.planned:
                    self._wait_listening(self.opts.peer.board_port)
                    peer.start()
                deadline = time.monotonic() + budget
                while (rc := bench.poll()) is None:
                    if time.monotonic() > deadline:
                        raise InfraError(f"`rtgate bench` on {self.spec.name} still running "
                                         f"after {budget:g} s; its log kept",
                                         path=out / "bench.log")
                    peer.watch()
                    time.sleep(0.2)
            finally:
                status.stop()
                peer.stop()
                if bench.poll() is None:
                    bench.kill()
        self.ssh.note(f"  bench exit {rc}")
        if rc == 255:
            raise InfraError(f"lost {self.spec.name} during the run", path=out / "bench.log")
        self.ssh.get_tree(f"{remote}/out", out)
        return RawRun(out=out, scenario=spec.name, flavor=flavor, run_id="",
                      files={"peer": peer, "bench_rc": rc})

    def collect(self, raw: RawRun) -> Measurement:
        path = raw.out / "result.json"
        if not path.is_file():
            raise InfraError(f"`rtgate bench` on {self.spec.name} wrote no result (exit "
                             f"{raw.files.get('bench_rc')}); see bench.log", path=raw.out)
        result = load_result(path)
        peer: PeerLoads = raw.files["peer"]
        kernel = result.kernel.model_copy(update={
            "flavor": raw.flavor or (self.kernel.flavor if self.kernel else None)
            or result.kernel.flavor})
        result = result.model_copy(update={
            "board": ResultBoard(name=self.spec.name, virtual=self.virtual), "kernel": kernel})
        end = datetime.fromisoformat(result.end) if result.end else None
        result = LoadReport(peer.records(end)).apply(result)
        result.write(path)
        return Measurement(result=result, result_path=path, raw_dir=raw.out / "raw")
