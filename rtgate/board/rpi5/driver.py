"""The Raspberry Pi 5 over SSH, booting the kernel under test with the firmware's one-shot tryboot.

The known-good boot files are never written: the test kernel goes into a side slot
(rtgate.board.rpi5.slot) and ``reboot '0 tryboot'`` boots it once (rtgate.board.rpi5.boot); a
crash, a hang caught by the watchdog, or any later reset comes back on ``config.txt``. rtgate
runs on a controller host, because a job cannot survive its own machine rebooting; the board
runs ``rtgate bench`` and the controller is the iperf3 peer (rtgate.board.rpi5.remote).

The board runs the kernel under test, so nothing it says is taken on trust: the controller
computes the result from the raw cyclictest files it pulls (rtgate.board.rpi5.claims), and
checks the board's tools against the sha256s pinned in the board file before every deploy and
every run (rtgate.board.rpi5.digests).

``--trace-on-breach`` is cyclictest's breaktrace on the board (rtgate.trace.breaktrace, what the
``local`` board runs): ``bench_command`` with ``--trace-breach US``, as root since it sets up
ftrace, under the measurement's scenario with the peer's loads as measured. The controller
parses the ``raw/trace-*`` files it pulls itself; the board's own reading of them is kept as data
and lends a note only, when the board took no trace (a kernel without tracefs, say).

A tuning profile (rtgate.board.tuning) rides on the same one-shot boot: its kernel words and
firmware lines go into the slot, its run-time writes are undone before the board reboots into
the known-good kernel (rtgate.board.rpi5.tuning).
"""

from __future__ import annotations

import hashlib
import shlex
import shutil
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from rtgate.board.base import BoardDriver, KernelArtifacts
from rtgate.board.evidence import ConsoleCapture
from rtgate.board.localbench import TRACE_READING
from rtgate.board.rawrun import PeerLoad, RawRun, TuningReadings
from rtgate.board.rpi5 import claims, digests, remote, slot, tuning
from rtgate.board.rpi5.boot import CONSOLE_LOG, Reboots, crashed
from rtgate.board.rpi5.session import Pi, RunningKernel
from rtgate.board.spec import BoardSpec
from rtgate.board.tuning import Applied, parse_readback, programs
from rtgate.cyclictest.command import build
from rtgate.errors import InfraError, InputError, KernelCrash
from rtgate.harness.plan import Plan
from rtgate.harness.runner import RunLog
from rtgate.harness.scenario import LoadSpec, load_scenario
from rtgate.layout import RAW
from rtgate.result import Trace, TuningCheck
from rtgate.trace import breaktrace


@dataclass(frozen=True)
class PiRun:
    """What the controller saw of the board's run."""

    plan: Plan
    start: datetime
    end: datetime
    peer_loads: list[PeerLoad]
    board_exit: int
    cyclictest_version: str
    kernel: RunningKernel
    tool_sha256: dict[str, str]
    board_loads: list[LoadSpec]
    privileges: dict[str, str]
    throttled: tuple[int | None, int | None]


class Rpi5Board(BoardDriver):
    def __init__(self, spec: BoardSpec, workdir: Path) -> None:
        super().__init__(spec)
        self.pi = Pi.connect(spec, workdir)
        self.workdir = workdir
        self.known_good: str | None = None
        self.config_sha: str | None = None
        self.tried = False
        self.noted_unpinned = False
        self.tuned: Applied | None = None
        self.tuning_checks: list[TuningCheck] = []
        opts = self.pi.opts
        self.serial = ConsoleCapture(opts.console_command, workdir / CONSOLE_LOG) \
            if opts.console_command else None
        self.reboots = Reboots(self.pi, workdir, self.serial)
        self.test_boot: str | None = None
        """The boot id the kernel under test answered from: its journal is this boot's."""

    def verify_tools(self, when: str) -> dict[str, str]:
        """The board's tools against their pinned digests (rtgate.board.rpi5.digests); which
        are not pinned is noted once per board."""
        found = digests.verify(self.pi, when, note_unpinned=not self.noted_unpinned)
        self.noted_unpinned = True
        return found

    # deploy ---------------------------------------------------------------------------------

    def deploy(self, kernel: KernelArtifacts | None) -> None:
        if kernel is None:
            raise InputError(f"board {self.spec.name!r} needs a kernel build to deploy "
                             "(rtgate kernel build --board rpi5)")
        self.kernel = kernel
        pi = self.pi
        # A cancelled job can leave a test kernel running: back to config.txt's kernel first,
        # and the known-good release read only from a boot verified as such.
        self.reboots.back_to_known_good()
        tuning.undo(pi, leftover=True)
        # Under the known-good kernel: a tool the last kernel under test changed is refused
        # before another one boots.
        self.verify_tools("before deploying")
        self.known_good = pi.ssh.output("uname -r")
        if self.profile:
            # Every CPU the firmware brings up, not nproc's: isolcpus on a known-good command
            # line would hide the isolated ones from this shell's affinity.
            cpus = pi.ssh.output("getconf _NPROCESSORS_ONLN")
            if not cpus.isdigit():
                raise InfraError(f"{self.spec.name}: `getconf _NPROCESSORS_ONLN` answered "
                                 f"{cpus!r}", path=pi.ssh.log)
            self.tuned = Applied(self.profile, self.spec.name, int(cpus))
        self.config_sha = slot.install(pi, kernel, self.tuned)

    # boot / restore -------------------------------------------------------------------------

    def boot(self) -> str:
        if self.kernel is None:
            raise InputError("deploy a kernel before booting")
        pi = self.pi
        self.tried = True
        self.test_boot = None
        self.reboots.clear_pstore()
        if self.serial:
            self.serial.start()
        try:
            self.reboots.reboot(pi.opts.reboot_tryboot, "tryboot")
        except InfraError as exc:
            # Never back: the console (on the controller) is all that can show a crash.
            if found := self.reboots.console_crash():
                raise crashed(found, f"{self.spec.name}: {exc}", pi.ssh.log) from exc
            raise
        running = pi.ssh.output("uname -r"), pi.ssh.output("uname -v")
        if self.reboots.on_test_kernel() is None:
            how = "after a power cycle" if self.reboots.power_cycled else "by itself"
            found, kept = self.reboots.evidence(None)
            said = (f"{self.spec.name}: the test kernel {self.kernel.release} did not stay up; "
                    f"the board came back {how} on {running[0]} without the slot's command "
                    "line")
            if found:
                raise crashed(found, f"{said}; {kept}", pi.ssh.log)
            raise InfraError(f"{said} (a hang the watchdog reset, a lost network, a power "
                             f"loss, or a firmware that did not take the slot); {kept}",
                             path=pi.ssh.log)
        self.test_boot = self.reboots.now
        if problem := self.kernel.mismatch(*running):
            raise InfraError(f"{self.spec.name} after tryboot: {problem}; session log kept",
                             path=pi.ssh.log)
        if self.tuned:
            tuning.as_root(pi, self.tuned.apply_script(pi.opts.tuning_state))
            self.tuning_checks = self.tuned.verify(tuning.readback(pi, self.tuned), "boot")
        return running[0]

    def restore(self) -> None:
        if not self.tried:
            return
        pi = self.pi
        if pi.ssh.reachable() is None:
            if not pi.opts.power_cycle_command:
                raise InfraError(f"{self.spec.name} is unreachable: power-cycle it (tryboot is "
                                 "one-shot, it comes back on config.txt)", path=pi.ssh.log)
            self.reboots.power_cycle("the run")
            if not self.reboots.new_boot(None, "after a power cycle"):
                raise InfraError(f"{self.spec.name} is unreachable, also after a power cycle",
                                 path=pi.ssh.log)
        assert self.known_good is not None
        if self.tuned:
            tuning.undo(pi)
        pi.ssh.run(pi.ssh.root(f"rm -f {shlex.quote(pi.fw('tryboot.txt'))}"))
        self.reboots.reboot(pi.opts.reboot_normal, "restore")
        self.tried = False
        if (release := pi.ssh.output("uname -r")) != self.known_good:
            raise InfraError(f"{self.spec.name} restored to release {release!r}, expected the "
                             f"known-good {self.known_good!r}; session log kept",
                             path=pi.ssh.log)
        if self.serial:
            self.serial.stop()
        if hashlib.sha256(pi.read("config.txt")).hexdigest() != self.config_sha:
            raise InfraError("config.txt changed while rtgate used the board", path=pi.ssh.log)

    def close(self) -> None:
        if self.serial:
            self.serial.stop()
        self.pi.ssh.close()

    # run / trace ------------------------------------------------------------------------

    def run(self, scenario: str, duration_s: int, out: Path, *, flavor: str | None = None,
            scale: float | None = None) -> RawRun:
        try:
            ran = self._run(scenario, duration_s, out, flavor=flavor, scale=scale)
        except InfraError as exc:
            raise self._lost(exc) from exc
        return self._left(out, ran, flavor)

    def _left(self, out: Path, ran: PiRun, flavor: str | None) -> RawRun:
        """The run as the controller saw it, with what the board says about it (read, never
        trusted) and the tuning read back at its end."""
        # What the board says about its run: read, never trusted (rtgate.board.rpi5.claims).
        claimed = claims.claims(self.spec.name, out, ran.board_exit)
        env = claims.environment(self.spec.name, out, claimed, ran.kernel,
                                 tool_sha256=ran.tool_sha256, privileges=ran.privileges)
        readings = None
        if self.tuned:
            during = parse_readback((out / "tuning-run.txt").read_text(errors="replace"))
            root = (during.get("root") or [""])[-1]
            # No bench pid read: no task of the run can be told apart, so none counts as pinned.
            readings = TuningReadings(
                profile=self.tuned.profile, cpus=self.tuned.cpus, boot=self.tuning_checks,
                during=during, end=tuning.readback(self.pi, self.tuned),
                programs=programs(ran.board_loads), root=int(root) if root.isdigit() else -1)
        return RawRun(out=out, board=self.spec.name, virtual=self.virtual, plan=ran.plan,
                      flavor=flavor or (self.kernel.flavor if self.kernel else None),
                      log=RunLog(start=ran.start, end=ran.end,
                                 loadavg_before=env.loadavg_before,
                                 loadavg_after=env.loadavg_after,
                                 max_temp_c=env.max_temp_c, max_temp_zone=env.max_temp_zone),
                      environment=env, cyclictest_version=ran.cyclictest_version, strict=True,
                      peer_loads=ran.peer_loads, measured_until="result",
                      claims=claims.lent(claimed), throttled=claims.readings(*ran.throttled),
                      degraded_by=claims.throttling(*ran.throttled),
                      tuning=readings)

    def _lost(self, exc: InfraError) -> InfraError | KernelCrash:
        """What a failure during the run was: the kernel under test's crash when the board
        left the test boot and its evidence (the test boot's journal by its id, pstore, the
        console) says so; else the failure as it was, with what was looked at."""
        pi = self.pi
        if self.test_boot is None:
            return exc
        now = pi.ssh.reachable(pi.opts.boot_id_command)
        if now == self.test_boot:
            return exc  # still the test boot: the failure is what it says
        # Gone or rebooted: the watchdog or the kernel itself brings it back on config.txt; a
        # kernel that still feeds the watchdog stays down until the power is switched (its
        # journal is then read like any other test boot's).
        if now is None and not self.reboots.new_boot(self.test_boot, "after losing it"):
            back = bool(pi.opts.power_cycle_command)
            if back:
                self.reboots.power_cycle("losing it during the run")
                back = self.reboots.new_boot(self.test_boot, "after a power cycle")
            if not back:
                if found := self.reboots.console_crash():
                    return crashed(found, f"{self.spec.name}: {exc}", pi.ssh.log)
                return exc
        if self.reboots.on_test_kernel() is not None:
            return exc
        found, kept = self.reboots.evidence(self.test_boot)
        said = f"{self.spec.name} left the test boot during the run ({exc}); {kept}"
        if found:
            return crashed(found, said, pi.ssh.log)
        return InfraError(said, path=pi.ssh.log)

    def _run(self, scenario: str, duration_s: int, out: Path, *, flavor: str | None,
             scale: float | None) -> PiRun:
        pi = self.pi
        spec, source = load_scenario(scenario)
        # Under the kernel under test, right before it measures.
        tools = self.verify_tools("before measuring")
        caps, running = pi.running()
        trial = pi.check_privileges()
        out.mkdir(parents=True, exist_ok=True)
        rawdir = (out / RAW).resolve()
        # A previous run's files in the same OUT must not pass for this run's.
        shutil.rmtree(rawdir, ignore_errors=True)
        rawdir.mkdir()
        (out / claims.CLAIMS).unlink(missing_ok=True)
        on_board, on_peer, staged = remote.stage(pi, spec, self.tuned)
        # The board's cyclictest writes where the plan says; the controller reads the same
        # files here, so it, not the board, decides which raw files the run must leave.
        plan = Plan(spec.name, source, build(on_board.cyclictest, caps, duration_s=duration_s,
                                             outdir=str(rawdir), source=source),
                    [], spec.warmup_s, duration_s, scale or spec.scale)
        command = remote.bench_command(pi, staged, spec.name, duration_s, scale)
        if flavor is not None:
            command += f" --flavor {shlex.quote(flavor)}"
        # The loads start from the same shell as cyclictest: as root on the sudo route, as the
        # user (without cyclictest's capabilities) otherwise; recorded so.
        command = pi.as_bench(command)
        sampler_sh = None
        if self.tuned:
            pidfile = f"{staged}/{tuning.BENCH_PID}"
            command = f"echo $$ >{shlex.quote(pidfile)}; {command}"
            sampler_sh = f"{staged}/tuning-sample.sh"
            pi.ssh.put_tree({"tuning-sample.sh": self.tuned.sampler_script(
                pidfile, spec.warmup_s + duration_s).encode()}, staged)
        throttled_before = pi.throttled()
        start = datetime.now(UTC)
        rc, peer = remote.drive(pi, command, "rtgate bench", spec, on_peer, duration_s, scale,
                                rawdir, out / "bench.log", sampler_sh=sampler_sh,
                                samples=out / "tuning-run.txt")
        end = datetime.now(UTC)
        throttled_after = pi.throttled()
        if peer.planned and not peer.running:
            # A measurement without the peer's loads is not the scenario's.
            raise InfraError(f"`rtgate bench` on {self.spec.name} ended (exit {rc}) before its "
                             "servers listened for the peer's loads; its log kept",
                             path=out / "bench.log")
        remote.fetch(pi, f"{staged}/out", out, keep_as=claims.CLAIMS)
        return PiRun(plan=plan, start=start, end=end, peer_loads=peer.ended(), board_exit=rc,
                    cyclictest_version=caps.version, kernel=running, tool_sha256=tools,
                    board_loads=on_board.loads,
                    privileges={**trial.facts, "loads_as": trial.facts.get("user", "")},
                    throttled=(throttled_before, throttled_after))

    def trace(self, scenario: str, threshold_us: float, cap_s: int, out: Path, *,
              scale: float | None = None) -> Trace:
        """cyclictest's breaktrace under the measurement's scenario, its board part run by
        ``rtgate bench --trace-breach`` as root (it sets up ftrace), the peer's loads as
        measured. The controller parses the raw trace files it pulls; the board's own reading
        of them lends a note only, when the board took no trace."""
        pi = self.pi
        spec, _ = load_scenario(scenario)
        self.verify_tools("before tracing")
        caps, _ = pi.running()
        if not caps.supports("--tracemark"):
            raise InfraError(f"{self.spec.name}: cyclictest {caps.version} has no --tracemark: "
                             "no breaktrace", path=pi.ssh.log)
        rawdir = (out / RAW).resolve()
        rawdir.mkdir(parents=True, exist_ok=True)
        # A previous trace's files in the same OUT must not pass for this one's.
        for old in rawdir.glob("trace-*"):
            old.unlink()
        (out / claims.TRACE_CLAIMS).unlink(missing_ok=True)
        _, on_peer, staged = remote.stage(pi, spec, self.tuned)
        what = "rtgate bench --trace-breach"
        bench = f"{remote.bench_command(pi, staged, spec.name, cap_s, scale)} --trace-breach " \
                f"{float(threshold_us)!r}"
        command = pi.with_user_path(bench)
        log = out / "trace-bench.log"
        with tempfile.TemporaryDirectory(prefix="rtgate-trace-peer-") as tmp:
            try:
                rc, _ = remote.drive(pi, command, what, spec, on_peer, cap_s, scale, Path(tmp),
                                     log)
            finally:
                # The peer's outputs named like the board's trace files; a failed run's too.
                for path in sorted(Path(tmp).iterdir()):
                    shutil.move(path, rawdir / f"trace-{path.name}")
        remote.fetch(pi, f"{staged}/out", out, claims=TRACE_READING,
                     keep_as=claims.TRACE_CLAIMS, prefix="trace-")
        names = [f"raw/{path.name}" for path in sorted(rawdir.glob("trace-*"))]
        if (rawdir / "trace-cyclictest.stdout").is_file():
            return breaktrace.parsed(rawdir, names, threshold_us=threshold_us, cap_s=cap_s,
                                     version=caps.version)
        if (said := claims.said(out / claims.TRACE_CLAIMS)) is None:
            raise InfraError(f"`{what}` on {self.spec.name} left no trace (exit {rc}); its log "
                             "kept", path=log)
        return Trace(tool=breaktrace.TOOL, version=caps.version, threshold_us=threshold_us,
                     cap_s=cap_s, breached=False, raw=names,
                     note=f"{self.spec.name} took no trace; it says: {said}")
