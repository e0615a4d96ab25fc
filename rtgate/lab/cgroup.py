"""A cgroup (v2) for each job's runner, so that nothing a job starts outlives the job.

Killing the runner's process group misses what a job moved into a session of its own (`setsid`,
a daemon): it would run on beside the next job of the board. The unit delegates its cgroup to
the supervisor (`Delegate=yes`, systemd.resource-control(5)); the supervisor moves itself into
a `supervisor` leaf (cgroup v2 keeps processes in leaves only once controllers are enabled) and
each runner into a cgroup of its own, which `cgroup.kill` (Linux 5.14, cgroup-v2.rst) empties at
the job's end. Another board's jobs are in another unit's cgroup, out of reach.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path, PurePosixPath

_EMPTY_WITHIN_S = 10.0


def own_unit_cgroup(unit: str, mounts: str, cgroup: str) -> Path | None:
    """This process's cgroup v2 directory when it is ``unit``'s (from /proc/self/mounts and
    /proc/self/cgroup), else None: run by hand, there is no cgroup of its own to divide."""
    mount = next((f[1] for line in mounts.splitlines()
                  if len(f := line.split()) > 2 and f[2] == "cgroup2"), None)
    path = next((line[3:] for line in cgroup.splitlines() if line.startswith("0::")), None)
    if mount is None or path is None or PurePosixPath(path).name != unit:
        return None
    return Path(mount) / path.lstrip("/")


def procs(group: Path) -> list[int]:
    return [int(p) for p in (group / "cgroup.procs").read_text().split()]


class JobCgroups:
    """Runner cgroups under ``base``, a cgroup v2 directory delegated to this process."""

    def __init__(self, base: Path) -> None:
        self.base = base
        supervisor = base / "supervisor"
        supervisor.mkdir(exist_ok=True)
        (supervisor / "cgroup.procs").write_text(f"{os.getpid()}\n")

    def create(self, name: str) -> Path:
        """A new cgroup for one runner: the runner's first command writes itself into its
        `cgroup.procs` before it execs anything (see rtgate.lab.runner), so everything the
        runner and its job start is in it."""
        group = self.base / name
        group.mkdir()
        return group

    def kill(self, group: Path) -> int:
        """Kill what is left in ``group`` and remove it; how many processes were left. An
        OSError when it cannot be emptied (the group is then still there, busy)."""
        left = procs(group)
        deadline = time.monotonic() + _EMPTY_WITHIN_S
        while True:
            if still := procs(group):
                if (group / "cgroup.kill").exists():
                    (group / "cgroup.kill").write_text("1\n")
                else:  # before Linux 5.14: one by one, again until none is left
                    for pid in still:
                        try:
                            os.kill(pid, signal.SIGKILL)
                        except ProcessLookupError:
                            pass
            else:
                try:
                    group.rmdir()
                    return len(left)
                except OSError:  # EBUSY while the last exits are accounted
                    if time.monotonic() > deadline:
                        raise
            if time.monotonic() > deadline:
                raise OSError(f"{len(still)} process(es) still in it after "
                              f"{_EMPTY_WITHIN_S:g} s")
            time.sleep(0.05)
