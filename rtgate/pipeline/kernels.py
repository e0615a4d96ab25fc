"""Where a flavor's kernel comes from (built for the board, or prebuilt), and what a built one can
do: switch preemption models at boot, how long it took to build."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.text import Text

from rtgate import inputfile, jsonfile
from rtgate.board.base import KernelArtifacts
from rtgate.board.spec import BoardSpec
from rtgate.ciout import printable
from rtgate.errors import InfraError, InputError
from rtgate.kernel import record
from rtgate.kernel.build import build
from rtgate.kernel.plan import flavor_fragment
from rtgate.kernel.targets import load_target
from rtgate.pipeline.settings import KernelSource


def kernel_for(spec: BoardSpec, flavor: str, kernel: KernelSource, out: Path,
               console: Console) -> KernelArtifacts | None:
    if not spec.kernel_target:
        return None
    if kernel.kernels:
        artifacts = KernelArtifacts.from_dir(kernel.kernels / flavor)
    else:
        console.rule(f"[bold]build[/] {spec.kernel_target} {flavor}")
        built = build(spec.kernel_target, flavor, source=kernel.source, series=kernel.patches,
                      runtime=kernel.runtime, out=out / "kernels" / flavor)
        # The release is the build's (a pull request's Makefile sets it): plain text.
        console.print(Text(f"kernel {printable(built.kernel_release)} "
                           f"({'cache hit' if built.cache_hit else 'built'}) in {built.out}"))
        artifacts = KernelArtifacts.from_dir(built.out)
    # The artifact leaves kernels/ out: its record stays with the results (rtgate kcidb).
    record.keep(artifacts.dir, out / record.BUILDS / flavor)
    return artifacts


def kernel_of(spec: BoardSpec, flavor: str, kernel: KernelSource) -> str:
    """Where ``flavor``'s kernel comes from; an InputError when it cannot."""
    if not spec.kernel_target:
        return "the board's running kernel"
    if kernel.kernels:
        try:
            KernelArtifacts.from_dir(kernel.kernels / flavor)
        except InfraError:
            pass  # a broken build is that flavor's infrastructure failure, recorded as it runs
        return f"prebuilt: {kernel.kernels / flavor}"
    load_target(spec.kernel_target)
    flavor_fragment(flavor)
    if kernel.patches is not None and not kernel.patches.exists():
        raise InputError("no such patch series", path=kernel.patches)
    return f"built: {spec.kernel_target} {flavor}" + (f" from {kernel.source}"
                                                       if kernel.source else "")


def dynamic(kernel: KernelArtifacts) -> bool:
    """The build can switch models at boot (its .config, else its version banner says so)."""
    config = kernel.dir / ".config"
    if config.is_file():
        text = inputfile.read_bytes(config, inputfile.KCONFIG).decode("utf-8", "replace")
        return "CONFIG_PREEMPT_DYNAMIC=y" in text
    return "PREEMPT_DYNAMIC" in (kernel.uts_version or "")


def build_seconds(kernel_dir: Path) -> float | None:
    """The wall time the build took, as its metadata.json recorded it (None: unknown)."""
    path = kernel_dir / "metadata.json"
    try:
        meta = jsonfile.loads(inputfile.read_text(path, inputfile.DOCUMENT), path)
        value = meta.get("build_seconds") if isinstance(meta, dict) else None
        return float(value) if isinstance(value, int | float) else None
    except (InputError, ValueError):
        return None
