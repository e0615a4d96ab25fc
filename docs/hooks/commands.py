"""MkDocs hook: the command reference, one page per `rtgate` command, rendered at build time from
the argparse definitions (`rtgate.cli.build_parser`), so the pages cannot drift from the CLI.

The nav entry titled "Commands" in mkdocs.yml is replaced by the generated pages. Reading a
parser's structure needs argparse's underscored attributes (`_actions`, `_action_groups`,
`_choices_actions`): argparse has no public API for it, and they have been stable since 3.2.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

from rtgate.cli import build_parser

NAV_TITLE = "Commands"
FOLDER = "commands"
# Where each command's hand-written guide lives (a page of the site, with an anchor). A command
# missing here still gets its page; a wrong page or anchor fails `mkdocs build --strict`.
GUIDES: dict[str, tuple[str, str]] = {
    "parse": ("Measuring: normalizing", "measuring.md#normalizing-rtgate-parse"),
    "bench": ("Measuring", "measuring.md"),
    "check": ("Concepts: budgets", "concepts.md#budgets-thresholdsyml"),
    "thresholds": ("Concepts: budgets", "concepts.md#budgets-thresholdsyml"),
    "publish": ("Lab setup: how a pull request is judged", "lab.md#how-a-pull-request-is-judged"),
    "kernel": ("Kernels", "kernels.md"),
    "board": ("Boards", "boards.md"),
    "pipeline": ("Getting started: the whole gate",
                 "getting-started.md#the-whole-gate-rtgate-pipeline"),
    "ab": ("A/B rounds", "ab-bisect.md#ab-in-the-gate-rtgate-ab-measures-until-decided"),
    "bisect": ("Bisecting", "ab-bisect.md#which-patch-rtgate-bisect"),
    "sweep": ("The preemption-model sweep", "tuning.md#the-preemption-model-sweep-rtgate-sweep"),
    "report": ("Publishing", "publishing.md"),
    "compare": ("Publishing: before and after", "publishing.md#before-and-after-rtgate-compare"),
    "lab": ("Lab setup: the runner supervisors", "lab.md#the-runner-supervisors"),
}


@dataclass(frozen=True)
class Command:
    name: str
    summary: str
    parser: argparse.ArgumentParser


def subcommands(parser: argparse.ArgumentParser) -> list[Command]:
    """The parser's subcommands in `--help` order, with the one-line help each was added with."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            summaries = {a.dest: a.help or "" for a in action._choices_actions}
            return [Command(name, summaries.get(name, ""), sub)
                    for name, sub in action.choices.items()]
    return []


_MARKDOWN_SPECIAL = re.compile(r"([\\*_\[\]|#])")


def escape(text: str) -> str:
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


def prose(text: str) -> str:
    """Help text as Markdown: `code spans` kept, every other character Markdown would read
    (emphasis, links, HTML, table pipes) escaped."""
    parts = text.split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: no code spans at all
        return escape(text)
    return "".join(f"`{part}`" if i % 2 else escape(part) for i, part in enumerate(parts))


def text_block(text: str) -> str:
    fence = "````" if "```" in text else "```"
    return f"{fence}text\n{text.rstrip()}\n{fence}"


def paragraphs(text: str) -> str:
    """A description or epilog: prose paragraphs as Markdown; preformatted ones (exit-code
    lists, indented continuation lines) as text blocks, as `--help` prints them."""
    out = []
    for para in re.split(r"\n\s*\n", text.strip("\n")):
        lines = para.splitlines()
        # Indented or column-aligned lines are laid out by hand: keep them as printed.
        if any(line[:1].isspace() or re.search(r"\S  +\S", line) for line in lines):
            out.append(text_block(para))
        else:
            out.append(prose(" ".join(line.strip() for line in lines)))
    return "\n\n".join(out)


def options_table(parser: argparse.ArgumentParser, group: argparse._ArgumentGroup) -> str:
    formatter = parser._get_formatter()
    rows = []
    for action in group._group_actions:
        if action.help == argparse.SUPPRESS or isinstance(action, argparse._HelpAction):
            continue
        if isinstance(action, argparse._SubParsersAction):
            continue
        invocation = formatter._format_action_invocation(action)
        meaning = prose(formatter._expand_help(action)) if action.help else ""
        if action.choices is not None and not action.help:
            meaning = "one of " + ", ".join(f"`{c}`" for c in action.choices)
        if action.required and action.option_strings:
            meaning = f"**required**; {meaning}" if meaning else "**required**"
        rows.append(f"| `{invocation}` | {meaning} |")
    if not rows:
        return ""
    return "| argument | meaning |\n| --- | --- |\n" + "\n".join(rows)


def render_parser(parser: argparse.ArgumentParser, level: int) -> str:
    parts = [text_block(parser.format_usage().removeprefix("usage: "))]
    if parser.description:
        parts.append(paragraphs(parser.description))
    for group in parser._action_groups:
        table = options_table(parser, group)
        if not table:
            continue
        title = group.title or "arguments"
        parts.append(f"{'#' * (level + 1)} {title[:1].upper()}{title[1:]}")
        if group.description:
            parts.append(paragraphs(group.description))
        parts.append(table)
    for sub in subcommands(parser):
        parts.append(f"{'#' * level} `{sub.parser.prog}`")
        if sub.summary:
            parts.append(prose(sub.summary[:1].upper() + sub.summary[1:]) + ".")
        parts.append(render_parser(sub.parser, level + 1))
    if parser.epilog:
        parts.append(paragraphs(parser.epilog))
    return "\n\n".join(parts)


def command_page(command: Command) -> str:
    head = [f"# `rtgate {command.name}`", "",
            prose(command.summary[:1].upper() + command.summary[1:]) + "."]
    if command.name in GUIDES:
        title, target = GUIDES[command.name]
        head += ["", f"How it is used, and why: [{title}](../{target})."]
    head += ["", "*Generated from `rtgate " + command.name + " --help` when the site is built.*"]
    return "\n".join(head) + "\n\n" + render_parser(command.parser, level=2) + "\n"


def index_page(parser: argparse.ArgumentParser) -> str:
    rows = "\n".join(f"| [`rtgate {c.name}`]({c.name}.md) | {prose(c.summary)} |"
                     for c in subcommands(parser))
    return (f"# Commands\n\n{prose(parser.description or '')} Every command is "
            "`rtgate COMMAND` (or `python -m rtgate COMMAND`); each page here is generated "
            "from its `--help` when the site is built.\n\n"
            f"| command | what it does |\n| --- | --- |\n{rows}\n\n"
            "## Exit codes\n\nThe same codes for every command; what each means for a "
            "verdict is in [Concepts](../concepts.md#outcomes-and-exit-codes).\n\n"
            f"{text_block(parser.epilog or '')}\n")


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    pages = [{"Overview": f"{FOLDER}/index.md"}]
    pages += [{f"rtgate {c.name}": f"{FOLDER}/{c.name}.md"} for c in subcommands(build_parser())]
    for entry in config.nav or []:
        if isinstance(entry, dict) and NAV_TITLE in entry:
            entry[NAV_TITLE] = pages
    return config


def on_files(files: Files, config: MkDocsConfig) -> Files:
    parser = build_parser()
    files.append(File.generated(config, f"{FOLDER}/index.md", content=index_page(parser)))
    for command in subcommands(parser):
        files.append(File.generated(config, f"{FOLDER}/{command.name}.md",
                                    content=command_page(command)))
    return files
