"""The measuring tools' protocol (issue 38): a tool is one module behind rtgate.tools, and a
fourth one joins by being registered — scenario, plan, guest script, tuning, assembly and the
result take it without a line changed elsewhere. The fake tool here is the test's: it runs
`sh -c` printing a number, so the guest script it gets is checked, not run."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import ClassVar

import pytest
from pydantic import BaseModel, ConfigDict

from rtgate import tools
from rtgate.board.qemu import guestscript
from rtgate.board.qemu.guestenv import on_controller
from rtgate.board.tuning import Applied, load_profile
from rtgate.cyclictest.version import Capabilities, parse_help
from rtgate.errors import InputError
from rtgate.harness.assemble import RunInfo, assemble
from rtgate.harness.environment import Environment
from rtgate.harness.plan import Params, make_plan
from rtgate.harness.runner import RunLog
from rtgate.harness.scenario import load_scenario
from rtgate.result import Board, Kernel, Result, Tool, Totals

ROOT = Path(__file__).resolve().parents[2]
CAPS = parse_help((ROOT / "tests" / "data" / "help" / "cyclictest-2.40.txt").read_text())


class PingOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    pings: int = 3
    cpus: str | None = None


@dataclass(frozen=True)
class PingCommand:
    argv: list[str]
    stdout: str


class Ping(tools.MeasuringTool):
    name: ClassVar[str] = "ping4"
    package: ClassVar[str] = "ping4"
    measures: ClassVar[tools.Kind] = "OS noise"
    metrics = (tools.Metric("max_gap_us", "µs", "the longest gap between two pings"),)
    primary: ClassVar[str] = "max_gap_us"
    options = PingOptions

    def command(self, options: PingOptions, *, caps: Capabilities, duration_s: int,
                outdir: str, source: Path) -> PingCommand:
        if options.pings > 100:
            raise InputError("ping4.pings: at most 100", path=source)
        return PingCommand(["ping4", "-n", str(options.pings), "-d", str(duration_s),
                            *(["-c", options.cpus] if options.cpus else [])],
                           f"{outdir}/ping4.stdout")

    def on_controller(self, command: PingCommand, rawdir: Path) -> PingCommand:
        return replace(command, stdout=str(rawdir / "ping4.stdout"))

    def guest_lines(self, command: PingCommand, shell: tools.GuestShell) -> list[str]:
        return shell.guarded(f"{shell.quote(command.argv)} >{command.stdout} &")

    def parse(self, command: PingCommand, rawdir: Path, run: tools.RunFacts,
              strict: bool) -> tuple[Result | None, str | None]:
        text = Path(command.stdout).read_text()
        if not re.fullmatch(r"\d+\n", text):
            return None, f"{command.stdout}: not a gap"
        return Result(run_id=run.run_id, board=Board(name=run.board), kernel=Kernel(),
                      scenario=run.scenario, tool=Tool(name=self.name), threads=[],
                      totals=Totals(samples=0), status="complete",
                      notes=[f"max gap {int(text)} us"]), None

    def pinned(self, options: PingOptions, cpus: str) -> PingOptions:
        return options.model_copy(update={"cpus": cpus or None})


@pytest.fixture(scope="module", autouse=True)
def ping() -> None:
    tools.register(Ping())


def scenario_file(tmp_path: Path) -> Path:
    path = tmp_path / "pings.yml"
    path.write_text("name: pings\ndescription: the fake fourth tool\ntool: ping4\n"
                    "ping4:\n  pings: 7\nloads:\n  - name: spin\n    argv: [sleep, '60']\n")
    return path


def test_a_fourth_tool_joins_without_touching_another_module(tmp_path: Path) -> None:
    assert tools.names()[:1] == ["cyclictest"] and {"timerlat", "ping4"} <= set(tools.names())
    scenario, source = load_scenario(str(scenario_file(tmp_path)))
    assert scenario.tool == "ping4" and scenario.options() == PingOptions(pings=7)
    params = Params(cpus=2, port=5201, tmpdir="/t", scale=1.0, timeout_s=60)
    plan = make_plan(scenario, source, CAPS, duration_s=5, params=params,
                     outdir=guestscript.RAW)
    assert plan.tool == "ping4"
    assert plan.command == PingCommand(["ping4", "-n", "7", "-d", "5"],
                                       f"{guestscript.RAW}/ping4.stdout")
    # The guest script: the tool's own line, under the hang guard, its exit status noted.
    script = guestscript.render(plan, ["spin"], epoch=0)
    assert f"  ping4 -n 7 -d 5 >{guestscript.RAW}/ping4.stdout &\n  ct=$!" in script
    assert f"echo $? >{guestscript.STATE}/ping4-rc" in script and "cyclictest " not in script
    # A tuning profile pins it as it pins cyclictest.
    pinned = Applied(load_profile("isolated"), "qemu-arm64", 2).pin(scenario)
    assert pinned.options().cpus == "1"
    # Assembled from its raw file on the controller: its parser, its name, its version slot.
    rawdir = tmp_path / "raw"
    rawdir.mkdir()
    (rawdir / "ping4.stdout").write_text("42\n")
    env = Environment(kernel_release="6.12", kernel_version="#1", machine="aarch64",
                      preempt_rt=True, tools={})
    info = RunInfo(run_id="r", board="qemu-arm64", virtual=True, flavor="rt",
                   cyclictest_version="2.5")
    result = assemble(on_controller(plan, rawdir), RunLog(cyclictest_rc=0), env, rawdir, info)
    assert (result.tool.name, result.tool.cmdline) == ("ping4", "ping4 -n 7 -d 5")
    assert result.status == "complete" and result.notes == ["max gap 42 us"]
    assert result.environment["tools"]["ping4"] is None  # no version known for it
    assert result.environment["cyclictest_notes"] == []


def test_a_tools_options_are_its_own_to_check(tmp_path: Path) -> None:
    path = scenario_file(tmp_path)
    path.write_text(path.read_text().replace("pings: 7", "pingz: 7"))
    with pytest.raises(InputError, match="pingz"):
        load_scenario(str(path))
    path.write_text(path.read_text().replace("pingz: 7", "pings: 700"))
    scenario, source = load_scenario(str(path))
    params = Params(cpus=2, port=5201, tmpdir="/t", scale=1.0, timeout_s=60)
    with pytest.raises(InputError, match="at most 100"):
        make_plan(scenario, source, CAPS, duration_s=5, params=params, outdir="/o")
    path.write_text(path.read_text().replace("tool: ping4", "tool: ping5"))
    with pytest.raises(InputError, match="unknown tool 'ping5'"):
        load_scenario(str(path))


def test_only_the_timerlat_modules_ask_whether_a_tool_is_timerlat() -> None:
    """Issue 38: no `if …timerlat` outside the timerlat module (rtgate/tools/timerlat.py and
    the rtla readers in rtgate/timerlat/); other modules ask the tool."""
    branch = re.compile(r"\b(if|elif|while|and|or)\b[^#\n]*['\"]timerlat['\"]|"
                        r"['\"]timerlat['\"][^#\n]*\bif\b|(?<!rtgate)\.timerlat\b")
    mine = {ROOT / "rtgate" / "tools" / "timerlat.py"}
    found = [f"{p.relative_to(ROOT)}:{n}" for p in sorted((ROOT / "rtgate").rglob("*.py"))
             if p not in mine and ROOT / "rtgate" / "timerlat" not in p.parents
             for n, line in enumerate(p.read_text().splitlines(), 1) if branch.search(line)]
    assert found == []
