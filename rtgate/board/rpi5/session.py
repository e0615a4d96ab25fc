"""One Pi as the controller reaches it: its name, the board file's options, the SSH session
and the console the driver talks to a person on; with what every step asks of the running
board (its kernel and cyclictest, the bench's privilege route, the firmware's throttling)."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from rtgate.board.privileges import TRIAL, Trial, judge
from rtgate.board.rpi5 import throttle
from rtgate.board.rpi5.ssh import SSH_FAILED, SshSession
from rtgate.board.spec import BoardSpec, SshOptions
from rtgate.cyclictest.version import Capabilities, parse_help
from rtgate.errors import InfraError


@dataclass(frozen=True)
class RunningKernel:
    """What the controller reads from the booted board before a run, for the result."""

    release: str
    version: str
    machine: str
    realtime: str | None


@dataclass
class Pi:
    name: str
    opts: SshOptions
    ssh: SshSession
    console: Console

    @classmethod
    def connect(cls, spec: BoardSpec, workdir: Path) -> Pi:
        assert isinstance(spec.options, SshOptions)
        return cls(spec.name, spec.options, SshSession(spec.options, workdir / "ssh.log"),
                   Console(stderr=True))

    def say(self, text: str) -> None:
        self.console.print(text, markup=False, highlight=False, soft_wrap=True)

    def fw(self, name: str = "") -> str:
        return f"{self.opts.firmware_dir.rstrip('/')}/{name}" if name else self.opts.firmware_dir

    def read(self, name: str) -> bytes:
        return self.ssh.run(f"cat {shlex.quote(self.fw(name))}").stdout

    def rm(self, path: str) -> str:
        return self.ssh.root(f"rm -rf {shlex.quote(path)}")

    def running(self) -> tuple[Capabilities, RunningKernel]:
        """The booted board's cyclictest and kernel, as the controller reads them: the
        cyclictest's options decide which raw files a run must leave."""
        proc = self.ssh.run("cyclictest --help", check=False)
        if proc.returncode in (127, 255):
            raise InfraError(f"{self.name}: `cyclictest --help` failed with exit "
                             f"{proc.returncode} (not installed, or the board was lost)",
                             path=self.ssh.log)
        caps = parse_help((proc.stdout + proc.stderr).decode("utf-8", "replace"))
        lines = self.ssh.output("uname -r; uname -v; uname -m; "
                                "cat /sys/kernel/realtime 2>/dev/null || true").splitlines()
        if len(lines) < 3:
            raise InfraError(f"{self.name}: uname answered {lines!r}", path=self.ssh.log)
        return caps, RunningKernel(release=lines[0], version=lines[1], machine=lines[2],
                                   realtime=lines[3].strip() if len(lines) > 3 else None)

    def with_user_path(self, command: str) -> str:
        """``command`` as root with the bench user's PATH: sudo's secure_path may find other
        tools than the ones checked."""
        user_path = self.ssh.output("printf '%s' \"$PATH\"")
        return self.ssh.root(f"PATH={shlex.quote(user_path)}; export PATH; {command}")

    def as_bench(self, command: str) -> str:
        """``command`` as the bench runs: through sudo on the sudo route, else as the user."""
        if self.opts.measure_privilege == "sudo" and self.opts.sudo:
            return self.with_user_path(command)
        return command

    def trial(self) -> Trial:
        """The real cyclictest tried through the bench's route: what it may do."""
        proc = self.ssh.run(self.as_bench("sh -s"), stdin=TRIAL.encode(), check=False,
                            timeout_s=60)
        if proc.returncode == SSH_FAILED:
            raise InfraError(f"lost {self.name} while trying its privileges",
                             path=self.ssh.log)
        return judge(self.opts.measure_privilege, proc.stdout.decode("utf-8", "replace"),
                     proc.stderr.decode("utf-8", "replace"))

    def check_privileges(self) -> Trial:
        """The trial, before any load starts: a bench user that cannot get SCHED_FIFO 99,
        mlockall or /dev/cpu_dma_latency is refused (InfraError), naming what is missing."""
        trial = self.trial()
        if trial.missing:
            raise InfraError(
                f"{self.name}: the bench cannot measure as {trial.facts.get('user', '?')} "
                f"(measure_privilege: {self.opts.measure_privilege}): missing "
                f"{'; '.join(trial.missing)}; refused before any load started "
                "(docs/rpi5.md, \"Measurement privileges\")", path=self.ssh.log)
        return trial

    def firmware(self, command: str) -> str:
        """A ``vcgencmd`` command's answer (stdout and stderr), run as root with the user's
        PATH: vcgencmd needs /dev/vcio, which a lab account outside group video cannot open
        (rtgate.board.rpi5.throttle.COMMAND)."""
        proc = self.ssh.run(self.with_user_path(f"{command} 2>&1"), check=False, timeout_s=30)
        return proc.stdout.decode("utf-8", "replace")

    def throttled(self) -> int | None:
        """The firmware's get_throttled now; None when it gave no value."""
        return throttle.parse(self.firmware(throttle.COMMAND))
