"""Reboots of the Pi and what they leave: ``reboot '0 tryboot'`` makes the firmware read
``tryboot.txt`` for one boot only, so a crash, a hang the watchdog resets, or any later reset
comes back on the known-good ``config.txt``; a board that does not come back is power-cycled
(``power_cycle_command``), and after a fallback what the test boot left (pstore, what
systemd-pstore archived of it, its own journal found by boot id, the console) is pulled as
evidence: with a dying line in it the run is the kernel's failure (KernelCrash), without one the
lab's (InfraError)."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import time
from pathlib import Path

from rtgate.board.evidence import (
    LOG_CAP,
    PSTORE_CLEAR,
    PSTORE_PULL,
    ConsoleCapture,
    console_files,
    first_panic_in,
    journal_script,
)
from rtgate.board.rpi5.session import Pi
from rtgate.board.rpi5.slot import SLOT_WORD
from rtgate.errors import InfraError, KernelCrash

EVIDENCE = "previous-boot"
"""Under the work directory: what the test boot left, pulled after a fallback."""
JOURNAL = "journal-kernel.txt"
"""In EVIDENCE: the test boot's kernel log from the board's journal."""
CONSOLE_LOG = "console.log"


class Reboots:
    def __init__(self, pi: Pi, workdir: Path, serial: ConsoleCapture | None) -> None:
        self.pi = pi
        self.workdir = workdir
        self.serial = serial
        self.power_cycled = False
        self.left: str | None = None
        """The boot id the board had when it was last rebooted (before the tryboot: the
        known-good boot the test boot follows in the journal)."""
        self.now: str | None = None
        """The boot id the board answered from last."""
        self.archived = ""
        """systemd-pstore's archive as it was before the tryboot (PSTORE_CLEAR's lines)."""

    def reboot(self, command: str, what: str) -> None:
        """Reboot with ``command`` and wait until the board answers from a new boot; power-cycle
        it (``power_cycle_command``) when it does not."""
        pi = self.pi
        before = pi.ssh.output(pi.opts.boot_id_command)
        self.left = before
        # The connection usually drops while the command runs: its status tells nothing.
        pi.ssh.run(pi.ssh.root(command), check=False, timeout_s=60)
        if self.new_boot(before, what):
            return
        after = f"`{command}` ({what})"
        if not pi.opts.power_cycle_command:
            raise InfraError(
                f"{pi.name} did not come back within {pi.opts.boot_timeout_s:g} s after "
                f"{after}; config.txt was not touched, so a power cycle boots the known-good "
                "kernel; session log kept", path=pi.ssh.log)
        self.power_cycle(after)
        if not self.new_boot(before, "after a power cycle"):
            raise InfraError(f"{pi.name} did not come back after {after}, nor after a "
                             f"power cycle (`{pi.opts.power_cycle_command}`); session log kept",
                             path=pi.ssh.log)

    def new_boot(self, before: str | None, what: str) -> bool:
        """Whether the board answers from a boot other than ``before`` within the timeout."""
        pi = self.pi
        deadline = time.monotonic() + pi.opts.boot_timeout_s
        with pi.console.status(f"{pi.name}: {what}: waiting for a new boot (up to "
                               f"{pi.opts.boot_timeout_s:g} s)"):
            while (now := pi.ssh.reachable(pi.opts.boot_id_command)) in (None, before):
                if time.monotonic() > deadline:
                    return False
                time.sleep(pi.opts.poll_interval_s)
        self.now = now
        return True

    def power_cycle(self, why: str) -> None:
        """``power_cycle_command`` on the controller: the board then boots config.txt."""
        pi = self.pi
        command = pi.opts.power_cycle_command
        assert command is not None
        pi.say(f"rtgate: {pi.name} did not come back after {why}: power-cycling it "
               f"(`{command}`)")
        pi.ssh.note(f"power cycle (controller): $ {command}")
        try:
            proc = subprocess.run(command, shell=True, capture_output=True, timeout=120,
                                  check=False)
        except subprocess.TimeoutExpired as exc:
            raise InfraError(f"power_cycle_command `{command}` timed out after 120 s",
                             path=pi.ssh.log) from exc
        pi.ssh.note(f"  exit {proc.returncode} "
                    + (proc.stdout + proc.stderr).decode("utf-8", "replace")[-2000:])
        if proc.returncode != 0:
            raise InfraError(f"power_cycle_command `{command}` failed (exit {proc.returncode});"
                             " power-cycle the board by hand", path=pi.ssh.log)
        self.power_cycled = True

    def on_test_kernel(self) -> str | None:
        """Why the running kernel is a test kernel (the slot's word on its command line, or the
        firmware's tryboot flag), None when it is not."""
        pi = self.pi
        cmdline = pi.ssh.output("cat /proc/cmdline").split()
        if any(w.startswith(f"{SLOT_WORD}=") for w in cmdline):
            return f"/proc/cmdline has {SLOT_WORD}="
        flag = pi.ssh.output(f"od -An -tx1 {shlex.quote(pi.opts.tryboot_flag)} 2>/dev/null "
                             "| tr -d ' \\n'")
        return f"{pi.opts.tryboot_flag} says tryboot" if flag.endswith("01") else None

    def back_to_known_good(self) -> None:
        pi = self.pi
        if (why := self.on_test_kernel()) is None:
            return
        pi.say(f"rtgate: {pi.name} still runs a test kernel ({why}): returning it to its "
               "known-good kernel first")
        pi.ssh.run(pi.ssh.root(f"rm -f {shlex.quote(pi.fw('tryboot.txt'))}"))
        self.reboot(pi.opts.reboot_normal, "back to the known-good kernel")
        if (why := self.on_test_kernel()) is not None:
            raise InfraError(f"{pi.name} still runs a test kernel after a normal reboot "
                             f"({why}): config.txt may boot the slot; not recording it as "
                             "known-good", path=pi.ssh.log)

    def clear_pstore(self) -> None:
        """Older panic records out of pstore, so what is there after a fallback is the test
        boot's; systemd-pstore's archive listed, so what it moves there afterwards is told
        apart."""
        o = self.pi.opts
        args = shlex.join([o.pstore_dir.rstrip("/"), o.pstore_archive_dir.rstrip("/")])
        proc = self.pi.ssh.run(self.pi.ssh.root(f"sh -s -- {args}"),
                               stdin=PSTORE_CLEAR.encode(), check=False, timeout_s=120)
        self.archived = proc.stdout.decode("utf-8", "replace")

    def evidence(self, test_boot: str | None) -> tuple[tuple[str, Path] | None, str]:
        """What the test boot left, into the work directory: pstore and what systemd-pstore
        archived since the tryboot, the test boot's own kernel log (the boot ``test_boot``,
        else every boot the journal lists between the one left for the tryboot and the one
        answering now), and the console; its first dying line with its file (None without
        one), and where it is kept."""
        pi = self.pi
        o = pi.opts
        where = self.workdir / EVIDENCE
        shutil.rmtree(where, ignore_errors=True)
        where.mkdir(parents=True)
        stage = f"{o.remote_out.rstrip('/')}-evidence"
        pulled = pi.ssh.run(pi.ssh.root(
            f"KNOWN={shlex.quote(self.archived)}; export KNOWN; sh -s -- "
            + shlex.join([o.pstore_dir.rstrip("/"), o.pstore_archive_dir.rstrip("/"), stage])),
            stdin=PSTORE_PULL.encode(), check=False, timeout_s=120)
        if pulled.returncode == 0:
            pi.ssh.get_tree(stage, where)
            pi.ssh.run(pi.rm(stage), check=False)
        # Its last LOG_CAP bytes: a kernel that flooded its log does not flood the controller.
        journal = pi.ssh.run(
            pi.ssh.root("sh -s -- " + shlex.join([self.left or "", test_boot or "",
                                                  self.now or "", str(LOG_CAP)])),
            stdin=journal_script(o.boots_command, o.boot_log_command).encode(), check=False,
            timeout_s=120)
        (where / JOURNAL).write_bytes(journal.stdout)
        pstore_files = sorted(p for p in where.rglob("*") if p.is_file() and p.name != JOURNAL)
        console = console_files(self.workdir / CONSOLE_LOG) if self.serial else []
        found = first_panic_in([*pstore_files, where / JOURNAL, *console])
        lines = journal.stdout.count(b"\n")
        return found, (f"the test boot's evidence is kept in {where} ({len(pstore_files)} "
                       f"pstore file(s), {lines} line(s) of its journal"
                       + (f", the console in {self.workdir / CONSOLE_LOG}" if console else "")
                       + ")" + ("" if found else ", no sign of a crash in it"))

    def console_crash(self) -> tuple[str, Path] | None:
        """The console's first dying line, for a board that never came back."""
        return first_panic_in(console_files(self.workdir / CONSOLE_LOG)) if self.serial else None


def crashed(found: tuple[str, Path], message: str, log: Path) -> KernelCrash:
    said, evidence = found
    return KernelCrash(f"{message}: the kernel under test crashed: {said} (in {evidence})",
                       said=said, evidence=evidence, path=log)
