"""docs/lab.md's setup guide as steps: every shell block of its "Setting up the lab" section is
marked with where it runs, and the lab e2e (tests/e2e/test_lab_ansible.py) runs them in the
order written instead of keeping copies of its own.

A mark is an HTML comment on the line before the fence, ``<!-- lab: WHERE NAME -->``:

- ``workstation``: the admin's machine, in the checkout's top directory (ansible-playbook, git);
- ``controller``: on the controller as root;
- ``runner``: on the controller as the runner user, in its home (``sudo -iu rtgate-runner``);
- ``github``: GitHub itself (the web UI or its API): never run against GitHub here, parsed and
  checked by the tests the guide names;
- ``build``: a Pi kernel built on the controller (an hour of cross-compiling and the kernel's git
  repository): never run here; the e2e lays out a stand-in of what it writes, at the paths it
  names (the containers boot no Pi kernel);
- ``hardware``: a real Pi or the real controller's disks: never run here, parsed.

NAME is the step's name, unique on the page: the e2e keys what it checks after a step by it.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "lab.md"
SECTION = "## Setting up the lab"
RUN_HERE = ("workstation", "controller", "runner")
NEVER_HERE = ("github", "build", "hardware")
_MARKED = re.compile(r"^( *)<!-- lab: (\S+) (\S+) -->\n\1```sh\n(.*?)^\1```", re.M | re.S)
_FENCE = re.compile(r"^( *)```(\w*)\n(.*?)^\1```", re.M | re.S)


@dataclass(frozen=True)
class Step:
    where: str
    name: str
    text: str  # the block, dedented
    line: int  # 1-based line of its mark in docs/lab.md

    def with_changes(self, changes: dict[str, str]) -> str:
        """The block, continued lines joined, with what differs in the lab e2e replaced (each
        must be in the block, or the guide moved under the test: the test fails rather than run
        something else)."""
        text = re.sub(r"\s*\\\n\s*", " ", self.text)
        missing = [old for old in changes if old not in text]
        if missing:
            raise AssertionError(f"docs/lab.md:{self.line} ({self.name}): no {missing!r} in\n"
                                 f"{text}")
        for old, new in changes.items():
            text = text.replace(old, new)
        return text


def section(text: str) -> tuple[str, int]:
    """The setup section of the page and the line it starts on."""
    start = text.index(f"\n{SECTION}\n") + 1
    end = text.find("\n## ", start + len(SECTION))
    return text[start:end if end >= 0 else len(text)], text[:start].count("\n") + 1


def steps(text: str | None = None) -> list[Step]:
    """The marked blocks of the setup section, in order."""
    page = GUIDE.read_text() if text is None else text
    body, first = section(page)
    return [Step(m[2], m[3], textwrap.dedent(m[4]), first + body[:m.start()].count("\n"))
            for m in _MARKED.finditer(body)]


def unmarked(text: str | None = None) -> list[str]:
    """Shell blocks of the setup section without a mark (there must be none)."""
    body, _ = section(GUIDE.read_text() if text is None else text)
    fences = {m.start() + m[0].index("\n") + 1 for m in _MARKED.finditer(body)}
    return [m[3] for m in _FENCE.finditer(body)
            if m[2] in ("sh", "bash", "shell", "console") and m.start() not in fences]
