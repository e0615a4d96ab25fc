"""Progress of a kernel build: a live status line on a terminal, stage lines in a CI log.

Every line of tool output goes to build.log; the screen only shows the stage, how many files
were compiled so far and the elapsed time, because a kernel build is minutes of make output.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from types import TracebackType
from typing import IO

from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from rtgate.kernel.bounded import LOG_TAIL, cut_log

_COMPILE_TAGS = ("CC", "AS", "LD", "AR", "DTC", "OBJCOPY", "GZIP", "HOSTCC")


class BuildProgress:
    def __init__(self, log_path: Path, label: str, enabled: bool = True) -> None:
        self.log_path = log_path
        self.label = label
        self.console = Console(stderr=True)
        self.live = enabled and self.console.is_terminal
        self.quiet = not enabled
        self._progress = Progress(SpinnerColumn(), TextColumn("{task.description}"),
                                  TextColumn("{task.completed} files"), TimeElapsedColumn(),
                                  console=self.console, transient=True, disable=not self.live)
        self._task = self._progress.add_task(label, total=None)
        self._log: IO[str] | None = None
        self._written = 0
        self._started = time.monotonic()

    def __enter__(self) -> BuildProgress:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("w", buffering=1)
        self._progress.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._progress.stop()
        if self._log is not None:
            self._log.close()
            cut_log(self.log_path)

    def stage(self, name: str) -> None:
        self.line(f"### rtgate: {name}")
        self._progress.update(self._task, description=f"{self.label}: {name}")
        if not self.live and not self.quiet:
            elapsed = time.monotonic() - self._started
            print(f"rtgate kernel: {self.label}: {name} ({elapsed:.0f}s)", file=sys.stderr,
                  flush=True)

    def line(self, text: str) -> None:
        assert self._log is not None
        self._log.write(text + "\n")
        # A build's output is the build's to choose: the log keeps its tail, never the disk.
        self._written += len(text) + 1
        if self._written > 2 * LOG_TAIL:
            self._log.close()
            cut_log(self.log_path)
            self._log = self.log_path.open("a", buffering=1)
            self._written = self.log_path.stat().st_size
        tag = text.split(maxsplit=1)[0] if text.strip() else ""
        if text.startswith("  ") and tag in _COMPILE_TAGS:
            self._progress.advance(self._task)

    def elapsed(self) -> float:
        return time.monotonic() - self._started
