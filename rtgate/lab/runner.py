"""The runner supervisor of one board instance: register a just-in-time runner, run it for one
job, clean up, again — until SIGTERM.

Every registration mints a fresh installation token from the App's key (tokens last an hour,
a job may last longer), removes the runners this board's earlier registrations left (a runner
killed while idle stays registered, offline, for about a day), and registers under a new name,
BOARD-xxxxxxxx (8 random hex digits): a fixed name would be refused with 409 while the stale
one exists. Errors (401, 403, 409, 422, 5xx, no answer, a runner that ends at once) back off
exponentially up to a cap, or as long as a rate limit's `retry-after` asks. The runner runs as
the board's runner user in a job directory of its own under the board's jobs/, with the
board's environment file as its `.env`; afterwards the run directories it left in the board's
results/ are sealed and its job directory is deleted.
"""

from __future__ import annotations

import os
import random
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from rtgate.errors import InputError
from rtgate.lab import cgroup, envfile, state
from rtgate.lab.config import LabConfig
from rtgate.lab.github import ApiError, GitHub, JitConfig, Scope, app_jwt, read_private_key

RUNNER_PATH = "/usr/local/bin:/usr/bin:/bin"


def registration_name(board: str) -> str:
    return f"{board}-{secrets.token_hex(4)}"


def owned_by(board: str) -> re.Pattern[str]:
    """The names this board's registrations use, and no other board's (``rpi5`` must not match
    ``rpi5-b-0badf00d``)."""
    return re.compile(re.escape(board) + r"-[0-9a-f]{8}")


def backoff_s(failures: int, base_s: float, cap_s: float, jitter: float) -> float:
    """Seconds to wait after ``failures`` failures in a row: base, 2×base, 4×base … at most
    cap; ``jitter`` in [0, 1) takes up to a fifth off, so that boards do not retry in step."""
    return min(cap_s, base_s * 2 ** min(failures - 1, 62)) * (1 - 0.2 * jitter)


@dataclass(frozen=True)
class Registered:
    jit: JitConfig
    removed: list[str]


class Supervisor:
    def __init__(self, config: LabConfig, board: str, *,
                 log: Callable[[str], None] | None = None) -> None:
        self.config = config
        self.board = board
        self.user = state.account(config.user_of(board))
        self.state = state.board_state(config, board)
        self.github = GitHub(config.github.api, config.github.timeout_s)
        self.scope = Scope(config.github.owner, config.github.repo)
        self.stop = threading.Event()
        self.retry_after_s = 0.0
        self.cgroups: cgroup.JobCgroups | None = None
        self._log = log or (lambda line: print(line, file=sys.stderr, flush=True))

    def log(self, message: str) -> None:
        self._log(f"rtgate lab runner: {self.board}: {message}")

    # -- GitHub ---------------------------------------------------------------------------

    def token(self) -> str:
        app = self.config.github
        key = read_private_key(app.private_key)
        return self.github.installation_token(app_jwt(app.app_id, key),
                                              app.installation_id).token

    def register(self) -> Registered:
        token = self.token()
        mine = owned_by(self.board)
        removed = []
        for runner in self.github.list_runners(token, self.scope):
            # A busy one is working: a runner that outlived its supervisor ends by itself.
            if mine.fullmatch(runner.name) and not runner.busy:
                if self.github.delete_runner(token, self.scope, runner.id):
                    removed.append(runner.name)
        jit = self.github.generate_jitconfig(
            token, self.scope, registration_name(self.board),
            self.config.labels_of(self.board), self.config.github.group_id)
        return Registered(jit, removed)

    def deregister(self, runner_id: int) -> str:
        try:
            gone = self.github.delete_runner(self.token(), self.scope, runner_id)
        except (ApiError, InputError) as exc:
            return f"not deregistered ({exc})"
        return "deregistered" if gone else "already gone"

    # -- one job --------------------------------------------------------------------------

    @contextmanager
    def job_directory(self) -> Iterator[Path]:
        job = Path(tempfile.mkdtemp(prefix="job.", dir=self.state.jobs))
        try:
            yield job
        finally:
            sealed = state.seal_results(self.state.results)
            shutil.rmtree(job)
            if sealed:
                self.log(f"sealed {', '.join(sealed)} in {self.state.results}")

    def prepare_runner(self, job: Path) -> Path:
        runner = job / "runner"
        shutil.copytree(self.config.runner.install_dir, runner, symlinks=True)
        source = state.env_file(self.config, self.board)
        try:
            text = source.read_text(encoding="utf-8")
        except OSError as exc:
            raise InputError(f"cannot read the runner's environment: {exc.strerror} (rtgate "
                             "lab setup writes it)", path=source) from exc
        envfile.check(text, path=str(source))
        (runner / ".env").write_text(text, encoding="utf-8")
        for top, dirs, files in os.walk(job):
            for name in [top, *(os.path.join(top, n) for n in dirs + files)]:
                os.chown(name, self.user.uid, self.user.gid, follow_symlinks=False)
        return runner

    def run_runner(self, runner: Path, job: Path, jit: JitConfig) -> int:
        """`run.sh` as the runner user, the JIT config in the environment variable the runner
        reads as `--jitconfig` (actions/runner src/Runner.Listener/CommandSettings.cs:110-139,
        365-373) rather than on the command line, where every local user could read it."""
        env = {"HOME": str(job), "PATH": RUNNER_PATH, "LANG": "C.UTF-8",
               "ACTIONS_RUNNER_INPUT_JITCONFIG": jit.encoded}
        argv = ["setpriv", f"--reuid={self.user.uid}", f"--regid={self.user.gid}",
                "--init-groups", "--", str(runner / "run.sh")]
        group = self.cgroups.create(job.name) if self.cgroups else None
        if group is not None:
            # Into the runner's cgroup first, still root, before anything runs that could fork.
            argv = ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"',
                    str(group / "cgroup.procs"), *argv]
        child = subprocess.Popen(argv, cwd=job, env=env, stdin=subprocess.DEVNULL,
                                 start_new_session=True)
        try:
            while child.poll() is None:
                if self.stop.wait(0.2):
                    self._terminate(child)
            return child.returncode
        finally:
            # What the job started ends with it: in the runner's session, and in its cgroup
            # whatever left the session.
            _signal_group(child.pid, signal.SIGKILL)
            child.wait()
            if group is not None and self.cgroups is not None:
                try:
                    if left := self.cgroups.kill(group):
                        self.log(f"killed {left} process(es) the job left running")
                except OSError as exc:
                    self.log(f"cannot empty {group}: {exc}")

    def _terminate(self, child: subprocess.Popen[bytes]) -> None:
        """SIGTERM to the runner's session, then the grace for all of it to end: run.sh goes
        at once, the listener it started cancels its job and reports it first."""
        _signal_group(child.pid, signal.SIGTERM)
        deadline = time.monotonic() + self.config.runner.stop_grace_s
        while _group_alive(child.pid) and time.monotonic() < deadline:
            child.poll()  # reaped, our own child no longer counts as one of the group
            time.sleep(0.05)
        if _group_alive(child.pid):
            self.log(f"the runner did not end within {self.config.runner.stop_grace_s:g} s "
                     "of SIGTERM: killed")
            _signal_group(child.pid, signal.SIGKILL)

    # -- the loop -------------------------------------------------------------------------

    def once(self) -> bool:
        """One registration and its job; False when it failed (and should back off)."""
        try:
            registered = self.register()
        except (ApiError, InputError) as exc:
            self.log(f"registration failed: {exc}")
            self.retry_after_s = getattr(exc, "retry_after_s", None) or 0.0
            return False
        jit = registered.jit
        removed = f"; removed stale {', '.join(registered.removed)}" if registered.removed \
            else ""
        self.log(f"registered {jit.runner.name} (runner id {jit.runner.id}, labels "
                 f"{','.join(self.config.labels_of(self.board))}){removed}")
        started = time.monotonic()
        try:
            with self.job_directory() as job:
                code = self.run_runner(self.prepare_runner(job), job, jit)
        except (InputError, OSError) as exc:
            self.log(f"{jit.runner.name}: cannot start the runner: {exc}; "
                     f"{self.deregister(jit.runner.id)}")
            return False
        ran = time.monotonic() - started
        after = f"; {self.deregister(jit.runner.id)}" if self.stop.is_set() else ""
        self.log(f"{jit.runner.name}: the runner ended (exit {code}) after {ran:.1f} s{after}")
        return self.stop.is_set() or ran >= self.config.runner.min_uptime_s

    def contain(self) -> str:
        """Set up the runners' cgroups (runner.cgroup); what to say about them."""
        setting = self.config.runner.cgroup
        if setting == "off":
            return "no cgroups (runner.cgroup: off)"
        base = setting if isinstance(setting, Path) else cgroup.own_unit_cgroup(
            f"rtgate-runner@{self.board}.service", Path("/proc/self/mounts").read_text(),
            Path("/proc/self/cgroup").read_text())
        if base is None:
            return ("no cgroup of its own (not run as rtgate-runner@BOARD.service): what a job "
                    "starts in a session of its own may outlive the job")
        try:
            self.cgroups = cgroup.JobCgroups(base)
        except OSError as exc:
            if isinstance(setting, Path):
                raise InputError(f"runner.cgroup: cannot use it: {exc}", path=setting) from exc
            return f"no cgroups ({base}: {exc})"
        return f"a cgroup per runner under {base}"

    def run(self) -> int:
        left = state.clear_jobs(self.state.jobs)
        sealed = state.seal_results(self.state.results)
        self.log(f"started ({self.scope.path}, user {self.user.name}, state {self.state.root}, "
                 f"{self.contain()})"
                 + (f"; removed left-over jobs {', '.join(left)}" if left else "")
                 + (f"; sealed {', '.join(sealed)}" if sealed else ""))
        failures = 0
        with _stopping_on_signals(self.stop):
            while not self.stop.is_set():
                if self.once():
                    failures = 0
                    continue
                failures += 1
                # A rate limit's wait is GitHub's to set, beyond our own cap if need be.
                wait = max(self.retry_after_s,
                           backoff_s(failures, self.config.runner.backoff_s,
                                     self.config.runner.backoff_cap_s, random.random()))
                self.retry_after_s = 0.0
                self.log(f"{failures} failure(s) in a row: next try in {wait:.1f} s")
                self.stop.wait(wait)
        self.log("stopped")
        return 0


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _signal_group(pid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        pass


@contextmanager
def _stopping_on_signals(stop: threading.Event) -> Iterator[None]:
    """SIGTERM (systemctl stop) and SIGINT end the loop at the next step, not mid-cleanup."""
    def request(signum: int, frame: object) -> None:
        stop.set()

    previous = {s: signal.signal(s, request) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
