"""One measurement on one board: deploy → boot → run → collect → restore, the step every loop
(pipeline, A/B rounds, bisect steps, the sweep) repeats; the driver runs, the one collect step
(rtgate.board.collect) makes the result."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rtgate.board.base import BoardDriver, KernelArtifacts, MeasuredRun
from rtgate.board.collect import collect
from rtgate.board.drivers import open_board
from rtgate.board.spec import BoardSpec
from rtgate.board.tuning import Profile


def measure(spec: BoardSpec, kernel: KernelArtifacts | None, scenario: str, duration_s: int,
            out: Path, *, flavor: str | None = None, scale: float | None = None,
            profile: Profile | None = None,
            follow_up: Callable[[BoardDriver, MeasuredRun], MeasuredRun] | None = None,
            ) -> MeasuredRun:
    """deploy → boot → run → collect → restore on one board (restore also on failure), set up
    with ``profile`` (applied, verified and recorded in the result); ``follow_up`` runs on the
    still booted board after collect (rtgate.breach)."""
    with open_board(spec, out) as board:
        board.profile = profile
        board.deploy(kernel)
        board.boot()
        raw = board.run(scenario, duration_s, out, flavor=flavor, scale=scale)
        measured = collect(raw)
        return follow_up(board, measured) if follow_up else measured
