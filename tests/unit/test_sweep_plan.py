"""`rtgate sweep` resolves its models, tuning profile, scenarios and the flavors a build would
need before the first build or boot (rtgate.pipeline.sweep.validate): every problem named, exit 2,
nothing made."""

from __future__ import annotations

from pathlib import Path

from clirun import RunCli


def test_every_problem_is_named_before_any_build(rtgate_cli: RunCli, tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = rtgate_cli("sweep", "--board", "qemu-arm64", "--models", "none,bogus",
                      "--scenarios", "nosuch,idle", "--duration", "10s", "--out", out,
                      "--tuning", "nosuch")
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert any("unknown preemption model(s) bogus" in line for line in lines), lines
    assert any("no such tuning profile 'nosuch'" in line for line in lines), lines
    assert any("no such scenario 'nosuch'" in line for line in lines), lines
    assert lines[-1] == ("rtgate: 3 problems found before any build or boot (above): nothing "
                         "was run")
    assert not out.exists()
