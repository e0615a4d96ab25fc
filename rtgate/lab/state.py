"""Each board instance's own state on the controller, never shared with another board's:

    STATE/BOARD/           root 0755
      jobs/                root 0711   one directory per job (the runner's copy and its home),
                                       the runner user's, deleted when the job ends
      results/             root 1733   every gate's raw results; a job creates its run directory
                                       and cannot rename or delete one an earlier job left
      cache-main/          user 0700   main's kernel sources, ccache and kernels
      cache-pr/            user 0700   the same for pull requests' kernels, never read by main

and its runner environment file, ENV_DIR/BOARD.env. Nothing here recurses into another board's
directories: a finished job's results are sealed in its own board's results/ only.
"""

from __future__ import annotations

import os
import pwd
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

from rtgate.errors import InputError
from rtgate.jsonfile import write_atomic
from rtgate.lab import envfile
from rtgate.lab.config import LabConfig


@dataclass(frozen=True)
class Account:
    name: str
    uid: int
    gid: int


def account(name: str) -> Account:
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        raise InputError(f"no user {name!r} on this controller (useradd it first, "
                         "docs/lab.md)") from None
    return Account(name, entry.pw_uid, entry.pw_gid)


@dataclass(frozen=True)
class BoardState:
    root: Path

    @property
    def jobs(self) -> Path:
        return self.root / "jobs"

    @property
    def results(self) -> Path:
        return self.root / "results"

    @property
    def cache_main(self) -> Path:
        return self.root / "cache-main"

    @property
    def cache_pr(self) -> Path:
        return self.root / "cache-pr"


def board_state(config: LabConfig, board: str) -> BoardState:
    return BoardState(config.runner.state_dir / board)


def env_file(config: LabConfig, board: str) -> Path:
    return config.runner.env_dir / f"{board}.env"


def runner_env(config: LabConfig, board: str) -> dict[str, str]:
    """What every job of ``board`` finds in its environment (the runner's `.env`)."""
    state = board_state(config, board)
    return {
        # The gate's first step takes its board from here: runner names are unique per
        # registration (BOARD-xxxxxxxx), the board is not.
        "RTGATE_BOARD": board,
        "RTGATE_PYTHON": str(config.runner.python),
        "RTGATE_RESULTS_DIR": str(state.results),
        "RTGATE_CACHE_MAIN": str(state.cache_main),
        "RTGATE_CACHE_PR": str(state.cache_pr),
        "RTGATE_BUILDER": config.runner.builder,
    }


def _directory(path: Path, uid: int, gid: int, mode: int) -> None:
    """``path`` a real directory with exactly this owner and mode; its contents untouched."""
    try:
        path.mkdir(mode=0o700)
    except FileExistsError:
        pass
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise InputError("exists and is not a directory (a symlink or a file): move it away",
                         path=path)
    os.chown(path, uid, gid, follow_symlinks=False)
    os.chmod(path, mode)


def prepare(config: LabConfig, board: str) -> BoardState:
    """Create or repair the board's directories and write its runner environment file."""
    user = account(config.user_of(board))
    state = board_state(config, board)
    for path, (uid, gid), mode in [
            (config.runner.state_dir, (0, 0), 0o755), (state.root, (0, 0), 0o755),
            (state.jobs, (0, 0), 0o711), (state.results, (0, 0), 0o1733),
            (state.cache_main, (user.uid, user.gid), 0o700),
            (state.cache_pr, (user.uid, user.gid), 0o700)]:
        _directory(path, uid, gid, mode)
    target = env_file(config, board)
    _directory(config.runner.env_dir, 0, 0, 0o755)
    write_atomic(target, envfile.render(runner_env(config, board), path=str(target)))
    target.chmod(0o644)
    return state


def _seal(dir_fd: int, name: str) -> None:
    """Root's and not writable by group or others; never through a symlink (O_NOFOLLOW)."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY,
                     dir_fd=dir_fd)
    except OSError:  # a symlink, a socket: its owner only, the link itself
        os.chown(name, 0, 0, dir_fd=dir_fd, follow_symlinks=False)
        return
    try:
        os.fchown(fd, 0, 0)
        os.fchmod(fd, stat.S_IMODE(os.fstat(fd).st_mode) & ~0o022)
    finally:
        os.close(fd)


def seal_results(results: Path) -> list[str]:
    """Make every run directory a finished job left in this board's results/ read-only for
    later jobs (root-owned, no group or other write bit), walking by directory descriptor so a
    job's symlinks lead nowhere. Returns the names sealed."""
    sealed = []
    top = os.open(results, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        for entry in sorted(os.listdir(top)):
            if os.stat(entry, dir_fd=top, follow_symlinks=False).st_uid == 0:
                continue
            if stat.S_ISDIR(os.stat(entry, dir_fd=top, follow_symlinks=False).st_mode):
                sub = os.open(entry, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=top)
                try:
                    for _, dirs, files, fd in os.fwalk(dir_fd=sub, topdown=False):
                        for name in dirs + files:
                            _seal(fd, name)
                finally:
                    os.close(sub)
            _seal(top, entry)
            sealed.append(entry)
    finally:
        os.close(top)
    return sealed


def clear_jobs(jobs: Path) -> list[str]:
    """Remove what jobs of this board left in its jobs/ (a killed supervisor's)."""
    left = sorted(p.name for p in jobs.iterdir())
    for name in left:
        path = jobs / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    return left
