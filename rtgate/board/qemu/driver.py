"""The QEMU virtual board: the built Image + rtgate's initramfs on qemu-system-aarch64 (TCG).

Boot waits for the guest's ``RTGATE-READY`` line, then asks the guest to describe itself
(``uname -r``/``-v``, which must be the built kernel's; CPUs; its cyclictest's --help, so the
command line is built for the guest's cyclictest, not the host's). A run sends the scenario as a
shell script, starts the peer's loads on the host when the guest's servers listen, and receives
the raw files over the console. Everything the guest printed is in ``console.log``.
"""

from __future__ import annotations

import math
import shutil
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from rich.console import Console

from rtgate import tools
from rtgate.board.base import BoardDriver, KernelArtifacts
from rtgate.board.peer import PeerLoads, controller_cpus, split
from rtgate.board.qemu import guestscript, initramfs
from rtgate.board.qemu.console import SerialConsole
from rtgate.board.qemu.guestenv import (
    FACTS_CAP,
    WIRE_CAP,
    GuestFacts,
    board_records,
    note,
    noted,
    on_controller,
    read_log,
    unpack,
)
from rtgate.board.rawrun import PeerLoad, RawRun, TuningReadings
from rtgate.board.spec import BoardSpec, QemuOptions
from rtgate.board.tuning import Applied, parse_readback, programs
from rtgate.cyclictest.version import parse_help
from rtgate.errors import InfraError, InputError
from rtgate.harness.loads import free_port
from rtgate.harness.plan import Params, Plan, make_plan, timeout_for
from rtgate.harness.runner import RunLog
from rtgate.harness.scenario import load_scenario
from rtgate.layout import RAW
from rtgate.result import Trace, TuningCheck
from rtgate.trace import autoanalysis, rtla

PROBE_TIMEOUT_S = 30
TUNING_STATE = "/tmp/rtgate-tuning"
POWEROFF_GRACE_S = 10
TRACE_MARGIN_S = 120


class QemuBoard(BoardDriver):
    def __init__(self, spec: BoardSpec, workdir: Path) -> None:
        super().__init__(spec)
        assert isinstance(spec.options, QemuOptions)
        self.opts: QemuOptions = spec.options
        self.workdir = workdir
        self.console: SerialConsole | None = None
        self.initrd: initramfs.Initramfs | None = None
        self.facts: GuestFacts | None = None
        self.host_port = 0
        self.idle = False
        """The guest waits for a script (it printed RTGATE-READY after the last one)."""
        self.tuning_checks: list[TuningCheck] = []
        self._status = Console(stderr=True)

    @property
    def console_log(self) -> Path:
        return self.workdir / "console.log"

    @property
    def smp(self) -> int:
        # More vCPUs than host CPUs would only measure the emulator's time-slicing.
        return min(self.opts.smp, controller_cpus())

    def deploy(self, kernel: KernelArtifacts | None) -> None:
        if kernel is None:
            raise InputError(f"board {self.spec.name!r} has no kernel of its own: give a kernel "
                             "build (rtgate kernel build --board qemu-arm64)")
        self.kernel = kernel
        with self._status.status("qemu-arm64: preparing the initramfs (Debian arm64 packages)"):
            tracer = rtla.build("arm64")
            self.initrd = initramfs.build([*self.opts.packages, *rtla.RUNTIME_PACKAGES],
                                          self.opts.skip_packages,
                                          extra={"usr/bin/rtla": tracer.path})

    @property
    def tuned(self) -> Applied | None:
        return Applied(self.profile, self.spec.name, self.smp) if self.profile else None

    def argv(self) -> list[str]:
        assert self.kernel is not None and self.initrd is not None
        append = [f"console={self.opts.console}", "rdinit=/init", *self.opts.append,
                  *(self.tuned.boot_args() if self.tuned else [])]
        return [
            self.opts.binary, "-M", self.opts.machine, "-cpu", self.opts.cpu,
            "-m", self.opts.memory, "-smp", str(self.smp), "-accel", "tcg",
            "-nodefaults", "-no-user-config", "-display", "none", "-monitor", "none",
            "-serial", "stdio", "-no-reboot",
            # restrict=on: the kernel under test reaches nothing, neither the host (10.0.2.2
            # is the controller's loopback) nor what the controller reaches; the one way in is
            # the forward to the guest's iperf3 server, which the host's peer connects to.
            # Control stays on the serial console.
            "-netdev", f"user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:{self.host_port}-:"
                       f"{self.opts.peer.board_port}",
            # No option ROM: it only serves PXE boot, and -kernel boots without it. The ROM file
            # is in ipxe-qemu, which qemu-system-arm merely recommends: a fresh install lacks it.
            "-device", "virtio-net-pci,netdev=n0,romfile=",
            "-kernel", str(self.kernel.image), "-initrd", str(self.initrd.path),
            "-append", " ".join(append),
        ]

    def boot(self) -> str:
        if self.kernel is None:
            raise InputError("deploy a kernel before booting")
        self.close()
        self.console_log.unlink(missing_ok=True)
        self.host_port = free_port()
        self.console = SerialConsole(self.argv(), self.console_log)
        deadline = time.monotonic() + self.opts.boot_timeout_s
        with self._status.status(f"{self.spec.name}: booting {self.kernel.release}"):
            self.console.expect("RTGATE-READY", deadline)
        self.idle = True
        self.facts = GuestFacts.from_tar(self._exchange(guestscript.probe(), PROBE_TIMEOUT_S))
        if problem := self.kernel.mismatch(self.facts.get("uname-r"), self.facts.get("uname-v")):
            self.close()
            raise InfraError(f"{problem}; console log kept", path=self.console_log)
        if self.tuned:
            # A fresh guest every boot: the run-time writes need no undo, only a read-back.
            self.tuning_checks = self.tuned.verify(
                self._readback(self.tuned.apply_script(TUNING_STATE)), "boot")
        return self.kernel.release

    def _readback(self, before: str = "", name: str = "tuning") -> dict[str, list[str]]:
        assert self.tuned is not None
        script = (f"rm -rf {guestscript.META} && mkdir -p {guestscript.META}\n{before}"
                  f"{{\n{self.tuned.readback_script(TUNING_STATE)}}} >{guestscript.META}/{name}\n"
                  + guestscript.send("meta"))
        return parse_readback(GuestFacts.from_tar(self._exchange(script, PROBE_TIMEOUT_S))
                              .files.get(name, ""))

    def _exchange(self, script: str, timeout_s: float) -> bytes:
        """Run a script that only sends files back; return its tar.gz."""
        assert self.console is not None
        deadline = time.monotonic() + timeout_s
        self.idle = False
        self.console.send_script(script)
        self.console.expect("RTGATE-BEGIN", deadline)
        return self._receive(deadline)

    def _receive(self, deadline: float) -> bytes:
        """The files after RTGATE-BEGIN, then the guest's return to waiting for a script."""
        assert self.console is not None
        data = self.console.payload(deadline, WIRE_CAP)
        self.console.expect("RTGATE-READY", deadline)
        self.idle = True
        return data

    def _plans(self, scenario_ref: str, duration_s: int, scale: float | None,
               scratch: Path, rawdir: Path) -> tuple[Plan, PeerLoads]:
        assert self.facts is not None
        scenario, source = load_scenario(scenario_ref)
        on_board, on_peer = split(scenario, self.opts.peer, self.host_port)
        if self.tuned:
            on_board = self.tuned.pin(on_board)
        if self.opts.interval_us:
            # Appended: cyclictest, like rtgate's command builder, keeps the last -i given.
            test = on_board.cyclictest
            on_board = on_board.model_copy(update={"cyclictest": test.model_copy(
                update={"args": [*test.args, f"-i{self.opts.interval_us}"]})})
        common = {"scale": scale or scenario.scale,
                  "timeout_s": timeout_for(scenario, duration_s)}
        guest = Params(cpus=self.facts.cpus, port=self.opts.peer.board_port,
                       tmpdir=guestscript.SCRATCH, **common)
        plan = make_plan(on_board, source, parse_help(self.facts.cyclictest_help),
                         duration_s=duration_s, params=guest, outdir=guestscript.RAW)
        peer = Params(cpus=controller_cpus(), port=self.host_port, tmpdir=str(scratch), **common)
        return plan, PeerLoads(on_peer, peer, rawdir, scratch)

    def run(self, scenario: str, duration_s: int, out: Path, *, flavor: str | None = None,
            scale: float | None = None) -> RawRun:
        if self.console is None or self.facts is None:
            raise InputError("boot the board before running a scenario")
        rawdir = (out / RAW).resolve()
        shutil.rmtree(rawdir, ignore_errors=True)
        rawdir.mkdir(parents=True)
        with tempfile.TemporaryDirectory(prefix="rtgate-peer-") as scratch:
            plan, peer = self._plans(scenario, duration_s, scale, Path(scratch), rawdir)
            run_log = RunLog()
            data = self._drive(plan, peer, run_log)
        unpack(data, out)
        return self._left(out, plan, run_log, peer.ended(), flavor)

    def _left(self, out: Path, plan: Plan, run_log: RunLog, peer_loads: list[PeerLoad],
              flavor: str | None) -> RawRun:
        """What the guest's run left in ``out`` (raw/, meta/, state/) and the controller saw,
        with the tuning read back at its end; an InfraError for what the guest reported."""
        rawdir = (out / RAW).resolve()
        state = out / "state"
        infra = state / "infra"
        if infra.is_file():
            raise InfraError(f"in the guest: {note(infra).strip()}", path=infra)
        tracers = state / "tracers"
        tracer = tools.get(plan.tool).tracer
        if tracer and tracers.is_file() and (
                why := autoanalysis.lacking(note(tracers, FACTS_CAP), "the guest kernel", tracer)):
            raise InfraError(f"scenario {plan.scenario!r} measures with {plan.tool}: {why}",
                             path=self.console_log)
        read_log(run_log, plan, state)
        facts = self.facts
        assert facts is not None  # booted, checked above
        tuning = None
        if self.tuned:
            tuning = TuningReadings(
                profile=self.tuned.profile, cpus=self.tuned.cpus, boot=self.tuning_checks,
                during=parse_readback(note(state / "tuning-run", FACTS_CAP)),
                end=self._readback(name="tuning-end"), programs=programs(plan.loads))
        if (out / "console.log").resolve() != self.console_log.resolve():
            shutil.copyfile(self.console_log, out / "console.log")
        return RawRun(out=out, board=self.spec.name, virtual=True,
                      plan=on_controller(plan, rawdir),
                      flavor=flavor or (self.kernel.flavor if self.kernel else None),
                      log=run_log, environment=facts.environment(self.spec, self.smp),
                      cyclictest_version=facts.cyclictest_version,
                      rtla_version=facts.get("rtla-version") or None,
                      loads=board_records(plan, state), peer_loads=peer_loads, tuning=tuning)

    def trace(self, scenario: str, threshold_us: float, cap_s: int, out: Path, *,
              scale: float | None = None) -> Trace:
        """A follow-up run under the scenario's loads with rtla timerlat armed to stop at
        ``threshold_us``, ending at the first breach or after ``cap_s``; its files land in
        ``out/raw/trace-*`` beside the measurement's, which stays untouched."""
        if self.console is None or self.facts is None:
            raise InputError("boot the board before tracing")
        rawdir = (out / RAW).resolve()
        with tempfile.TemporaryDirectory(prefix="rtgate-trace-") as tmp:
            scratch, staging = Path(tmp) / "peer", Path(tmp) / "run"
            (staging / RAW).mkdir(parents=True)
            scratch.mkdir()
            # The margin: the analysis, saving the trace and sending it over the console.
            plan, peer = self._plans(scenario, cap_s + TRACE_MARGIN_S, scale, scratch,
                                     staging / RAW)
            tracer = autoanalysis.command(math.ceil(threshold_us), cap_s)
            unpack(self._drive(plan, peer, RunLog(), tracer=tracer), staging)
            names = []
            for path in sorted((staging / RAW).iterdir()):
                shutil.move(path, rawdir / f"trace-{path.name}")
                names.append(f"raw/trace-{path.name}")
            state = staging / "state"
            tracers = state / "tracers"
            return autoanalysis.trace(
                rawdir / "trace-tracer.stdout", rawdir / "trace-tracer.stderr",
                noted(state / "tracer-rc"), threshold_us=threshold_us, cap_s=cap_s,
                version=self.facts.get("rtla-version") or None, raw=names,
                tracers=note(tracers, FACTS_CAP) if tracers.is_file() else None)

    def _drive(self, plan: Plan, peer: PeerLoads, run_log: RunLog,
               tracer: list[str] | None = None) -> bytes:
        """Send the run script (cyclictest's, or ``tracer``'s) and follow its markers; the
        peer's loads always stop."""
        assert self.console is not None
        guest_loads = [ld.name for ld in plan.loads]
        budget = plan.warmup_s + plan.duration_s + self.opts.run_margin_s
        deadline = time.monotonic() + budget
        self.idle = False
        # The tasks' real affinities, sampled once loads and cyclictest run.
        sampler = (f"( sleep {plan.warmup_s + 1:g}; mkdir -p {guestscript.STATE}; {{\n"
                   f"{self.tuned.readback_script(tasks=True)}}} >{guestscript.STATE}/tuning-run"
                   " ) &\n") if self.tuned and not tracer else ""
        self.console.send_script(sampler + guestscript.render(plan, guest_loads, tracer=tracer))
        try:
            with self._status.status(f"{self.spec.name}: {plan.scenario}: starting loads") as st:
                while True:
                    marker = self.console.next_marker(deadline, f"the end of {plan.scenario}")
                    if marker.startswith("RTGATE-LOADS-UP"):
                        peer.start()
                        st.update(f"{self.spec.name}: {plan.scenario}: warm-up "
                                  f"{plan.warmup_s:g} s")
                    elif marker.startswith("RTGATE-MEASURE-START"):
                        run_log.start = datetime.now(UTC)
                        st.update(f"{self.spec.name}: {plan.scenario}: measuring "
                                  f"{plan.duration_s} s")
                    elif marker.startswith("RTGATE-MEASURE-END"):
                        run_log.end = datetime.now(UTC)
                        peer.stop()
                        st.update(f"{self.spec.name}: {plan.scenario}: collecting")
                    elif marker.startswith("RTGATE-BEGIN"):
                        return self._receive(deadline)
        finally:
            peer.stop()

    def restore(self) -> None:
        """Power the guest off: the next boot starts from the pristine image and initramfs."""
        if self.console is not None and self.idle and self.console.proc.poll() is None:
            try:
                self.console.send("RTGATE-POWEROFF\n")
                self.console.close(grace_s=POWEROFF_GRACE_S)
            except InfraError:
                pass
        self.close()

    def close(self) -> None:
        """Stop the emulator now (a guest that is not idle would not read a poweroff)."""
        if self.console is not None:
            self.console.close(grace_s=0)
            self.console = None
        self.idle = False
