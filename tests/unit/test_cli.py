"""The top-level CLI contract: every stage registered, exit codes documented, crashes never 1."""

from __future__ import annotations

import argparse

import pytest
from clirun import RunCli

from rtgate import cli


def test_help_lists_every_stage_and_the_exit_codes(rtgate_cli: RunCli) -> None:
    proc = rtgate_cli("--help")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for command in ("parse", "bench", "check", "kernel", "board", "pipeline", "report",
                    "compare"):
        assert command in out
    for code in "0123":
        assert f"\n  {code}  " in out


def test_a_crash_is_exit_3_not_the_budget_code(monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    def boom(args: argparse.Namespace) -> int:
        raise RuntimeError("disk on fire")

    parser = argparse.ArgumentParser()
    parser.set_defaults(func=boom)
    monkeypatch.setattr(cli, "build_parser", lambda command=None: parser)
    assert cli.main([]) == 3
    assert "rtgate: internal error: RuntimeError: disk on fire" in capsys.readouterr().err


def test_every_registered_command_is_in_the_lazy_table() -> None:
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert set(sub.choices) == set(cli.COMMANDS)
    for command, module in cli.COMMANDS.items():
        only = cli.build_parser(command)
        (action,) = [a for a in only._actions if isinstance(a, argparse._SubParsersAction)]
        assert command in action.choices, module
