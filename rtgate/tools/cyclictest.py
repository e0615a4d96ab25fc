"""cyclictest as a measuring tool: wake-up latency of user-space threads, per thread.

Its command line comes from ``rtgate.cyclictest.command`` (checked against the installed
cyclictest's options), its raw files are the ``--json``, the ``--histfile``, stdout and the
block maxima the awk reducer makes of the ``-v`` stream as it runs."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import ClassVar

from rtgate.cyclictest.command import REDUCER, CyclictestCommand, CyclictestSpec, build
from rtgate.cyclictest.version import Capabilities
from rtgate.errors import InputError
from rtgate.result import NSEC_US, RESOLUTION_US, Result
from rtgate.tools.protocol import GuestShell, Kind, MeasuringTool, Metric, RunFacts

GUEST_REDUCER = "/tmp/rtgate-blockmaxima.awk"
VERBOSE_FIFO = "/tmp/rtgate-verbose"

LATENCY_METRICS = (
    Metric("max_us", "µs", "the largest wake-up latency"),
    Metric("p99_us", "µs", "the 99th percentile of wake-up latency"),
    Metric("p9999_us", "µs", "the 99.99th percentile of wake-up latency"),
    Metric("avg_us", "µs", "the mean wake-up latency"),
    Metric("pwcet_us", "µs", "the probabilistic worst case of wake-up latency"),
)
"""What a wake-up latency tool's budgets bound (rtgate.gate.thresholds.Budget)."""


def _moved(path: str | None, rawdir: Path) -> str | None:
    return None if path is None else str(rawdir / Path(path).name)


class Cyclictest(MeasuringTool):
    name: ClassVar[str] = "cyclictest"
    package: ClassVar[str] = "cyclictest"
    measures: ClassVar[Kind] = "wake-up latency"
    metrics = LATENCY_METRICS
    primary: ClassVar[str] = "max_us"
    options = CyclictestSpec
    local: ClassVar[bool] = True

    def command(self, options: CyclictestSpec, *, caps: Capabilities, duration_s: int,
                outdir: str, source: Path) -> CyclictestCommand:
        return build(options, caps, duration_s=duration_s, outdir=outdir, source=source)

    def resolution_us(self, options: CyclictestSpec) -> float:
        """ns with -N (``nsecs``, the default); a cyclictest without -N measures in µs instead,
        which only its results can say."""
        return NSEC_US if options.nsecs else RESOLUTION_US

    def on_controller(self, command: CyclictestCommand, rawdir: Path) -> CyclictestCommand:
        return replace(command, json_path=_moved(command.json_path, rawdir),
                       histfile=_moved(command.histfile, rawdir),
                       blocks=_moved(command.blocks, rawdir))

    def guest_lines(self, command: CyclictestCommand, shell: GuestShell) -> list[str]:
        """cyclictest, its -v stream reduced through a FIFO, with the hang guard."""
        program = REDUCER.read_text()
        raw, q = shell.raw, shell.quote
        return [
            f"  cat >{GUEST_REDUCER} <<'RTGATE-AWK'\n{program}RTGATE-AWK",
            f"  rm -f {VERBOSE_FIFO} && mkfifo {VERBOSE_FIFO}",
            f"  {q(command.reducer(GUEST_REDUCER))} <{VERBOSE_FIFO} "
            f">{raw}/cyclictest.stdout 2>{raw}/reducer.stderr &",
            "  red=$!",
            *shell.guarded(f"{q(command.argv)} >{VERBOSE_FIFO} 2>{raw}/cyclictest.stderr &"),
            f"  wait $red; echo $? >{shell.state}/reducer-rc",
        ]

    def parse(self, command: CyclictestCommand, rawdir: Path, run: RunFacts,
              strict: bool) -> tuple[Result | None, str | None]:
        """The richest readable raw output: the JSON with the histogram file (overflow cycle
        numbers), else either alone, else stdout (cyclictest 1.x), each with the block maxima
        and only then without them (the result is then partial). A file cut short by a kill
        makes its candidate fail and the next one is tried — unless ``strict``: files from a
        machine that may lie are read all together or not at all, so dropping the file that
        contradicts a forged one cannot leave the forgery standing."""
        # Here, not at the top: judging budgets asks the tools for their metrics, and needs no
        # parser's numpy (tests/unit/test_check_imports.py).
        from rtgate.cyclictest.parse import parse

        json_path, hist = command.json_path, command.histfile
        blocks = command.blocks
        stdout = str(rawdir / "cyclictest.stdout")
        bases: list[list[str | None]] = [[json_path, hist], [json_path], [hist], [stdout]]
        with_blocks = [[*b, blocks] for b in bases if any(b)] if blocks is not None else []
        problem = "cyclictest wrote no output"
        # Why each set of files could not be read together with the blocks file.
        without: dict[tuple[str | None, ...], str] = {}
        for names in [*with_blocks, *bases]:
            key = tuple(names[:-1]) if names in with_blocks else None
            files = [Path(n) for n in names if n is not None]
            if not files:
                continue
            if absent := [f for f in files if not (f.is_file() and f.stat().st_size > 0)]:
                if strict:
                    return None, f"{absent[0]}: missing or empty"
                if key is not None:
                    without[key] = f"{absent[-1]}: missing or empty"
                continue
            try:
                result = parse(files, board=run.board, virtual=run.virtual,
                               scenario=run.scenario, flavor=run.flavor, run_id=run.run_id)
            except InputError as exc:
                problem = exc.oneline()
                if strict:
                    break
                if key is not None:
                    without[key] = problem
                continue
            if blocks is not None and key is None:
                result.status = "partial"
                result.reasons.append(f"no block maxima: {without[tuple(names)]}")
            return result, None
        return None, problem

    def measuring_thread(self, comm: str, *, main: bool) -> bool:
        return comm == "cyclictest" and not main  # its main thread only waits

    def notes(self, command: CyclictestCommand) -> list[str]:
        return command.notes

    def pinned(self, options: CyclictestSpec, cpus: str) -> CyclictestSpec:
        return options.model_copy(update={"args": [*options.args, f"-a{cpus}"]})


TOOL = Cyclictest()
