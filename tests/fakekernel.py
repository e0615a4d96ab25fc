"""A pull request's kernel tree reduced to what rtgate drives: a Makefile of the test's own with
the targets rtgate runs, a merge_config.sh and init/version.c, as a `tar:PATH` source. rtgate's
real build, cache and builder container run on it in seconds instead of a real kernel's
twenty minutes."""

from __future__ import annotations

import tarfile
from pathlib import Path

VERSION_C = "const char linux_banner[] = \"Linux version 6.12.0-pr\";\n"
MERGE = """\
#!/bin/sh
# merge_config.sh -m -O DIR BASE FRAGMENT...: the fragments in order (the last one wins).
shift 2; dir=$1; shift
cat "$@" > "$dir/.config.new" && mv "$dir/.config.new" "$dir/.config"
"""


def pr_tarball(root: Path, makefile: str) -> str:
    """tar:PATH of a pull request's kernel tree with this Makefile."""
    tree = root / "linux"
    (tree / "init").mkdir(parents=True)
    (tree / "init" / "version.c").write_text(VERSION_C)
    (tree / "Makefile").write_text(makefile)
    merge = tree / "scripts" / "kconfig" / "merge_config.sh"
    merge.parent.mkdir(parents=True)
    merge.write_text(MERGE)
    merge.chmod(0o755)
    tarball = tree.parent / "linux.tar.gz"
    with tarfile.open(tarball, "w:gz") as tar:
        tar.add(tree, arcname="linux")
    return f"tar:{tarball}"


def built_kernel(directory: Path, config: str = "") -> Path:
    """A kernel build's output as `rtgate kernel build --out` leaves it for one flavor
    (metadata.json naming its image, the image, .config), for commands that check the kernels
    they are given before anything boots; nothing in it boots."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "Image").write_bytes(b"\0" * 64)
    (directory / ".config").write_text(config, encoding="utf-8")
    (directory / "metadata.json").write_text(
        '{"plan": {"board": {"image_name": "Image"}}, "kernel_release": "6.12.0"}\n',
        encoding="utf-8")
    return directory
