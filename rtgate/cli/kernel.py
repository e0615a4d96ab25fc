"""`rtgate kernel plan`, `build`, `deliver`, `pin`, `inputs` and `apply-inputs`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rtgate.kernel import mergeinputs
from rtgate.kernel.build import build
from rtgate.kernel.cache import TRUST_DOMAINS, TRUST_ENV
from rtgate.kernel.deliver import deliver
from rtgate.kernel.patches import PatchError
from rtgate.kernel.plan import make_plan
from rtgate.kernel.runtime import RUNTIMES, get_runtime
from rtgate.kernel.source import pinned, resolve
from rtgate.kernel.targets import load_target, target_names

EPILOG = """sources:  git:URL@REF | tar:PATH | debian:PACKAGE (default: the board's default_source)
patches:  a quilt series file (default: kernel/patches/series when it exists)

exit codes:
  0  built (or taken from the cache)
  2  input error: unknown board/flavor, bad source or series, a patch that does not apply
     (the rejected hunk is printed), or an option a fragment asked for that Kconfig dropped
     after olddefconfig (each one listed with its fragment and line)
  3  the build itself failed (compiler error, missing tool, builder image/dockerd unavailable);
     build.log in --out keeps the whole output
"""

DELIVER_EPILOG = """exit codes:
  0  delivered
  2  --to exists
  3  refused (each link, unexpected or missing file named, a metadata.json unreadable or
     naming a file outside --from; nothing delivered), or a failed build: its build.log and
     .config delivered, no kernel
"""


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--board", required=True, help=f"one of {', '.join(target_names())}")
    parser.add_argument("--flavor", required=True,
                        help="a fragment in kernel/configs/: stock, rt, none, voluntary, preempt")
    parser.add_argument("--source", help="kernel source (see below)")
    parser.add_argument("--patches", type=Path, metavar="SERIES", help="quilt series file")
    parser.add_argument("--fragment", type=Path, action="append", default=[],
                        help="extra config fragment merged last (repeatable)")
    parser.add_argument("--runtime", choices=RUNTIMES, default="host",
                        help="run the toolchain on the host or in the kernel-builder image")


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    kernel = subparsers.add_parser("kernel", help="plan and build stock/PREEMPT_RT kernels")
    sub = kernel.add_subparsers(dest="kernel_command", required=True, metavar="ACTION")
    fmt = argparse.RawDescriptionHelpFormatter

    plan = sub.add_parser("plan", help="print the resolved build plan as JSON (no build)",
                          epilog=EPILOG, formatter_class=fmt)
    _common(plan)
    plan.set_defaults(func=_plan)

    build_p = sub.add_parser("build", help="build a kernel (a cache hit skips the build)",
                             epilog=EPILOG, formatter_class=fmt)
    _common(build_p)
    build_p.add_argument("--out", type=Path, help="output directory "
                         "(default: out/kernels/BOARD-FLAVOR)")
    build_p.add_argument("--config-only", action="store_true",
                         help="stop after the verified .config (no compile, not cached)")
    build_p.add_argument("-j", "--jobs", type=int, help="parallel make jobs (default: all CPUs)")
    build_p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    build_p.add_argument("--cache-trust", choices=TRUST_DOMAINS,
                         help="the cache's trust domain: untrusted for a pull request's kernel "
                         "(it then neither reads nor writes the trusted cache); default "
                         f"${TRUST_ENV}, else trusted")
    build_p.set_defaults(func=_build)

    deliver_p = sub.add_parser(
        "deliver", help="copy a built kernel's files, and nothing else, into a fresh directory",
        description="Copy what a kernel build leaves (the target's image, .config, dtbs/, "
        "modules.tar.gz, build.log, metadata.json) as regular files, each checked against the "
        "sha256 metadata.json records, from a directory a build could write into one that "
        "does not exist yet. Links, other files and names outside the directory are refused.",
        epilog=DELIVER_EPILOG, formatter_class=fmt)
    deliver_p.add_argument("--from", dest="src", type=Path, required=True, metavar="DIR",
                           help="the build's output directory (rtgate kernel build --out)")
    deliver_p.add_argument("--to", dest="dest", type=Path, required=True, metavar="DIR",
                           help="the delivery directory; must not exist")
    deliver_p.set_defaults(func=_deliver)

    pin = sub.add_parser(
        "pin", help="print the source at the commit its branch names now (git:URL@SHA)",
        description="A and B of a gate build from one commit: the gate pins the kernel "
                    "target's source once and passes it to both builds (--source); a maintainer "
                    "pastes it into kernel/targets/NAME.yml to move the base forward.",
        epilog="exit codes:\n  0  printed\n  2  unknown board, bad source, no such branch or tag"
               "\n  3  the repository could not be read (network)", formatter_class=fmt)
    pin.add_argument("--board", required=True, help=f"one of {', '.join(target_names())}")
    pin.add_argument("--source", help="kernel source (default: the board's default_source)")
    pin.set_defaults(func=_pin)

    inputs = sub.add_parser(
        "inputs", help="read the kernel inputs a pull request would merge, as git objects",
        description="Form the merge of --main and --head (git merge-tree --write-tree) and "
        "write the kernel/patches and kernel/configs it holds, blob bytes as committed (no git "
        "attributes), to DIR/kernel-inputs.tar with a manifest of their blob ids "
        "(DIR/kernel-inputs.json: also whether the merge changes a kernel input, and the other "
        "paths it changes). A merge that cannot be formed is measured from the head's inputs.",
        epilog="exit codes:\n  0  written\n  2  refused: a kernel input that is not a regular "
        "file, a .gitattributes or .gitmodules among them, a git attribute matching one, or "
        "no such commit", formatter_class=fmt)
    inputs.add_argument("--head", required=True, help="the pull request's head commit")
    inputs.add_argument("--main", default="HEAD", help="the default branch (default: HEAD)")
    inputs.add_argument("--out", type=Path, required=True, metavar="DIR")
    inputs.set_defaults(func=_inputs)

    apply_p = sub.add_parser(
        "apply-inputs", help="lay verified kernel inputs over this checkout",
        description="Check every file of DIR/kernel-inputs.tar against the blob id its "
        "manifest records, then replace kernel/patches and kernel/configs of the current "
        "directory with them. Anything else in the tar, or a mismatch, is refused.",
        epilog="exit codes:\n  0  replaced\n  2  refused (nothing replaced)",
        formatter_class=fmt)
    apply_p.add_argument("--context", type=Path, required=True, metavar="DIR")
    apply_p.set_defaults(func=_apply_inputs)


def _plan(args: argparse.Namespace) -> int:
    runtime = get_runtime(args.runtime)
    plan = make_plan(args.board, args.flavor, runtime, source=args.source, series=args.patches,
                     extra_fragments=args.fragment)
    print(plan.to_json())
    return 0


def _pin(args: argparse.Namespace) -> int:
    print(pinned(resolve(args.source or load_target(args.board).default_source)).spec())
    return 0


def _inputs(args: argparse.Namespace) -> int:
    decided = mergeinputs.plan(Path.cwd(), args.head, args.main)
    mergeinputs.write(Path.cwd(), decided, args.out)
    what = "the merge" if decided.merge_tree else "the head (no clean merge: measured)"
    measure = "true" if decided.measure else "false"
    print(f"kernel inputs of {what}: {len(decided.files)} files, measure={measure}")
    return 0


def _apply_inputs(args: argparse.Namespace) -> int:
    for path in mergeinputs.apply(args.context, Path.cwd()):
        print(f"kernel input: {mergeinputs.shown_path(path)}")
    return 0


def _build(args: argparse.Namespace) -> int:
    try:
        result = build(args.board, args.flavor, source=args.source, series=args.patches,
                       fragments=args.fragment, runtime=args.runtime, out=args.out,
                       config_only=args.config_only, jobs=args.jobs, progress=not args.quiet,
                       trust=args.cache_trust)
    except PatchError as exc:
        sys.stderr.write(exc.rejected.rstrip("\n") + "\n")
        raise
    print(json.dumps({"out": str(result.out), "image": str(result.image) if result.image
                      else None, "kernel_release": result.kernel_release,
                      "uts_version": result.uts_version, "cache_hit": result.cache_hit,
                      "cache_key": result.plan.cache_key}, indent=2))
    return 0


def _deliver(args: argparse.Namespace) -> int:
    done = deliver(args.src, args.dest)
    if not done.complete:
        print(f"rtgate kernel deliver: {args.src}: no metadata.json, a failed build: delivered "
              f"its {' and '.join(done.files) or 'nothing'} only", file=sys.stderr)
        return 3
    print(json.dumps({"out": str(done.dest), "files": done.files}, indent=2))
    return 0
