"""The test kernel in the Pi's side slot; the known-good boot files are never written.

The slot (``firmware_dir/slot/``) holds ``kernel_2712.img``, the device trees, ``overlays/`` and
a copy of ``cmdline.txt`` with the slot's word and a tuning profile's boot words; the modules go
into ``/lib/modules/<release>``; ``tryboot.txt`` is the known-good ``config.txt`` plus
``os_prefix=slot/`` and the profile's firmware lines, so a tuned boot that goes wrong also falls
back to the untouched known-good files."""

from __future__ import annotations

import hashlib
import shlex
import tarfile
import tempfile
from pathlib import Path

from rtgate.board import tarsafe
from rtgate.board.base import KernelArtifacts
from rtgate.board.rpi5.session import Pi
from rtgate.board.tuning import Applied
from rtgate.errors import InputError

SLOT_MARK = ".rtgate-slot"
"""Marks a modules directory rtgate wrote, so it never overwrites a kernel someone installed."""
SLOT_WORD = "rtgate.slot"
"""On the slot's command line: a boot whose /proc/cmdline has it runs a test kernel (a dotted
word is a module parameter, which the kernel keeps from init)."""


def install(pi: Pi, kernel: KernelArtifacts, tuned: Applied | None) -> str:
    """``kernel`` into the slot, its modules beside the installed ones and ``tryboot.txt``
    next to ``config.txt``; the sha256 of that ``config.txt``, to check it was left alone."""
    opts = pi.opts
    config = pi.read("config.txt")
    slot = pi.fw(opts.slot)
    files: dict[str, Path | bytes] = {opts.kernel_image: kernel.image}
    if kernel.dtbs is not None:
        # The firmware looks for DTBs at os_prefix/ and overlays at os_prefix/overlays/.
        for dtb in sorted(kernel.dtbs.rglob("*.dtb")):
            files[dtb.name] = dtb
        for overlay in sorted(kernel.dtbs.rglob("overlays/*")):
            files[f"overlays/{overlay.name}"] = overlay
        # With os_prefix the firmware reads <prefix>overlays/ only when it holds a README
        # (else the known-good overlays load); a kernel build has none: the known-good one.
        readme = pi.ssh.run(f"cat {shlex.quote(pi.fw('overlays/README'))}", check=False).stdout
        files["overlays/README"] = readme or \
            f"Overlays of the rtgate test kernel {kernel.release}.\n".encode()
    # os_prefix applies to cmdline.txt too: the slot boots with the known-good command line,
    # plus the profile's words.
    cmdline = pi.read("cmdline.txt")
    words = [*(tuned.boot_args() if tuned and tuned.boot else []), f"{SLOT_WORD}={opts.slot}"]
    files["cmdline.txt"] = with_words(cmdline, words)
    pi.ssh.run(pi.rm(slot))
    pi.ssh.put_tree(files, slot)
    if kernel.modules is not None:
        _install_modules(pi, kernel)
    firmware = "".join(f"{line}\n" for line in tuned.firmware_lines()) if tuned else ""
    tryboot = config.rstrip(b"\n") + (
        f"\n\n# rtgate: one-shot boot of {kernel.release} from the side slot\n"
        f"[all]\nos_prefix={opts.slot}/\nkernel={opts.kernel_image}\n"
        + (f"# rtgate: tuning profile {tuned.profile.name}\n{firmware}"
           if firmware and tuned else "")).encode()
    pi.ssh.put_tree({"tryboot.txt": tryboot}, pi.fw())
    return hashlib.sha256(config).hexdigest()


def _install_modules(pi: Pi, kernel: KernelArtifacts) -> None:
    assert kernel.modules is not None
    target = f"{pi.opts.modules_dir.rstrip('/')}/{kernel.release}"
    q = shlex.quote(target)
    owner = pi.ssh.output(f"if [ -e {q} ]; then ls -a {q}; else echo absent; fi")
    if owner != "absent" and SLOT_MARK not in owner.split():
        raise InputError(f"{pi.ssh.target}:{target} exists and was not written by rtgate: "
                         "refusing to overwrite an installed kernel's modules",
                         path=kernel.modules)
    with tempfile.TemporaryDirectory(prefix="rtgate-modules-") as tmp:
        with tarfile.open(kernel.modules) as tar:
            tarsafe.extract(tar, Path(tmp))
        found = [p for p in Path(tmp).rglob(kernel.release) if p.parent.name == "modules"]
        if not found:
            raise InputError(f"no lib/modules/{kernel.release} in the archive",
                             path=kernel.modules)
        files: dict[str, Path | bytes] = {
            str(p.relative_to(found[0])): p for p in found[0].rglob("*") if p.is_file()}
        files[SLOT_MARK] = f"{kernel.release}\n".encode()
        pi.ssh.run(pi.rm(target))
        pi.ssh.put_tree(files, target)


def with_words(cmdline: bytes, words: list[str]) -> bytes:
    """``cmdline.txt`` with ``words`` added to its line (the firmware reads the first only),
    before any ``--`` (what follows goes to init), in place of words naming the same
    parameter: the kernel would otherwise see both."""
    text = cmdline.decode("utf-8", "surrogateescape")
    first, newline, rest = text.partition("\n")
    params = {w.split("=", 1)[0] for w in words}
    kept = [w for w in first.split() if w.split("=", 1)[0] not in params]
    at = kept.index("--") if "--" in kept else len(kept)
    line = " ".join([*kept[:at], *words, *kept[at:]])
    return (line + "\n" + (rest if newline else "")).encode("utf-8", "surrogateescape")
