"""Every `rtgate …` command the docs' shell blocks tell a person to type parses with rtgate's own
argument parser: a documented command never ends in a usage error (exit 2). Lines continued
with a backslash are joined, `sudo`, `$ ` prompts, environment assignments and comments are
taken off, and a pipeline or list (`&&`, `;`, `|`) is split into its commands. A command with
a placeholder (`$VAR`, `<x>`, `…`, `{}`) is set aside and counted, never guessed."""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest

from rtgate.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
BLOCK = re.compile(r"^( *)```(?:sh|bash|console|shell)\n(.*?)^\1```", re.M | re.S)
PLACEHOLDER = re.compile(r"[$<>…{}[]|\.\.\.")
OPERATORS = {"&&", "||", ";", "|", "&"}
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def commands(text: str) -> list[str]:
    """The `rtgate` command lines of a page's shell blocks, one string each."""
    found = []
    for block in BLOCK.finditer(text):
        body = re.sub(r"\\\n\s*", " ", block.group(2))
        for line in body.splitlines():
            line = re.sub(r"^\s*\$\s+", "", line)
            try:
                lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
                lexer.whitespace_split = True
                lexer.commenters = "#"
                words = list(lexer)
            except ValueError:  # a quote spanning lines: a heredoc's text, not a command
                continue
            command: list[str] = []
            for word in [*words, ";"]:
                if word not in OPERATORS:
                    command.append(word)
                    continue
                while command and (command[0] == "sudo" or ASSIGNMENT.match(command[0])):
                    command = command[3:] if command[:2] == ["sudo", "-u"] else command[1:]
                if command and re.fullmatch(r"(\S*/)?rtgate", command[0]):
                    found.append(shlex.join(["rtgate", *command[1:]]))
                command = []
    return found


def documented() -> list[tuple[str, str]]:
    return [(page.relative_to(ROOT).as_posix(), line) for page in PAGES
            for line in commands(page.read_text())]


def test_the_docs_tell_people_to_type_rtgate_commands() -> None:
    """The check below is not vacuous: the guides' shell blocks hold a few dozen commands, most
    without a placeholder."""
    found = documented()
    checked = [c for _, c in found if not PLACEHOLDER.search(c)]
    assert len(found) >= 25 and len(checked) >= 20, (len(found), len(checked))


@pytest.mark.parametrize("page, line", [c for c in documented() if not PLACEHOLDER.search(c[1])],
                         ids=lambda v: v if isinstance(v, str) and len(v) < 40 else None)
def test_a_documented_command_parses(page: str, line: str) -> None:
    argv = shlex.split(line)[1:]
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            build_parser(argv[0] if argv else None).parse_args(argv)
    except SystemExit as exc:
        assert exc.code in (0, None), f"{page}: `{line}`: {err.getvalue().strip()}"


def test_continued_lines_and_lists_are_read_as_commands() -> None:
    text = ("```sh\n$ sudo -u runner RTGATE_ROOT=/x rtgate board doctor rpi5 && \\\n"
            "  rtgate kernel pin --board rpi5   # a comment\n"
            "echo rtgate; .venv/bin/rtgate report --help | head\n```\n")
    assert commands(text) == ["rtgate board doctor rpi5", "rtgate kernel pin --board rpi5",
                              "rtgate report --help"]
