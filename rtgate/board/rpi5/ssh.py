"""Commands and files over the real OpenSSH client, every exchange written to a session log.

Files travel as tar streams (``tar c | ssh 'tar x'``): one connection per tree, modes kept, and
the remote side needs nothing but tar.
"""

from __future__ import annotations

import contextlib
import io
import os
import shlex
import shutil
import signal
import subprocess
import tarfile
import tempfile
import threading
import time
from pathlib import Path
from typing import IO

from rtgate.board import tarsafe
from rtgate.board.spec import SshOptions
from rtgate.errors import InfraError

SSH_FAILED = 255
"""ssh's own exit status when the connection (not the remote command) failed."""
MiB = 1 << 20
# What the board may answer, as the QEMU and LAVA drivers allow their guests: a command's
# stdout (the largest is the test boot's journal, evidence.LOG_CAP = 32 MiB), its stderr, and a
# tree of results (histograms, block maxima, load logs, crash evidence), with its file count.
REPLY_CAP = 64 * MiB
ERR_CAP = 1 * MiB
TREE_CAP = 256 * MiB
TREE_MEMBERS = 4096
CHUNK = 64 * 1024


class SshSession:
    def __init__(self, opts: SshOptions, log: Path) -> None:
        self.opts = opts
        self.log = log
        log.parent.mkdir(parents=True, exist_ok=True)
        # One multiplexed connection for the dozens of short commands of a deploy and of the
        # reboot polling. A short private directory: socket paths are limited to ~100 bytes.
        self._mux = Path(tempfile.mkdtemp(prefix="rtgate-ssh-"))

    def close(self) -> None:
        """End the shared connection (it would otherwise linger for ControlPersist)."""
        subprocess.run([*self._base(), "-O", "exit", self.target], capture_output=True,
                       check=False, timeout=30)
        shutil.rmtree(self._mux, ignore_errors=True)

    @property
    def target(self) -> str:
        return f"{self.opts.user}@{self.opts.host}"

    def _base(self) -> list[str]:
        argv = ["ssh", "-p", str(self.opts.port), "-T", "-o", "ControlMaster=auto",
                "-o", f"ControlPath={self._mux}/%C", "-o", "ControlPersist=60"]
        for option in self.opts.ssh_options:
            argv += ["-o", option]
        if self.opts.identity_file:
            argv += ["-i", self.opts.identity_file, "-o", "IdentitiesOnly=yes"]
        return argv

    def argv(self, command: str) -> list[str]:
        return [*self._base(), self.target, command]

    def root(self, command: str) -> str:
        """``command`` with the sudo prefix, as one shell command line on the board."""
        return f"{self.opts.sudo} sh -c {shlex.quote(command)}" if self.opts.sudo else command

    def note(self, text: str) -> None:
        with open(self.log, "a", encoding="utf-8") as fh:
            fh.write(f"[{time.strftime('%H:%M:%S')}] {text}\n")

    def run(self, command: str, *, stdin: bytes | None = None, timeout_s: float = 120,
            check: bool = True, cap: int = REPLY_CAP) -> subprocess.CompletedProcess[bytes]:
        """Run ``command`` on the board; a lost connection is always an InfraError, a failing
        command only with ``check``. Its stdout is kept up to ``cap`` bytes, stderr up to
        ERR_CAP: a board that answers more (a kernel under test flooding it) is an InfraError
        naming the command, the connection cut, never a reply held whole."""
        self.note(f"$ {command}")
        with tempfile.TemporaryFile() as out:
            proc = self._capture(command, stdin, timeout_s, out, cap)
            out.seek(0)
            stdout = out.read()
        done = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, proc.stderr)
        for stream in (done.stdout[:4000], done.stderr[:4000]):
            text = stream.decode("utf-8", "replace").rstrip()
            if text:
                self.note("  " + text.replace("\n", "\n  ")[:4000])
        self.note(f"  exit {done.returncode}")
        if check and done.returncode != 0:
            what = "connection failed" if done.returncode == SSH_FAILED else \
                f"exit {done.returncode}"
            tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:]
            raise InfraError(f"ssh {self.target}: `{command}`: {what}"
                             + (f": {tail[0]}" if tail else "") + "; session log kept",
                             path=self.log)
        return done

    def _capture(self, command: str, stdin: bytes | None, timeout_s: float, out: IO[bytes],
                 cap: int) -> subprocess.CompletedProcess[bytes]:
        """ssh with its stdout streamed into ``out`` up to ``cap`` bytes and its stderr kept up
        to ERR_CAP; past either, ssh is killed and the command refused."""
        try:
            proc = subprocess.Popen(self.argv(command), stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE,
                                    stdin=subprocess.PIPE if stdin is not None
                                    else subprocess.DEVNULL, start_new_session=True)
        except FileNotFoundError as exc:
            raise InfraError("ssh is not installed (scripts/deps.sh qemu)") from exc
        err = io.BytesIO()
        over: list[str] = []

        def kill() -> None:
            # The whole group: a ProxyCommand (or anything ssh started) holds the pipes too.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)

        def drain(pipe: IO[bytes], sink: IO[bytes], limit: int, name: str) -> None:
            kept = 0
            while chunk := pipe.read(CHUNK):
                if kept + len(chunk) > limit:
                    over.append(name)
                    kill()
                    break
                sink.write(chunk)
                kept += len(chunk)

        def feed() -> None:
            assert proc.stdin is not None
            try:
                proc.stdin.write(stdin or b"")
                proc.stdin.close()
            except OSError:
                pass  # the remote side stopped reading: its exit status says why

        assert proc.stdout is not None and proc.stderr is not None
        threads = [threading.Thread(target=drain, args=(proc.stdout, out, cap, "stdout")),
                   threading.Thread(target=drain, args=(proc.stderr, err, ERR_CAP, "stderr"))]
        if stdin is not None:
            threads.append(threading.Thread(target=feed))
        for t in threads:
            t.start()
        try:
            code = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired as exc:
            kill()
            proc.wait()
            self.note(f"  timed out after {timeout_s:g} s")
            raise InfraError(f"ssh {self.target}: `{command}` timed out after {timeout_s:g} s; "
                             "session log kept", path=self.log) from exc
        finally:
            for t in threads:
                t.join()
        if over:
            limit = cap if over[0] == "stdout" else ERR_CAP
            self.note(f"  refused: more than {limit} bytes on {over[0]}")
            raise InfraError(f"ssh {self.target}: `{command}` answered more than {limit} bytes "
                             f"on {over[0]}: refused, the connection cut; session log kept",
                             path=self.log)
        return subprocess.CompletedProcess(proc.args, code, b"", err.getvalue())

    def output(self, command: str, **kwargs: float) -> str:
        return self.run(command, **kwargs).stdout.decode("utf-8", "replace").strip()

    def reachable(self, command: str = "true") -> str | None:
        """``command``'s output if the board answers now, None if it does not."""
        proc = self.run(command, check=False, timeout_s=30)
        if proc.returncode != 0:
            return None
        return proc.stdout.decode("utf-8", "replace").strip()

    def put_tree(self, files: dict[str, Path | bytes], remote_dir: str) -> None:
        """Write ``files`` (relative name → local file or content) under ``remote_dir`` as root."""
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            for name, src in sorted(files.items()):
                if isinstance(src, bytes):
                    info = tarfile.TarInfo(name)
                    info.size, info.mode, info.mtime = len(src), 0o644, int(time.time())
                    tar.addfile(info, io.BytesIO(src))
                else:
                    tar.add(src, arcname=name)
        remote = shlex.quote(remote_dir)
        self.run(self.root(f"mkdir -p {remote} && tar -C {remote} --no-same-owner -xf -"),
                 stdin=buf.getvalue(), timeout_s=600)

    def get_tree(self, remote_dir: str, local: Path) -> None:
        """Copy ``remote_dir``'s contents into ``local``, read as root (a bench run through sudo
        leaves files only root may read). The tar stream goes to disk, at most TREE_CAP bytes,
        and is unpacked only once its members stay within TREE_CAP and TREE_MEMBERS."""
        command = self.root(f"tar -C {shlex.quote(remote_dir)} -cf - .")
        self.note(f"$ {command}")
        with tempfile.TemporaryFile() as stream:
            proc = self._capture(command, None, 600, stream, TREE_CAP)
            self.note(f"  exit {proc.returncode}")
            if proc.returncode != 0:
                tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-1:]
                raise InfraError(f"ssh {self.target}: `{command}`: exit {proc.returncode}"
                                 + (f": {tail[0]}" if tail else "") + "; session log kept",
                                 path=self.log)
            stream.seek(0)
            local.mkdir(parents=True, exist_ok=True)
            try:
                with tarfile.open(fileobj=stream, mode="r:") as tar:
                    tarsafe.members(tar, TREE_CAP, TREE_MEMBERS,
                                    f"files from {self.target}:{remote_dir}")
                    tarsafe.extract(tar, local)
            except tarfile.TarError as exc:
                raise InfraError(f"files from {self.target}:{remote_dir} unreadable: {exc}",
                                 path=self.log) from exc
