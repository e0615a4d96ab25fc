"""The board's ``rtgate bench``, driven from the controller: the board's part of a scenario
staged in a fresh directory, bench_command run in the background with the peer's loads against
it once its servers listen, and the board's output taken back without letting it overwrite
the controller's own files."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import yaml

from rtgate.board.peer import PeerLoads, controller_cpus, split
from rtgate.board.rpi5.session import Pi
from rtgate.board.rpi5.ssh import REPLY_CAP, SSH_FAILED
from rtgate.board.tuning import Applied
from rtgate.errors import InfraError
from rtgate.harness.loads import LISTEN_TIMEOUT_S
from rtgate.harness.plan import Params, timeout_for
from rtgate.harness.scenario import Scenario
from rtgate.layout import RAW, RESULT


def stage(pi: Pi, spec: Scenario, tuned: Applied | None) -> tuple[Scenario, Scenario, str]:
    """(the board's part of the scenario, the controller's part, the board's directory for
    the run): the board's part pinned by a profile and uploaded into that fresh directory."""
    on_board, on_peer = split(spec, pi.opts.peer, pi.opts.peer.board_port)
    if tuned:
        on_board = tuned.pin(on_board)  # the controller's loads stay unpinned
    remote = pi.opts.remote_out.rstrip("/")
    # Removed as root: a trace run (root) leaves root's files there. out/ is there from the
    # start: a bench that fails before writing any output leaves it empty, not missing.
    pi.ssh.run(pi.rm(remote))
    pi.ssh.run(f"mkdir -p {shlex.quote(remote)}/out")
    scenario_yml = yaml.safe_dump(on_board.model_dump(exclude_none=True), sort_keys=False)
    pi.ssh.put_tree({f"{spec.name}.yml": scenario_yml.encode()}, remote)
    return on_board, on_peer, remote


def bench_command(pi: Pi, remote: str, scenario: str, duration_s: int,
                  scale: float | None) -> str:
    """bench_command for the scenario staged in ``remote``, writing to ``remote``/out."""
    command = pi.opts.bench_command.format(
        scenario=shlex.quote(f"{remote}/{scenario}.yml"), duration=duration_s,
        out=shlex.quote(f"{remote}/out"))
    return command + (f" --scale {scale:g}" if scale is not None else "")


def _wait_listening(pi: Pi, port: int, bench: subprocess.Popen[bytes]) -> None:
    """Until something listens on the board's ``port``, or ``bench`` ended first."""
    pattern = f"^ *[0-9]+: [0-9A-F]+:{port:04X} [0-9A-F]+:[0-9A-F]+ 0A"
    deadline = time.monotonic() + LISTEN_TIMEOUT_S + 30
    while time.monotonic() < deadline and bench.poll() is None:
        if pi.ssh.run(f"grep -qE '{pattern}' /proc/net/tcp /proc/net/tcp6",
                      check=False).returncode == 0:
            return
        time.sleep(0.5)
    if bench.poll() is None:
        raise InfraError(f"nothing listens on {pi.name}:{port} for the peer's loads",
                         path=pi.ssh.log)


def _within_cap(path: Path, what: str, pi: Pi) -> None:
    """A background output under REPLY_CAP: a kernel under test that floods it stops the run
    (the caller kills ssh) before it fills the controller's disk; what it wrote is kept."""
    if path.stat().st_size > REPLY_CAP:
        raise InfraError(f"`{what}` on {pi.name} wrote more than {REPLY_CAP} bytes to "
                         f"{path.name}: stopped, what it wrote kept", path=path)


def drive(pi: Pi, command: str, what: str, spec: Scenario, on_peer: Scenario,
          duration_s: int, scale: float | None, rawdir: Path, log: Path, *,
          sampler_sh: str | None = None, samples: Path | None = None
          ) -> tuple[int, PeerLoads]:
    """``command`` (``what``) on the board in the background, with the peer's loads against
    it once its servers listen (never, when it ends first; their outputs into ``rawdir``)
    and, given ``sampler_sh``, that script sampling the tasks' affinities into ``samples``;
    its exit status, once it ended within the scenario's warm-up + ``duration_s`` + the run
    margin."""
    budget = spec.warmup_s + duration_s + pi.opts.run_margin_s
    sampling = None
    with tempfile.TemporaryDirectory(prefix="rtgate-peer-") as scratch, \
            open(log, "wb") as output:
        params = Params(cpus=controller_cpus(), port=pi.opts.peer.board_port, tmpdir=scratch,
                        scale=scale or spec.scale, timeout_s=timeout_for(spec, duration_s))
        peer = PeerLoads(on_peer, params, rawdir, Path(scratch))
        pi.ssh.note(f"$ {command}  (in the background)")
        bench = subprocess.Popen(pi.ssh.argv(command), stdout=output, stderr=output,
                                 stdin=subprocess.DEVNULL)
        if sampler_sh and samples:
            # The tasks' real affinities, once cyclictest measures.
            with open(samples, "wb") as tasks:
                sampling = subprocess.Popen(
                    pi.ssh.argv(pi.ssh.root(f"sh {shlex.quote(sampler_sh)}")),
                    stdout=tasks, stderr=output, stdin=subprocess.DEVNULL)
        status = pi.console.status(f"{pi.name}: {spec.name}: {what} "
                                   f"({spec.warmup_s:g} s warm-up + {duration_s} s)")
        try:
            status.start()
            if peer.planned:
                _wait_listening(pi, pi.opts.peer.board_port, bench)
                if bench.poll() is None:
                    peer.start()
            deadline = time.monotonic() + budget
            while (rc := bench.poll()) is None:
                if time.monotonic() > deadline:
                    raise InfraError(f"`{what}` on {pi.name} still running after "
                                     f"{budget:g} s; its log kept", path=log)
                peer.watch()
                _within_cap(log, what, pi)
                if samples is not None and sampling is not None:
                    _within_cap(samples, what, pi)
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
    pi.ssh.note(f"  bench exit {rc}")
    if rc == SSH_FAILED:
        raise InfraError(f"lost {pi.name} during `{what}`", path=log)
    return rc, peer


def fetch(pi: Pi, remote_dir: str, out: Path, *, keep_as: str, claims: str = RESULT,
          prefix: str = "") -> None:
    """The board's output into OUT: its own account (``claims``) as ``keep_as``, and the
    regular files of its raw/ named ``prefix``… — never over the controller's own files
    there (the peer's outputs, the measurement's)."""
    with tempfile.TemporaryDirectory(prefix="rtgate-board-out-") as tmp:
        staging = Path(tmp)
        pi.ssh.get_tree(remote_dir, staging)
        account = staging / claims
        if account.is_file() and not account.is_symlink():
            shutil.move(account, out / keep_as)
        raw = staging / RAW
        for f in sorted(raw.iterdir()) if raw.is_dir() and not raw.is_symlink() else []:
            if f.is_symlink() or not f.is_file() or not f.name.startswith(prefix) \
                    or (out / RAW / f.name).exists():
                pi.ssh.note(f"  not taken from the board: raw/{f.name}")
                continue
            shutil.move(f, out / RAW / f.name)
