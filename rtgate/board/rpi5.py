"""The Raspberry Pi 5 over SSH, booting the kernel under test with the firmware's one-shot tryboot.

The known-good boot files are never written. The test kernel goes into a side slot
(``firmware_dir/slot/``: ``kernel_2712.img``, the device trees, ``overlays/``, a copy of
``cmdline.txt``) and its modules into ``/lib/modules/<release>``; ``tryboot.txt`` is the
known-good ``config.txt`` plus ``os_prefix=slot/``. ``reboot '0 tryboot'`` makes the firmware read
``tryboot.txt`` for that one boot only: a crash, a hang caught by the watchdog, or any later
reset comes back on ``config.txt``. rtgate runs on a controller host, because a job cannot
survive its own machine rebooting; the board runs ``rtgate bench`` and the controller is the
iperf3 peer.

The board runs the kernel under test, so nothing it says is taken on trust: the controller
computes the result from the raw cyclictest files it pulls, with the harness's own strict parser
(the board's ``result.json`` lends only descriptions, and can only make a status worse), and checks
the board's tools against the sha256s pinned in the board file before every deploy and every run
(``tooldigest.sh``), so a kernel that changed them on disk is caught before anything is measured
with them again.

``--trace-on-breach`` is cyclictest's breaktrace on the board (rtgate.trace.breaktrace, what the
``local`` board runs): ``bench_command`` with ``--trace-breach US``, as root since it sets up
ftrace, under the measurement's scenario with the peer's loads as measured. The controller
parses the ``raw/trace-*`` files it pulls itself; the board's own reading of them is kept as data
and lends a note only, when the board took no trace (a kernel without tracefs, say).

A tuning profile (rtgate.board.tuning) rides on the same one-shot boot: its kernel words go into
the slot's copy of ``cmdline.txt`` and its firmware lines into ``tryboot.txt``, so a tuned boot
that goes wrong also falls back to the untouched known-good files. Its run-time writes are the
shell snippets every board runs, sent over SSH as root; the old values wait in
``options.tuning_state`` (a tmpfs: a reboot undoes the writes and drops them). They are put back
before the board reboots into the known-good kernel, and at the next deploy when a crashed run
left them behind.
"""

from __future__ import annotations

import hashlib
import re
import shlex
import shutil
import subprocess
import tarfile
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import yaml
from rich.console import Console

from rtgate.bench.assemble import RunInfo, assemble
from rtgate.bench.environment import preempt_rt
from rtgate.bench.loads import LISTEN_TIMEOUT_S
from rtgate.bench.plan import Params, Plan, timeout_for
from rtgate.bench.run import TRACE_READING
from rtgate.bench.runner import RunLog
from rtgate.bench.scenario import Scenario, load_scenario
from rtgate.board import tarsafe, throttle
from rtgate.board.base import BoardDriver, KernelArtifacts, MeasuredRun
from rtgate.board.evidence import LOG_CAP, ConsoleCapture, console_files, first_panic
from rtgate.board.loadreport import LoadReport
from rtgate.board.peer import PeerLoads, controller_cpus, peer_records, split
from rtgate.board.privileges import TRIAL, Trial, judge
from rtgate.board.rawrun import RawRun, RunningKernel
from rtgate.board.spec import BoardSpec, SshOptions, board_path
from rtgate.board.ssh import SSH_FAILED, SshSession
from rtgate.board.tuning import Applied, parse_readback, programs, recorded
from rtgate.cyclictest.command import build
from rtgate.cyclictest.version import Capabilities, parse_help
from rtgate.errors import InfraError, InputError
from rtgate.layout import RAW, RESULT
from rtgate.result import Result, Status, Trace, TuningCheck, load_result
from rtgate.trace import breaktrace

SLOT_MARK = ".rtgate-slot"
SLOT_WORD = "rtgate.slot"
"""On the slot's command line: a boot whose /proc/cmdline has it runs a test kernel (a dotted
word is a module parameter, which the kernel keeps from init)."""
EVIDENCE = "previous-boot"
"""Under the work directory: the previous boot's kernel log, pulled after a fallback."""
CONSOLE_LOG = "console.log"
"""Marks a modules directory rtgate wrote, so it never overwrites a kernel someone installed."""
TOOL_DIGEST = Path(__file__).with_name("tooldigest.sh")
TOOLS = ("rtgate", "cyclictest", "stress-ng", "iperf3")
"""What a board measures with; each is checked when pinned, and named in a note when not."""
CLAIMS = "bench-claims.json"
"""The board's own result.json, kept as data beside the controller's result (never judged)."""
TRACE_CLAIMS = "trace-claims.json"
"""The board's own reading of its trace run, kept as data; only its note is ever shown."""
SAID_CHARS = 300
"""Of that note, shown in the failure: one line, this long at most."""
_DIGEST_LINE = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._+-]*): ([0-9a-f]{64})\s+# (.*)$")
_DIGEST_MISSING = re.compile(r"^\s*# ([A-Za-z0-9][A-Za-z0-9._+-]*): (.*)$")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_WORSE: dict[Status, int] = {"complete": 0, "degraded": 1, "partial": 2}
BENCH_PID = "bench.pid"
"""The shell that runs bench_command on the board: the tasks checked for pinning descend from it."""


@dataclass(frozen=True)
class Digest:
    sha256: str | None
    where: str
    """The file or environment digested, or why there is no digest."""


class Rpi5Board(BoardDriver):
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
        self.noted_unpinned = False
        self.tuned: Applied | None = None
        self.tuning_checks: list[TuningCheck] = []
        self.serial = ConsoleCapture(self.opts.console_command, workdir / CONSOLE_LOG) \
            if self.opts.console_command else None
        self.power_cycled = False

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
        # A cancelled job can leave a test kernel running: back to config.txt's kernel first,
        # and the known-good release read only from a boot verified as such.
        self._back_to_known_good()
        self._undo_tuning(leftover=True)
        # Under the known-good kernel: a tool the last kernel under test changed is refused
        # before another one boots.
        self.verify_tools("before deploying")
        self.known_good = self.ssh.output("uname -r")
        if self.profile:
            # Every CPU the firmware brings up, not nproc's: isolcpus on a known-good command
            # line would hide the isolated ones from this shell's affinity.
            cpus = self.ssh.output("getconf _NPROCESSORS_ONLN")
            if not cpus.isdigit():
                raise InfraError(f"{self.spec.name}: `getconf _NPROCESSORS_ONLN` answered "
                                 f"{cpus!r}", path=self.ssh.log)
            self.tuned = Applied(self.profile, self.spec.name, int(cpus))
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
            # With os_prefix the firmware reads <prefix>overlays/ only when it holds a README
            # (else the known-good overlays load); a kernel build has none: the known-good one.
            readme = self.ssh.run(f"cat {shlex.quote(self._fw('overlays/README'))}",
                                  check=False).stdout
            files["overlays/README"] = readme or \
                f"Overlays of the rtgate test kernel {kernel.release}.\n".encode()
        # os_prefix applies to cmdline.txt too: the slot boots with the known-good command line,
        # plus the profile's words.
        cmdline = self._read("cmdline.txt")
        words = [*(self.tuned.boot_args() if self.tuned and self.tuned.boot else []),
                 f"{SLOT_WORD}={self.opts.slot}"]
        files["cmdline.txt"] = with_words(cmdline, words)
        self.ssh.run(self._rm(slot))
        self.ssh.put_tree(files, slot)
        if kernel.modules is not None:
            self._deploy_modules(kernel)
        firmware = "".join(f"{line}\n" for line in self.tuned.firmware_lines()) \
            if self.tuned else ""
        tryboot = config.rstrip(b"\n") + (
            f"\n\n# rtgate: one-shot boot of {kernel.release} from the side slot\n"
            f"[all]\nos_prefix={self.opts.slot}/\nkernel={self.opts.kernel_image}\n"
            + (f"# rtgate: tuning profile {self.tuned.profile.name}\n{firmware}"
               if firmware and self.tuned else "")).encode()
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
        """Reboot with ``command`` and wait until the board answers from a new boot; power-cycle
        it (``power_cycle_command``) when it does not."""
        before = self.ssh.output(self.opts.boot_id_command)
        # The connection usually drops while the command runs: its status tells nothing.
        self.ssh.run(self.ssh.root(command), check=False, timeout_s=60)
        if self._new_boot(before, what):
            return
        after = f"`{command}` ({what})"
        if not self.opts.power_cycle_command:
            raise InfraError(
                f"{self.spec.name} did not come back within {self.opts.boot_timeout_s:g} s after "
                f"{after}; config.txt was not touched, so a power cycle boots the known-good "
                "kernel; session log kept", path=self.ssh.log)
        self._power_cycle(after)
        if not self._new_boot(before, "after a power cycle"):
            raise InfraError(f"{self.spec.name} did not come back after {after}, nor after a "
                             f"power cycle (`{self.opts.power_cycle_command}`); session log kept",
                             path=self.ssh.log)

    def _new_boot(self, before: str | None, what: str) -> bool:
        """Whether the board answers from a boot other than ``before`` within the timeout."""
        deadline = time.monotonic() + self.opts.boot_timeout_s
        with self.console.status(f"{self.spec.name}: {what}: waiting for a new boot (up to "
                                 f"{self.opts.boot_timeout_s:g} s)"):
            while self.ssh.reachable(self.opts.boot_id_command) in (None, before):
                if time.monotonic() > deadline:
                    return False
                time.sleep(self.opts.poll_interval_s)
        return True

    def _power_cycle(self, why: str) -> None:
        """``power_cycle_command`` on the controller: the board then boots config.txt."""
        command = self.opts.power_cycle_command
        assert command is not None
        self.console.print(f"rtgate: {self.spec.name} did not come back after {why}: "
                           f"power-cycling it (`{command}`)", markup=False, highlight=False,
                           soft_wrap=True)
        self.ssh.note(f"power cycle (controller): $ {command}")
        try:
            proc = subprocess.run(command, shell=True, capture_output=True, timeout=120,
                                  check=False)
        except subprocess.TimeoutExpired as exc:
            raise InfraError(f"power_cycle_command `{command}` timed out after 120 s",
                             path=self.ssh.log) from exc
        self.ssh.note(f"  exit {proc.returncode} "
                      + (proc.stdout + proc.stderr).decode("utf-8", "replace")[-2000:])
        if proc.returncode != 0:
            raise InfraError(f"power_cycle_command `{command}` failed (exit {proc.returncode});"
                             " power-cycle the board by hand", path=self.ssh.log)
        self.power_cycled = True

    def _on_test_kernel(self) -> str | None:
        """Why the running kernel is a test kernel (the slot's word on its command line, or the
        firmware's tryboot flag), None when it is not."""
        cmdline = self.ssh.output("cat /proc/cmdline").split()
        if any(w.startswith(f"{SLOT_WORD}=") for w in cmdline):
            return f"/proc/cmdline has {SLOT_WORD}="
        flag = self.ssh.output(f"od -An -tx1 {shlex.quote(self.opts.tryboot_flag)} 2>/dev/null "
                               "| tr -d ' \\n'")
        return f"{self.opts.tryboot_flag} says tryboot" if flag.endswith("01") else None

    def _back_to_known_good(self) -> None:
        if (why := self._on_test_kernel()) is None:
            return
        self.console.print(f"rtgate: {self.spec.name} still runs a test kernel ({why}): "
                           "returning it to its known-good kernel first", markup=False,
                           highlight=False, soft_wrap=True)
        self.ssh.run(self.ssh.root(f"rm -f {shlex.quote(self._fw('tryboot.txt'))}"))
        self._reboot(self.opts.reboot_normal, "back to the known-good kernel")
        if (why := self._on_test_kernel()) is not None:
            raise InfraError(f"{self.spec.name} still runs a test kernel after a normal reboot "
                             f"({why}): config.txt may boot the slot; not recording it as "
                             "known-good", path=self.ssh.log)

    def _clear_pstore(self) -> None:
        """Older panic logs out of pstore, so what is there after a fallback is the test
        boot's."""
        q = shlex.quote(self.opts.pstore_dir.rstrip("/"))
        self.ssh.run(self.ssh.root(f"[ -d {q} ] && rm -f {q}/* ; true"), check=False)

    def _evidence(self) -> tuple[str | None, str]:
        """The previous boot's kernel log (pstore, the journal) into the work directory: its
        first panic line (None without one) and where it is kept."""
        where = self.workdir / EVIDENCE
        shutil.rmtree(where, ignore_errors=True)
        where.mkdir(parents=True)
        pstore = self.opts.pstore_dir.rstrip("/")
        if self.ssh.run(self.ssh.root(f"[ -d {shlex.quote(pstore)} ]"),
                        check=False).returncode == 0:
            self.ssh.get_tree(pstore, where / "pstore")
        # Its last LOG_CAP bytes: a kernel that flooded its log does not flood the controller.
        journal = self.ssh.run(
            self.ssh.root(f"( {self.opts.previous_boot_log_command} ) | tail -c {LOG_CAP}"),
            check=False, timeout_s=120)
        (where / "journal-kernel.txt").write_bytes(journal.stdout)
        pstore_files = sorted(p for p in (where / "pstore").rglob("*") if p.is_file()) \
            if (where / "pstore").is_dir() else []
        console = console_files(self.workdir / CONSOLE_LOG) if self.serial else []
        said = first_panic([*pstore_files, where / "journal-kernel.txt", *console])
        lines = journal.stdout.count(b"\n")
        return said, (f"the previous boot's kernel log is kept in {where} ({len(pstore_files)} "
                      f"pstore file(s), {lines} journal line(s)"
                      + (f", the console in {self.workdir / CONSOLE_LOG}" if console else "")
                      + ")" + ("" if said else ", no panic line in it"))

    def boot(self) -> str:
        if self.kernel is None:
            raise InputError("deploy a kernel before booting")
        self.tried = True
        self._clear_pstore()
        if self.serial:
            self.serial.start()
        self._reboot(self.opts.reboot_tryboot, "tryboot")
        running = self.ssh.output("uname -r"), self.ssh.output("uname -v")
        if self._on_test_kernel() is None:
            how = "after a power cycle" if self.power_cycled else "by itself"
            said, kept = self._evidence()
            raise InfraError(
                f"{self.spec.name}: the test kernel {self.kernel.release} did not stay up"
                + (f": {said}" if said else "") + f"; the board came back {how} on "
                f"{running[0]} without the slot's command line (a panic, a hang the watchdog "
                f"reset, a lost network, or a firmware that did not take the slot); {kept}",
                path=self.ssh.log)
        if problem := self.kernel.mismatch(*running):
            raise InfraError(f"{self.spec.name} after tryboot: {problem}; session log kept",
                             path=self.ssh.log)
        if self.tuned:
            self._as_root(self.tuned.apply_script(self.opts.tuning_state))
            self.tuning_checks = self.tuned.verify(self._readback(), "boot")
        return running[0]

    # tuning -----------------------------------------------------------------------------------

    def _as_root(self, script: str) -> str:
        """A tuning script run by the board's sh as root; its stdout."""
        proc = self.ssh.run(self.ssh.root("sh -s"), stdin=script.encode(), check=False)
        if proc.returncode == SSH_FAILED:
            raise InfraError(f"lost {self.spec.name} while tuning it", path=self.ssh.log)
        return proc.stdout.decode("utf-8", "replace")

    def _readback(self) -> dict[str, list[str]]:
        assert self.tuned is not None
        return parse_readback(self._as_root(self.tuned.readback_script(self.opts.tuning_state)))

    def _undo_tuning(self, leftover: bool = False) -> None:
        """Put back the values a profile's run-time writes replaced: this run's, or (at the
        next deploy) those a crashed run left in the state directory."""
        state = shlex.quote(self.opts.tuning_state)
        said = self._as_root(f"[ -d {state} ] && echo leftover\n"
                             + Applied.undo_script(self.opts.tuning_state))
        if leftover and "leftover" in said.split():
            self.console.print(f"rtgate: {self.spec.name}: putting back the run-time settings a "
                               f"previous run left in {self.opts.tuning_state}", markup=False,
                               highlight=False, soft_wrap=True)

    def restore(self) -> None:
        if not self.tried:
            return
        if self.ssh.reachable() is None:
            if not self.opts.power_cycle_command:
                raise InfraError(f"{self.spec.name} is unreachable: power-cycle it (tryboot is "
                                 "one-shot, it comes back on config.txt)", path=self.ssh.log)
            self._power_cycle("the run")
            if not self._new_boot(None, "after a power cycle"):
                raise InfraError(f"{self.spec.name} is unreachable, also after a power cycle",
                                 path=self.ssh.log)
        assert self.known_good is not None
        if self.tuned:
            self._undo_tuning()
        self.ssh.run(self.ssh.root(f"rm -f {shlex.quote(self._fw('tryboot.txt'))}"))
        self._reboot(self.opts.reboot_normal, "restore")
        self.tried = False
        if (release := self.ssh.output("uname -r")) != self.known_good:
            raise InfraError(f"{self.spec.name} restored to release {release!r}, expected the "
                             f"known-good {self.known_good!r}; session log kept",
                             path=self.ssh.log)
        if self.serial:
            self.serial.stop()
        if hashlib.sha256(self._read("config.txt")).hexdigest() != self.config_sha:
            raise InfraError("config.txt changed while rtgate used the board", path=self.ssh.log)

    def close(self) -> None:
        if self.serial:
            self.serial.stop()
        self.ssh.close()

    # tools ------------------------------------------------------------------------------------

    def tool_digests(self) -> dict[str, Digest]:
        """tooldigest.sh's reading of the board's tools, in the shell bench_command runs in."""
        try:
            # The program is the first word that is not a variable assignment (RTGATE_ROOT=…).
            program = next(w for w in shlex.split(self.opts.bench_command)
                           if not _ASSIGNMENT.match(w))
        except (ValueError, StopIteration) as exc:
            raise InputError(f"options.bench_command: no program to run in "
                             f"{self.opts.bench_command!r}", path=board_path(self.spec.name)) \
                from exc
        names = [n for n in dict.fromkeys([*TOOLS, *self.opts.tools]) if n != "rtgate"]
        proc = self.ssh.run(f"sh -s -- {shlex.join([program, *names])}",
                            stdin=TOOL_DIGEST.read_bytes(), timeout_s=600)
        found: dict[str, Digest] = {}
        for line in proc.stdout.decode("utf-8", "replace").splitlines():
            if m := _DIGEST_LINE.match(line):
                found[m.group(1)] = Digest(m.group(2), m.group(3).strip())
            elif m := _DIGEST_MISSING.match(line):
                found[m.group(1)] = Digest(None, m.group(2).strip())
        return found

    def verify_tools(self, when: str) -> dict[str, str]:
        """Refuse a pinned tool whose digest differs (InfraError: the board needs a maintainer,
        not a re-run), note once which are not pinned; the digests measured, for the result."""
        digests = self.tool_digests()
        source = board_path(self.spec.name)
        for name, pinned in self.opts.tools.items():
            got = digests.get(name, Digest(None, "tooldigest.sh did not report it"))
            if got.sha256 is None:
                raise InfraError(f"{self.spec.name} {when}: tool {name!r} is pinned in {source} "
                                 f"but has no digest on the board ({got.where}): refusing to "
                                 "measure", path=self.ssh.log)
            if got.sha256 != pinned:
                raise InfraError(f"{self.spec.name} {when}: tool {name!r} ({got.where}) has "
                                 f"sha256 {got.sha256}, {source} pins {pinned}: refusing to "
                                 "measure with a changed tool (reinstall it; pin a new digest "
                                 "only once you know where it came from)", path=self.ssh.log)
        unpinned = [n for n in TOOLS if n not in self.opts.tools]
        if unpinned and not self.noted_unpinned:
            self.noted_unpinned = True
            self.console.print(f"rtgate: note: {self.spec.name}: tools not pinned, so not "
                               f"checked: {', '.join(unpinned)} (options.tools in {source}; "
                               "docs/rpi5.md shows how to pin them)", markup=False,
                               highlight=False, soft_wrap=True)
        return {n: d.sha256 for n, d in digests.items() if d.sha256 is not None}

    # run / collect --------------------------------------------------------------------------

    def _running(self) -> tuple[Capabilities, RunningKernel]:
        """The booted board's cyclictest and kernel, as the controller reads them: the
        cyclictest's options decide which raw files a run must leave."""
        proc = self.ssh.run("cyclictest --help", check=False)
        if proc.returncode in (127, 255):
            raise InfraError(f"{self.spec.name}: `cyclictest --help` failed with exit "
                             f"{proc.returncode} (not installed, or the board was lost)",
                             path=self.ssh.log)
        caps = parse_help((proc.stdout + proc.stderr).decode("utf-8", "replace"))
        lines = self.ssh.output("uname -r; uname -v; uname -m; "
                                "cat /sys/kernel/realtime 2>/dev/null || true").splitlines()
        if len(lines) < 3:
            raise InfraError(f"{self.spec.name}: uname answered {lines!r}", path=self.ssh.log)
        return caps, RunningKernel(release=lines[0], version=lines[1], machine=lines[2],
                                   realtime=lines[3].strip() if len(lines) > 3 else None)

    def _with_user_path(self, command: str) -> str:
        """``command`` as root with the bench user's PATH: sudo's secure_path may find other
        tools than the ones checked."""
        user_path = self.ssh.output("printf '%s' \"$PATH\"")
        return self.ssh.root(f"PATH={shlex.quote(user_path)}; export PATH; {command}")

    def _as_bench(self, command: str) -> str:
        """``command`` as the bench runs: through sudo on the sudo route, else as the user."""
        if self.opts.measure_privilege == "sudo" and self.opts.sudo:
            return self._with_user_path(command)
        return command

    def trial(self) -> Trial:
        """The real cyclictest tried through the bench's route: what it may do."""
        proc = self.ssh.run(self._as_bench("sh -s"), stdin=TRIAL.encode(), check=False,
                            timeout_s=60)
        if proc.returncode == SSH_FAILED:
            raise InfraError(f"lost {self.spec.name} while trying its privileges",
                             path=self.ssh.log)
        return judge(self.opts.measure_privilege, proc.stdout.decode("utf-8", "replace"),
                     proc.stderr.decode("utf-8", "replace"))

    def check_privileges(self) -> Trial:
        """The trial, before any load starts: a bench user that cannot get SCHED_FIFO 99,
        mlockall or /dev/cpu_dma_latency is refused (InfraError), naming what is missing."""
        trial = self.trial()
        if trial.missing:
            raise InfraError(
                f"{self.spec.name}: the bench cannot measure as {trial.facts.get('user', '?')} "
                f"(measure_privilege: {self.opts.measure_privilege}): missing "
                f"{'; '.join(trial.missing)}; refused before any load started "
                "(docs/rpi5.md, \"Measurement privileges\")", path=self.ssh.log)
        return trial

    def _throttled(self) -> int | None:
        """The firmware's get_throttled now; None on a board without vcgencmd."""
        proc = self.ssh.run(f"{throttle.COMMAND} 2>/dev/null", check=False, timeout_s=30)
        return throttle.parse(proc.stdout.decode("utf-8", "replace"))

    def _wait_listening(self, port: int, bench: subprocess.Popen[bytes]) -> None:
        """Until something listens on the board's ``port``, or ``bench`` ended first."""
        pattern = f"^ *[0-9]+: [0-9A-F]+:{port:04X} [0-9A-F]+:[0-9A-F]+ 0A"
        deadline = time.monotonic() + LISTEN_TIMEOUT_S + 30
        while time.monotonic() < deadline and bench.poll() is None:
            if self.ssh.run(f"grep -qE '{pattern}' /proc/net/tcp /proc/net/tcp6",
                            check=False).returncode == 0:
                return
            time.sleep(0.5)
        if bench.poll() is None:
            raise InfraError(f"nothing listens on {self.spec.name}:{port} for the peer's loads",
                             path=self.ssh.log)

    def _staged(self, spec: Scenario) -> tuple[Scenario, Scenario, str]:
        """(the board's part of the scenario, the controller's part, the board's directory for
        the run): the board's part pinned by a profile and uploaded into that fresh directory."""
        on_board, on_peer = split(spec, self.opts.peer, self.opts.peer.board_port)
        if self.tuned:
            on_board = self.tuned.pin(on_board)  # the controller's loads stay unpinned
        remote = self.opts.remote_out.rstrip("/")
        # Removed as root: a trace run (root) leaves root's files there. out/ is there from the
        # start: a bench that fails before writing any output leaves it empty, not missing.
        self.ssh.run(self._rm(remote))
        self.ssh.run(f"mkdir -p {shlex.quote(remote)}/out")
        scenario_yml = yaml.safe_dump(on_board.model_dump(exclude_none=True), sort_keys=False)
        self.ssh.put_tree({f"{spec.name}.yml": scenario_yml.encode()}, remote)
        return on_board, on_peer, remote

    def _bench(self, remote: str, scenario: str, duration_s: int, scale: float | None) -> str:
        """bench_command for the scenario staged in ``remote``, writing to ``remote``/out."""
        command = self.opts.bench_command.format(
            scenario=shlex.quote(f"{remote}/{scenario}.yml"), duration=duration_s,
            out=shlex.quote(f"{remote}/out"))
        return command + (f" --scale {scale:g}" if scale is not None else "")

    def _drive(self, command: str, what: str, spec: Scenario, on_peer: Scenario,
               duration_s: int, scale: float | None, rawdir: Path, log: Path, *,
               sampler_sh: str | None = None, samples: Path | None = None
               ) -> tuple[int, PeerLoads]:
        """``command`` (``what``) on the board in the background, with the peer's loads against
        it once its servers listen (never, when it ends first; their outputs into ``rawdir``)
        and, given ``sampler_sh``, that script sampling the tasks' affinities into ``samples``;
        its exit status, once it ended within the scenario's warm-up + ``duration_s`` + the run
        margin."""
        budget = spec.warmup_s + duration_s + self.opts.run_margin_s
        sampling = None
        with tempfile.TemporaryDirectory(prefix="rtgate-peer-") as scratch, \
                open(log, "wb") as output:
            params = Params(cpus=controller_cpus(), port=self.opts.peer.board_port, tmpdir=scratch,
                            scale=scale or spec.scale, timeout_s=timeout_for(spec, duration_s))
            peer = PeerLoads(on_peer, params, rawdir, Path(scratch))
            self.ssh.note(f"$ {command}  (in the background)")
            bench = subprocess.Popen(self.ssh.argv(command), stdout=output, stderr=output,
                                     stdin=subprocess.DEVNULL)
            if sampler_sh and samples:
                # The tasks' real affinities, once cyclictest measures.
                with open(samples, "wb") as tasks:
                    sampling = subprocess.Popen(
                        self.ssh.argv(self.ssh.root(f"sh {shlex.quote(sampler_sh)}")),
                        stdout=tasks, stderr=output, stdin=subprocess.DEVNULL)
            status = self.console.status(f"{self.spec.name}: {spec.name}: {what} "
                                         f"({spec.warmup_s:g} s warm-up + {duration_s} s)")
            try:
                status.start()
                if peer.planned:
                    self._wait_listening(self.opts.peer.board_port, bench)
                    if bench.poll() is None:
                        peer.start()
                deadline = time.monotonic() + budget
                while (rc := bench.poll()) is None:
                    if time.monotonic() > deadline:
                        raise InfraError(f"`{what}` on {self.spec.name} still running after "
                                         f"{budget:g} s; its log kept", path=log)
                    peer.watch()
                    time.sleep(0.2)
            finally:
                status.stop()
                peer.stop()
                if bench.poll() is None:
                    bench.kill()
                if sampling is not None:
                    try:
                        sampling.wait(timeout=30)
                    except subprocess.TimeoutExpired:
                        sampling.kill()
        self.ssh.note(f"  bench exit {rc}")
        if rc == SSH_FAILED:
            raise InfraError(f"lost {self.spec.name} during `{what}`", path=log)
        return rc, peer

    def run(self, scenario: str, duration_s: int, out: Path, *, flavor: str | None = None,
            scale: float | None = None) -> RawRun:
        spec, source = load_scenario(scenario)
        # Under the kernel under test, right before it measures.
        tools = self.verify_tools("before measuring")
        caps, running = self._running()
        trial = self.check_privileges()
        out.mkdir(parents=True, exist_ok=True)
        rawdir = (out / RAW).resolve()
        # A previous run's files in the same OUT must not pass for this run's.
        shutil.rmtree(rawdir, ignore_errors=True)
        rawdir.mkdir()
        (out / CLAIMS).unlink(missing_ok=True)
        on_board, on_peer, remote = self._staged(spec)
        # The board's cyclictest writes where the plan says; the controller reads the same
        # files here, so it, not the board, decides which raw files the run must leave.
        plan = Plan(spec.name, source, build(on_board.cyclictest, caps, duration_s=duration_s,
                                             outdir=str(rawdir), source=source),
                    [], spec.warmup_s, duration_s, scale or spec.scale)
        command = self._bench(remote, spec.name, duration_s, scale)
        if flavor is not None:
            command += f" --flavor {shlex.quote(flavor)}"
        # The loads start from the same shell as cyclictest: as root on the sudo route, as the
        # user (without cyclictest's capabilities) otherwise; recorded so.
        command = self._as_bench(command)
        sampler_sh = None
        if self.tuned:
            pidfile = f"{remote}/{BENCH_PID}"
            command = f"echo $$ >{shlex.quote(pidfile)}; {command}"
            sampler_sh = f"{remote}/tuning-sample.sh"
            self.ssh.put_tree({"tuning-sample.sh": sampler(
                self.tuned, pidfile, spec.warmup_s + duration_s).encode()}, remote)
        throttled_before = self._throttled()
        start = datetime.now(UTC)
        rc, peer = self._drive(command, "rtgate bench", spec, on_peer, duration_s, scale, rawdir,
                               out / "bench.log", sampler_sh=sampler_sh,
                               samples=out / "tuning-run.txt")
        end = datetime.now(UTC)
        throttled_after = self._throttled()
        if peer.planned and not peer.running:
            # A measurement without the peer's loads is not the scenario's.
            raise InfraError(f"`rtgate bench` on {self.spec.name} ended (exit {rc}) before its "
                             "servers listened for the peer's loads; its log kept",
                             path=out / "bench.log")
        self._fetch(f"{remote}/out", out)
        return RawRun(out=out, scenario=spec.name, flavor=flavor,
                      run_id=f"{self.spec.name}-{spec.name}-{start:%Y%m%dT%H%M%SZ}",
                      plan=plan, start=start, end=end, peer_loads=peer.ended(), board_exit=rc,
                      cyclictest_version=caps.version, kernel=running, tool_sha256=tools,
                      board_loads=on_board.loads,
                      privileges={**trial.facts, "loads_as": trial.facts.get("user", "")},
                      throttled=[throttled_before, throttled_after])

    def trace(self, scenario: str, threshold_us: float, cap_s: int, out: Path, *,
              scale: float | None = None) -> Trace:
        """cyclictest's breaktrace under the measurement's scenario, its board part run by
        ``rtgate bench --trace-breach`` as root (it sets up ftrace), the peer's loads as
        measured. The controller parses the raw trace files it pulls; the board's own reading
        of them lends a note only, when the board took no trace."""
        spec, _ = load_scenario(scenario)
        self.verify_tools("before tracing")
        caps, _ = self._running()
        if not caps.supports("--tracemark"):
            raise InfraError(f"{self.spec.name}: cyclictest {caps.version} has no --tracemark: "
                             "no breaktrace", path=self.ssh.log)
        rawdir = (out / RAW).resolve()
        rawdir.mkdir(parents=True, exist_ok=True)
        # A previous trace's files in the same OUT must not pass for this one's.
        for old in rawdir.glob("trace-*"):
            old.unlink()
        (out / TRACE_CLAIMS).unlink(missing_ok=True)
        _, on_peer, remote = self._staged(spec)
        what = "rtgate bench --trace-breach"
        bench = f"{self._bench(remote, spec.name, cap_s, scale)} --trace-breach " \
                f"{float(threshold_us)!r}"
        command = self._with_user_path(bench)
        log = out / "trace-bench.log"
        with tempfile.TemporaryDirectory(prefix="rtgate-trace-peer-") as tmp:
            try:
                rc, _ = self._drive(command, what, spec, on_peer, cap_s, scale, Path(tmp), log)
            finally:
                # The peer's outputs named like the board's trace files; a failed run's too.
                for path in sorted(Path(tmp).iterdir()):
                    shutil.move(path, rawdir / f"trace-{path.name}")
        self._fetch(f"{remote}/out", out, claims=TRACE_READING, keep_as=TRACE_CLAIMS,
                    prefix="trace-")
        names = [f"raw/{path.name}" for path in sorted(rawdir.glob("trace-*"))]
        if (rawdir / "trace-cyclictest.stdout").is_file():
            return breaktrace.parsed(rawdir, names, threshold_us=threshold_us, cap_s=cap_s,
                                     version=caps.version)
        if (said := _said(out / TRACE_CLAIMS)) is None:
            raise InfraError(f"`{what}` on {self.spec.name} left no trace (exit {rc}); its log "
                             "kept", path=log)
        return Trace(tool=breaktrace.TOOL, version=caps.version, threshold_us=threshold_us,
                     cap_s=cap_s, breached=False, raw=names,
                     note=f"{self.spec.name} took no trace; it says: {said}")

    def _fetch(self, remote_dir: str, out: Path, *, claims: str = RESULT,
               keep_as: str = CLAIMS, prefix: str = "") -> None:
        """The board's output into OUT: its own account (``claims``) as ``keep_as``, and the
        regular files of its raw/ named ``prefix``… — never over the controller's own files
        there (the peer's outputs, the measurement's)."""
        with tempfile.TemporaryDirectory(prefix="rtgate-board-out-") as tmp:
            staging = Path(tmp)
            self.ssh.get_tree(remote_dir, staging)
            account = staging / claims
            if account.is_file() and not account.is_symlink():
                shutil.move(account, out / keep_as)
            raw = staging / RAW
            for f in sorted(raw.iterdir()) if raw.is_dir() and not raw.is_symlink() else []:
                if f.is_symlink() or not f.is_file() or not f.name.startswith(prefix) \
                        or (out / RAW / f.name).exists():
                    self.ssh.note(f"  not taken from the board: raw/{f.name}")
                    continue
                shutil.move(f, out / RAW / f.name)

    def _claims(self, raw: RawRun) -> Result:
        path = raw.out / CLAIMS
        if not path.is_file():
            raise InfraError(f"`rtgate bench` on {self.spec.name} wrote no result (exit "
                             f"{raw.board_exit}); see bench.log", path=raw.out)
        try:
            return load_result(path)
        except InputError as exc:
            raise InfraError(f"`rtgate bench` on {self.spec.name} wrote an unreadable result: "
                             f"{exc.oneline()}", path=path) from exc

    def collect(self, raw: RawRun) -> MeasuredRun:
        """The result the controller computes from the raw files it pulled (read strictly, all
        together); the board's own result lends descriptions only (see ``_described``)."""
        claims = self._claims(raw)
        plan, running, version = raw.plan, raw.kernel, raw.cyclictest_version
        assert plan is not None and running is not None and version is not None  # run() sets them
        rt = preempt_rt(running.version, running.realtime)
        info = RunInfo(run_id=raw.run_id, board=self.spec.name, virtual=self.virtual,
                       flavor=raw.flavor or (self.kernel.flavor if self.kernel else None)
                       or ("rt" if rt else "stock"), cyclictest_version=version)
        env = {**claims.environment, "kernel_release": running.release,
               "kernel_version": running.version, "machine": running.machine,
               "sys_kernel_realtime": running.realtime, "preempt_rt": rt,
               "tool_sha256": raw.tool_sha256, "privileges": raw.privileges}
        tools = env.get("tools")
        env["tools"] = tools if isinstance(tools, dict) else {}
        run_log = RunLog(start=raw.start, end=raw.end)
        run_log.loadavg_before, run_log.loadavg_after = (env.get("loadavg_before"),
                                                         env.get("loadavg_after"))
        run_log.max_temp_c, run_log.max_temp_zone = env.get("max_temp_c"), env.get("max_temp_zone")
        rawdir = (raw.out / RAW).resolve()
        result = _described(assemble(plan, run_log, env, rawdir, info, strict=True), claims)
        try:
            end = datetime.fromisoformat(result.end) if result.end else None
        except ValueError:
            end = None  # every early exit of the peer's loads then counts: degraded, not a pass
        result = LoadReport(peer_records(raw.peer_loads, end)).apply(result)
        result = _unthrottled(result, *(raw.throttled or [None, None]))
        if self.tuned:
            during = parse_readback((raw.out / "tuning-run.txt").read_text(errors="replace"))
            root = (during.get("root") or [""])[-1]
            # No bench pid read: no task of the run can be told apart, so none counts as pinned.
            checks = [*self.tuning_checks,
                      *self.tuned.verify_tasks(during, programs(raw.board_loads),
                                               root=int(root) if root.isdigit() else -1),
                      *self.tuned.verify(self._readback(), "end")]
            result = recorded(result, self.tuned.record(checks))
        path = result.write(raw.out / RESULT)
        return MeasuredRun(result=result, result_path=path, raw_dir=rawdir)


def _said(path: Path) -> str | None:
    """The note of the board's trace reading (its first line, cut short), None without one."""
    try:
        note = Trace.model_validate_json(path.read_bytes()).note
    except (OSError, ValueError):
        return None
    first = note.strip().splitlines()[0] if note and note.strip() else ""
    return first[:SAID_CHARS] or None


def _unthrottled(result: Result, before: int | None, after: int | None) -> Result:
    """``result`` with the firmware's throttling record; degraded when the Pi throttled or
    saw under-voltage while it measured (it measured its supply or cooling, not the kernel), or
    when the readings cannot tell (a sticky bit already set before, no reading after)."""
    env = {**result.environment, "throttled": {
        "before": None if before is None else hex(before),
        "after": None if after is None else hex(after)}}
    update: dict[str, object] = {"environment": env}
    reasons = []
    if happened := throttle.during(before, after):
        reasons.append(f"the Pi reported {', '.join(happened)} during the run (vcgencmd "
                       f"get_throttled {hex(before or 0)} -> {hex(after or 0)})")
    if why := throttle.unseen(before, after):
        reasons.append(f"cannot tell whether the Pi throttled during the run: {why}")
    if reasons:
        update["status"] = "partial" if result.status == "partial" else "degraded"
        update["reasons"] = [*result.reasons, *reasons]
    return Result.model_validate(result.model_copy(update=update).model_dump(by_alias=True))


def _described(result: Result, claims: Result) -> Result:
    """``result`` with the board's load records and its own account of what went wrong: a claim
    can make the status worse, never better, and brings no number."""
    worse = _WORSE[claims.status] > _WORSE[result.status]
    updated = result.model_copy(update={
        "loads": [*result.loads, *claims.loads],
        "status": claims.status if worse else result.status,
        "reasons": list(dict.fromkeys(
            [*result.reasons, *(claims.reasons if claims.status != "complete" else [])])),
    })
    return Result.model_validate(updated.model_dump(by_alias=True))


def with_words(cmdline: bytes, words: list[str]) -> bytes:
    """``cmdline.txt`` with ``words`` added to its line (the firmware reads the first only),
    before any ``--`` (what follows goes to init), in place of words naming the same
    parameter: the kernel would otherwise see both."""
    text = cmdline.decode("utf-8", "surrogateescape")
    first, newline, rest = text.partition("\n")
    params = {w.split("=", 1)[0] for w in words}
    kept = [w for w in first.split() if w.split("=", 1)[0] not in params]
    at = kept.index("--") if "--" in kept else len(kept)
    line = " ".join([*kept[:at], *words, *kept[at:]])
    return (line + "\n" + (rest if newline else "")).encode("utf-8", "surrogateescape")


def sampler(tuned: Applied, pidfile: str, budget_s: float) -> str:
    """A board-side script: wait until a cyclictest started by the bench shell measures (the
    bench's start-up time is the board's), then print that shell's pid and the read-back with
    every task's affinity."""
    q = shlex.quote(pidfile)
    return "\n".join([
        f"i=0; while [ ! -s {q} ] && [ $i -lt 100 ]; do sleep 0.2; i=$((i+1)); done",
        f"root=$(cat {q} 2>/dev/null)",
        "ours() { p=$1; while [ -n \"$p\" ] && [ \"$p\" -gt 1 ]; do",
        "  [ \"$p\" = \"$root\" ] && return 0",
        "  p=$(sed -n 's/^PPid:[[:space:]]*//p' /proc/$p/status 2>/dev/null); done; return 1; }",
        # The bench's start-up (sudo, Python's imports) counts too: on a loaded board it took
        # longer than a short run's budget. The loop ends with the bench, so the bound only
        # matters for a bench that never measures.
        f"i=0; while [ $i -lt {int(budget_s * 5) + 600} ]; do",
        "  [ -d \"/proc/$root\" ] || break",
        # Measuring: a thread besides the main one (a 2 s run has no second to spare).
        "  for c in $(pgrep -x cyclictest); do ours \"$c\" && "
        "[ \"$(ls /proc/$c/task 2>/dev/null | wc -l)\" -gt 1 ] && break 2; done",
        "  sleep 0.2; i=$((i+1)); done",
        "sleep 0.5",
        "printf 'root\\t%s\\n' \"$root\"",
        tuned.readback_script(tasks=True)])
