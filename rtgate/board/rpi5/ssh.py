"""Commands and files over the real OpenSSH client, every exchange written to a session log.

Files travel as tar streams (``tar c | ssh 'tar x'``): one connection per tree, modes kept, and
the remote side needs nothing but tar.
"""

from __future__ import annotations

import io
import shlex
import shutil
import subprocess
import tarfile
import tempfile
import time
from pathlib import Path

from rtgate.board import tarsafe
from rtgate.board.spec import SshOptions
from rtgate.errors import InfraError

SSH_FAILED = 255
"""ssh's own exit status when the connection (not the remote command) failed."""


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
            check: bool = True) -> subprocess.CompletedProcess[bytes]:
        """Run ``command`` on the board; a lost connection is always an InfraError, a failing
        command only with ``check``."""
        self.note(f"$ {command}")
        try:
            proc = subprocess.run(self.argv(command), input=stdin, capture_output=True,
                                  timeout=timeout_s, check=False)
        except subprocess.TimeoutExpired as exc:
            self.note(f"  timed out after {timeout_s:g} s")
            raise InfraError(f"ssh {self.target}: `{command}` timed out after {timeout_s:g} s; "
                             "session log kept", path=self.log) from exc
        except FileNotFoundError as exc:
            raise InfraError("ssh is not installed (scripts/deps.sh qemu)") from exc
        for stream in (proc.stdout, proc.stderr):
            text = stream.decode("utf-8", "replace").rstrip()
            if text:
                self.note("  " + text.replace("\n", "\n  ")[:4000])
        self.note(f"  exit {proc.returncode}")
        if check and proc.returncode != 0:
            what = "connection failed" if proc.returncode == SSH_FAILED else \
                f"exit {proc.returncode}"
            tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-1:]
            raise InfraError(f"ssh {self.target}: `{command}`: {what}"
                             + (f": {tail[0]}" if tail else "") + "; session log kept",
                             path=self.log)
        return proc

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
        leaves files only root may read)."""
        proc = self.run(self.root(f"tar -C {shlex.quote(remote_dir)} -cf - ."), timeout_s=600)
        local.mkdir(parents=True, exist_ok=True)
        try:
            with tarfile.open(fileobj=io.BytesIO(proc.stdout), mode="r:") as tar:
                tarsafe.extract(tar, local)
        except tarfile.TarError as exc:
            raise InfraError(f"files from {self.target}:{remote_dir} unreadable: {exc}",
                             path=self.log) from exc
