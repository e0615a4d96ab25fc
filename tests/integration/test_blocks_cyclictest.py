"""Block maxima from real cyclictest runs on this machine."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_blocks import _check_consistent

from rtgate.cyclictest.command import CyclictestSpec, build
from rtgate.cyclictest.parse import parse
from rtgate.cyclictest.version import detect

needs_cyclictest = pytest.mark.skipif(shutil.which("cyclictest") is None,
                                      reason="cyclictest not installed")


def _real_run(tmp_path: Path, keep_lines: int | None, block_cycles: int | None = None,
              nsecs: bool = False) -> tuple[Path, ...]:
    """A real cyclictest with rtgate's command line, its -v stream through the reducer, cut
    after ``keep_lines`` lines when given (cyclictest itself keeps running to its end)."""
    spec = CyclictestSpec(args=["-m", "-p99", "-i200", "-t"], histogram_us=2000,
                          block_cycles=block_cycles, nsecs=nsecs)
    cmd = build(spec, detect(), duration_s=2, outdir=str(tmp_path), source=Path("x.yml"))
    cut = f" | sed -n 1,{keep_lines}p" if keep_lines else ""
    script = (f"{shlex.join(cmd.argv)}{cut} | {shlex.join(cmd.reducer())}"
              f" >{tmp_path}/stdout")
    subprocess.run(["sh", "-c", script], check=True, timeout=60)
    assert cmd.json_path and cmd.blocks and (cmd.histfile is None) == nsecs
    return tuple(Path(p) for p in (cmd.json_path, cmd.histfile, cmd.blocks) if p is not None)


@needs_cyclictest
def test_real_run_with_v_keeps_json_and_histogram(tmp_path: Path) -> None:
    files = _real_run(tmp_path, None)
    # -v together with -h/--histfile and --json: both still written, and they agree.
    doc = json.loads(files[0].read_text())
    assert doc["thread"]["0"]["histogram"] and "# Histogram" in files[1].read_text()
    result = parse(list(files), board="local")
    assert result.status == "complete", result.reasons
    _check_consistent(result)
    assert [t.blocks.block_cycles for t in result.threads] == [5000] * len(result.threads)
    # The -v text is not kept: stdout holds cyclictest's header lines only.
    assert len((tmp_path / "stdout").read_text().splitlines()) < 10


@needs_cyclictest
def test_real_run_with_lost_samples_is_partial(tmp_path: Path) -> None:
    # 2 s at -i200 is ~10^4 cycles a thread; 3000 lines of all threads, in blocks of 200.
    files = _real_run(tmp_path, 3000, block_cycles=200)
    result = parse(list(files), board="local")
    assert result.status == "partial"
    for t in result.threads:
        assert t.blocks is not None and t.blocks.cycles < t.samples - 200
        assert (f"thread {t.thread}: the block maxima account for {t.blocks.cycles} of "
                f"{t.samples} cycles: the other {t.samples - t.blocks.cycles} never reached the "
                "-v stream, more than a block (200 cycles)") in result.reasons
    # The maximum may also be among the lost samples: then that is said too, with the numbers.
    assert all(r.startswith("thread ") for r in result.reasons)


@needs_cyclictest
def test_real_run_in_ns(tmp_path: Path) -> None:
    """-N (the harness's default): the --json keeps cyclictest's 1 ns histogram under 1 ms
    (no --histfile: a million rows), the reducer bins the stream log-linearly; the result is
    complete, in ns, its block maxima in its histogram's bins."""
    json_path, blocks = _real_run(tmp_path, None, nsecs=True)
    doc = json.loads(json_path.read_text())
    assert doc["resolution_in_ns"] == 1 and "-N" in doc["cmdline:"].split()  # sic, rt-tests
    assert blocks.read_text().startswith("rtgate-blocks 1 block_cycles 5000 ns\n")
    result = parse([json_path, blocks], board="local")
    assert result.status == "complete", result.reasons
    assert result.resolution_us == 0.001
    _check_consistent(result)
    assert all(t.histogram is not None and t.histogram.log_linear for t in result.threads)


@needs_cyclictest
def test_bench_cli_local_idle_blocks_match_the_histogram(tmp_path: Path) -> None:
    out = tmp_path / "run"
    subprocess.run([sys.executable, "-m", "rtgate", "bench", "--board", "local", "--scenario",
                    "idle", "--duration", "3s", "--out", str(out)], check=True, timeout=120)
    from rtgate.result import load_result
    result = load_result(out / "result.json")
    assert result.status == "complete", result.reasons
    _check_consistent(result)
    assert {t.blocks.block_cycles for t in result.threads} == {10_000}  # -i100: 1 s
    assert "blocks" in [s.format for s in result.sources]
    assert (out / "raw" / "blocks.txt").is_file()
    stdout = (out / "raw" / "cyclictest.stdout").read_text()
    assert len(stdout.splitlines()) < 10  # header lines only, no sample kept
