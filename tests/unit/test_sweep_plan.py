"""`rtgate sweep` resolves its models, tuning profile, scenarios and the kernels of the builds it
expects before the first build or boot (rtgate.pipeline.sweepplan.validate): every problem named,
exit 2, nothing made; `--dry-run` prints the plan."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from clirun import RunCli
from fakekernel import built_kernel

PLANS = Path(__file__).parents[1] / "data" / "plans"


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


@pytest.mark.parametrize(("argv", "reference"), [
    (["--scenarios", "idle,net", "--duration", "20s", "--tuning", "isolated"],
     "sweep-qemu-arm64.yml"),
    (["--models", "none,rt", "--static", "--scenarios", "all-in", "--duration", "30s"],
     "sweep-qemu-arm64-static.yml"),
])
def test_the_plan_is_printed_without_a_device(rtgate_cli: RunCli, tmp_path: Path,
                                              argv: list[str], reference: str) -> None:
    """`--dry-run`: every model × scenario with its build, the boot word that chooses a dynamic
    build's model, the scenario file and tool, and where each kernel comes from, as the
    reference file says; nothing built, OUT not made. Regenerate a reference with the same
    command when a scenario or fragment moves."""
    out = tmp_path / "out"
    proc = rtgate_cli("sweep", "--board", "qemu-arm64", *argv, "--out", out, "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (PLANS / reference).read_text()
    assert not out.exists()


def test_prebuilt_kernels_decide_dynamic_or_one_build_per_model(rtgate_cli: RunCli,
                                                                tmp_path: Path) -> None:
    """Given kernels, the stock build's own .config says whether one build serves the models;
    without PREEMPT_DYNAMIC each model needs its own build, and a missing one is named with the
    other problems before anything runs."""
    kernels = tmp_path / "kernels"
    built_kernel(kernels / "stock", "CONFIG_PREEMPT_DYNAMIC=y\n")
    built_kernel(kernels / "rt", "CONFIG_PREEMPT_RT=y\n")
    out = tmp_path / "out"
    argv = ["sweep", "--board", "qemu-arm64", "--kernels", kernels, "--scenarios", "idle",
            "--duration", "10s", "--out", out, "--dry-run"]
    proc = rtgate_cli(*argv)
    assert proc.returncode == 0, proc.stderr
    plan = yaml.safe_load(proc.stdout)
    assert plan["models"] == "dynamic" and set(plan["kernels"]) == {"stock", "rt"}
    assert [r["boot"] for r in plan["runs"]] == ["preempt=none", "preempt=voluntary",
                                                 "preempt=full", None]

    (kernels / "stock" / ".config").write_text("# CONFIG_PREEMPT_DYNAMIC is not set\n",
                                               encoding="utf-8")
    proc = rtgate_cli(*argv[:-1], "--models", "none,rt", "--scenarios", "idle,nosuch")
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert any(f"{kernels / 'none'}: not a kernel build (no metadata.json)" in line
               for line in lines), lines
    assert any("no such scenario 'nosuch'" in line for line in lines), lines
    assert lines[-1].startswith("rtgate: 2 problems found before any build or boot")
    assert not out.exists()
