"""Scenarios are data: which measuring tool (cyclictest, or another of ``rtgate.tools``: ``tool:
timerlat`` for rtla timerlat hist) with which options (a block named after the tool), and which
loads, one YAML file each.

Loads are argv templates. Placeholders are filled in when a run is planned:

``{cpus}``      online CPUs where the scenario runs
``{port}``      a free TCP port on loopback (iperf3 server and client of one run share it)
``{tmpdir}``    a scratch directory for file-system stressors, removed after the run
``{timeout}``   seconds the load must outlive (warm-up + duration + margin): a load left behind
                by a killed rtgate still ends on its own
``{scale}``     the scale factor (``scale:`` in the file, ``--scale`` on the CLI)
``{scaled:N}``  N × scale, rounded, at least 1 (instances, streams)
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from rtgate import paths, tools
from rtgate.cyclictest.command import CyclictestSpec
from rtgate.yamlsource import load_named

PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
SIMPLE = {"cpus", "port", "tmpdir", "timeout", "scale"}
SCALED = re.compile(r"^scaled:(\d+(?:\.\d+)?)$")


def check_template(text: str) -> str:
    for inner in PLACEHOLDER.findall(text):
        if inner not in SIMPLE and not SCALED.match(inner):
            known = ", ".join(f"{{{n}}}" for n in sorted(SIMPLE)) + ", {scaled:N}"
            raise ValueError(f"unknown placeholder {{{inner}}} in {text!r} (known: {known})")
    return text


class LoadSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$",
                      description="Identifier; its output is kept as raw/<name>.stdout/.stderr.")
    argv: list[str] = Field(min_length=1, description="Command and arguments (templates).")
    listens_on: str | None = Field(
        None, pattern=r"^(\{port\}|[0-9]+)$",
        description="The TCP port ({port} or a number) this load listens on: the next load "
                    "starts only once it listens.")

    @field_validator("argv")
    @classmethod
    def _templates(cls, argv: list[str]) -> list[str]:
        return [check_template(a) for a in argv]


class Scenario(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    description: str
    scale: float = Field(
        1.0, gt=0, le=100,
        description="Multiplies {scaled:N} counts; `rtgate bench --scale` overrides it.")
    warmup_s: float = Field(2.0, ge=0, le=600,
                            description="Seconds the loads run before cyclictest starts.")
    tool: str = Field(
        "cyclictest", description="What measures: a tool of rtgate.tools (cyclictest; timerlat, "
                                  "rtla timerlat hist, on boards whose kernel has the timerlat "
                                  "tracer: qemu-arm64). Its options are the block named after "
                                  "it.")
    cyclictest: CyclictestSpec = Field(
        default_factory=CyclictestSpec,
        description="cyclictest's options; kept for every tool, since the breach tracer's "
                    "follow-up run measures with cyclictest where the kernel has no timerlat.")
    tool_options: dict[str, Any] = Field(default_factory=dict, exclude=True)
    """The other tools' blocks, each validated by its tool's options model."""
    loads: list[LoadSpec] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _tool_blocks(cls, data: Any) -> Any:
        if isinstance(data, dict):
            blocks = {k: data[k] for k in data if k != "cyclictest" and k in tools.names()}
            data = {k: v for k, v in data.items() if k not in blocks}
            data["tool_options"] = {**data.get("tool_options", {}), **blocks}
        return data

    @field_validator("tool")
    @classmethod
    def _known_tool(cls, tool: str) -> str:
        if tool not in tools.names():
            raise ValueError(f"unknown tool {tool!r} (known: {', '.join(tools.names())})")
        return tool

    @model_validator(mode="after")
    def _options(self) -> Scenario:
        for name, block in list(self.tool_options.items()):
            model = tools.get(name).options
            self.tool_options[name] = (block if isinstance(block, model)
                                       else model.model_validate(block))
        if self.tool != "cyclictest":
            self.tool_options.setdefault(self.tool, tools.get(self.tool).options())
        return self

    def options(self, tool: str | None = None) -> Any:
        """The options of ``tool`` (default: the measuring one) as its model holds them."""
        name = tool or self.tool
        return self.cyclictest if name == "cyclictest" else self.tool_options[name]

    @field_validator("loads")
    @classmethod
    def _unique_names(cls, loads: list[LoadSpec]) -> list[LoadSpec]:
        names = [load.name for load in loads]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"duplicate load name(s): {', '.join(dupes)}")
        return loads


def scenario_path(ref: str, root: Path | None = None) -> Path:
    """A scenario name (``cpu``) from ``bench/scenarios/``, or a path to a ``.yml`` file."""
    if ref.endswith((".yml", ".yaml")) or "/" in ref:
        return Path(ref)
    return (root or paths.SCENARIOS) / f"{ref}.yml"


def load_scenario(ref: str, root: Path | None = None) -> tuple[Scenario, Path]:
    path = scenario_path(ref, root)
    return load_named(path, Scenario, "scenario"), path


def list_scenarios(root: Path | None = None) -> list[Scenario]:
    return [load_scenario(p.stem, root)[0] for p in sorted((root or paths.SCENARIOS).glob("*.yml"))]
