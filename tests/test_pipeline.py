"""`rtgate pipeline` end to end through the real CLI: local host, and the QEMU virtual Pi with the
real stock and PREEMPT_RT kernels built once per session."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from clirun import RunCli
from junitparser import Error, Failure, JUnitXml

from rtgate.board.spec import load_board, scenarios_of
from rtgate.errors import Exit
from rtgate.gate.junit import render as render_junit
from rtgate.gate.markdown import render as render_markdown
from rtgate.gate.verdict import Infra, worst
from rtgate.kernel.build import BuildResult
from rtgate.pipeline import _versus
from rtgate.result import load_result


def cases_of(junit: Path) -> dict[str, list[object]]:
    return {case.name: list(case.result) for suite in JUnitXml.fromfile(str(junit))
            for case in suite}


def test_local_board_refuses_several_flavors(rtgate_cli: RunCli, tmp_path: Path) -> None:
    proc = rtgate_cli("pipeline", "--board", "local", "--flavors", "stock,rt",
                      "--scenarios", "idle", "--duration", "2s", "--out", tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith("rtgate: ")
    assert "cannot boot stock, rt" in proc.stderr


def test_infra_failure_is_an_error_testcase_and_exit_3(tmp_path: Path) -> None:
    infra = Infra("qemu-arm64", "rt", "all-in", tmp_path / "console.log",
                  "console.log: no RTGATE-READY line within 120 s")
    assert worst([infra.exit, Exit.BUDGET]) is Exit.INCOMPLETE
    junit = tmp_path / "junit.xml"
    junit.write_text(render_junit([infra]))
    (error,) = cases_of(junit)["qemu-arm64/rt/all-in: infrastructure"]
    assert isinstance(error, Error) and "no RTGATE-READY" in error.message
    md = render_markdown([infra])
    assert "| `qemu-arm64` | `rt` | `all-in` |" in md and "infrastructure failure" in md
    assert "(exit 3)" in md


@pytest.mark.integration
def test_local_pipeline_measures_the_boards_own_scenarios_and_gates(rtgate_cli: RunCli,
                                                                    tmp_path: Path) -> None:
    # No --scenarios: the board file names them (local: cpu).
    proc = rtgate_cli("pipeline", "--board", "local", "--duration", "3s", "--out", tmp_path)
    assert proc.returncode == 0, proc.stderr
    result = load_result(next(tmp_path.glob("*/cpu/result.json")))
    assert result.status == "complete" and result.totals.samples > 1000
    cases = cases_of(tmp_path / "junit.xml")
    assert any(name.startswith("local/") and ": max_us <= " in name for name in cases)
    assert not any(cases.values()), "no failure or error expected on the smoke budgets"
    assert "### `local` / `cpu`" in (tmp_path / "comparison.md").read_text()


@pytest.fixture(scope="module")
def qemu_kernels(kernel_build: Callable[[str, str], BuildResult],
                 tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session's real qemu-arm64 builds laid out as `--kernels DIR/<flavor>/`."""
    root = tmp_path_factory.mktemp("pipeline-kernels")
    for flavor in ("stock", "rt"):
        (root / flavor).symlink_to(kernel_build("qemu-arm64", flavor).out)
    return root


@pytest.mark.kernel
@pytest.mark.integration
def test_qemu_pipeline_stock_and_rt(rtgate_cli: RunCli, qemu_kernels: Path,
                                    tmp_path: Path) -> None:
    # `net`: the host is the guest's iperf3 peer, as in `make demo`. (Under TCG emulation the
    # paper's all-in starves cyclictest itself: a partial result, exit 3.)
    proc = rtgate_cli("pipeline", "--board", "qemu-arm64", "--flavors", "stock,rt",
                      "--scenarios", "net", "--duration", "5s", "--kernels", qemu_kernels,
                      "--out", tmp_path)
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    for flavor, rt in (("stock", False), ("rt", True)):
        result = load_result(tmp_path / flavor / "net" / "result.json")
        assert result.board.virtual is True
        assert result.kernel.preempt_rt is rt
        assert result.kernel.flavor == flavor
        assert result.status == "complete", result.reasons
        built = json.loads((qemu_kernels / flavor / "metadata.json").read_text())
        assert result.kernel.release == built["kernel_release"]
    cases = cases_of(tmp_path / "junit.xml")
    for flavor in ("stock", "rt"):
        assert any(name.startswith(f"qemu-arm64/{flavor}/net: max_us <= ") for name in cases)
    assert not any(isinstance(r, Error) for results in cases.values() for r in results)
    assert (proc.returncode == 1) == any(isinstance(r, Failure) for rs in cases.values()
                                         for r in rs)
    comparison = (tmp_path / "comparison.md").read_text()
    assert "virtual board, not a real-time claim" in comparison
    assert "| `rt` |" in comparison and "| `stock` |" in comparison
    # Under a loaded emulator RT can come out slower: the sentence says which, never "0.4x shorter".
    assert re.search(r"PREEMPT_RT's maximum latency is \d+\.\dx (shorter|longer) than stock's",
                     proc.stdout)


@pytest.mark.kernel
@pytest.mark.integration
def test_qemu_pipeline_wrong_release_is_infra_not_pass(rtgate_cli: RunCli, qemu_kernels: Path,
                                                      tmp_path: Path) -> None:
    """A kernel that is not the one the board booted must never be measured as if it were."""
    fake = tmp_path / "kernels"
    shutil.copytree(qemu_kernels / "rt", fake / "rt", symlinks=False)
    meta = json.loads((fake / "rt" / "metadata.json").read_text())
    meta["kernel_release"] = "6.12.0-not-what-booted"
    (fake / "rt" / "metadata.json").write_text(json.dumps(meta))
    out = tmp_path / "out"
    proc = rtgate_cli("pipeline", "--board", "qemu-arm64", "--flavors", "rt",
                      "--scenarios", "idle", "--duration", "2s", "--kernels", fake, "--out", out)
    assert proc.returncode == 3, proc.stderr[-3000:]
    cases = cases_of(out / "junit.xml")
    assert list(cases) == ["qemu-arm64/rt/idle: infrastructure"]
    (error,) = cases["qemu-arm64/rt/idle: infrastructure"]
    assert isinstance(error, Error) and "not-what-booted" in error.message
    assert "infrastructure failure" in (out / "summary.md").read_text()
    assert not (out / "rt" / "idle" / "result.json").exists()


@pytest.mark.parametrize("board, requested, expected", [
    ("rpi5", None, ["all-in"]),
    ("qemu-arm64", None, ["net"]),
    ("qemu-arm64", ["idle", "board"], ["idle", "net"]),
    ("local", ["cpu", "board"], ["cpu"]),
    ("rpi5", ["io", "vm"], ["io", "vm"]),
])
def test_board_stands_for_the_boards_own_scenarios(board: str, requested: list[str] | None,
                                                   expected: list[str]) -> None:
    assert scenarios_of(load_board(board), requested) == expected


@pytest.mark.parametrize(("stock", "rt", "words"), [
    (36802, 124, "296.8x shorter than"), (100, 250, "2.5x longer than"),
    (None, 124, "— (not measured) against")])
def test_rt_against_stock_in_words_that_stay_true(stock: float | None, rt: float,
                                                  words: str) -> None:
    assert _versus(stock, rt) == words
