"""The board's tools against the sha256s pinned in its board file: read by ``tooldigest.sh`` in
the shell bench_command runs in, before every deploy and every run, so a kernel that changed a
tool on disk is caught before anything is measured with it again."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from rtgate.board.rpi5.session import Pi
from rtgate.board.spec import board_path
from rtgate.errors import InfraError, InputError

TOOL_DIGEST = Path(__file__).with_name("tooldigest.sh")
TOOLS = ("rtgate", "cyclictest", "stress-ng", "iperf3")
"""What a board measures with; each is checked when pinned, and named in a note when not."""
_DIGEST_LINE = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._+-]*): ([0-9a-f]{64})\s+# (.*)$")
_DIGEST_MISSING = re.compile(r"^\s*# ([A-Za-z0-9][A-Za-z0-9._+-]*): (.*)$")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


@dataclass(frozen=True)
class Digest:
    sha256: str | None
    where: str
    """The file or environment digested, or why there is no digest."""


def read(pi: Pi) -> dict[str, Digest]:
    """tooldigest.sh's reading of the board's tools, in the shell bench_command runs in."""
    try:
        # The program is the first word that is not a variable assignment (RTGATE_ROOT=…).
        program = next(w for w in shlex.split(pi.opts.bench_command)
                       if not _ASSIGNMENT.match(w))
    except (ValueError, StopIteration) as exc:
        raise InputError(f"options.bench_command: no program to run in "
                         f"{pi.opts.bench_command!r}", path=board_path(pi.name)) from exc
    names = [n for n in dict.fromkeys([*TOOLS, *pi.opts.tools]) if n != "rtgate"]
    proc = pi.ssh.run(f"sh -s -- {shlex.join([program, *names])}",
                      stdin=TOOL_DIGEST.read_bytes(), timeout_s=600)
    found: dict[str, Digest] = {}
    for line in proc.stdout.decode("utf-8", "replace").splitlines():
        if m := _DIGEST_LINE.match(line):
            found[m.group(1)] = Digest(m.group(2), m.group(3).strip())
        elif m := _DIGEST_MISSING.match(line):
            found[m.group(1)] = Digest(None, m.group(2).strip())
    return found


def verify(pi: Pi, when: str, *, note_unpinned: bool) -> dict[str, str]:
    """Refuse a pinned tool whose digest differs (InfraError: the board needs a maintainer,
    not a re-run), note which are not pinned (given ``note_unpinned``); the digests measured,
    for the result."""
    digests = read(pi)
    source = board_path(pi.name)
    for name, pinned in pi.opts.tools.items():
        got = digests.get(name, Digest(None, "tooldigest.sh did not report it"))
        if got.sha256 is None:
            raise InfraError(f"{pi.name} {when}: tool {name!r} is pinned in {source} "
                             f"but has no digest on the board ({got.where}): refusing to "
                             "measure", path=pi.ssh.log)
        if got.sha256 != pinned:
            raise InfraError(f"{pi.name} {when}: tool {name!r} ({got.where}) has "
                             f"sha256 {got.sha256}, {source} pins {pinned}: refusing to "
                             "measure with a changed tool (reinstall it; pin a new digest "
                             "only once you know where it came from)", path=pi.ssh.log)
    unpinned = [n for n in TOOLS if n not in pi.opts.tools]
    if unpinned and note_unpinned:
        pi.say(f"rtgate: note: {pi.name}: tools not pinned, so not checked: "
               f"{', '.join(unpinned)} (options.tools in {source}; docs/rpi5.md shows how to "
               "pin them)")
    return {n: d.sha256 for n, d in digests.items() if d.sha256 is not None}
