"""The local board: the machine rtgate runs on. Nothing to deploy, boot or restore."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from rtgate.bench import cli as bench_cli
from rtgate.board.base import Board, KernelArtifacts, Measurement, RawRun
from rtgate.board.spec import BoardSpec
from rtgate.errors import InfraError, InputError
from rtgate.result import load_result


class LocalBoard(Board):
    def __init__(self, spec: BoardSpec, workdir: Path) -> None:
        super().__init__(spec)
        self.workdir = workdir

    def deploy(self, kernel: KernelArtifacts | None) -> None:
        if kernel is not None and kernel.release != os.uname().release:
            raise InputError(f"board {self.spec.name!r} cannot boot another kernel (built "
                             f"{kernel.release}, running {os.uname().release})")
        self.kernel = kernel

    def boot(self) -> str:
        return os.uname().release

    def run(self, scenario: str, duration_s: int, out: Path, *, flavor: str | None = None,
            scale: float | None = None) -> RawRun:
        # The local runner writes result.json itself; its exit code is the result's status,
        # which collect() reads back from the file.
        bench_cli.run(argparse.Namespace(board=self.spec.name, scenario=scenario,
                                         duration=duration_s, out=out, flavor=flavor,
                                         scale=scale))
        return RawRun(out=out, scenario=scenario, flavor=flavor, run_id="")

    def collect(self, raw: RawRun) -> Measurement:
        path = raw.out / "result.json"
        if not path.is_file():
            raise InfraError("the local run wrote no result.json", path=raw.out)
        return Measurement(result=load_result(path), result_path=path, raw_dir=raw.out / "raw")

    def restore(self) -> None:
        """Nothing was changed."""
