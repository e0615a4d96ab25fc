"""The kernel inputs a pull request would merge, read as git objects, and the lab's check of them.

The plan job (GitHub-hosted, the default branch's rtgate) forms the merge of the default branch
and the pull request's head with ``git merge-tree --write-tree`` and reads ``kernel/patches``
and ``kernel/configs`` of that tree with ``git ls-tree -z`` and ``git cat-file``: blob bytes as
committed. ``git archive`` (and any checkout) would apply the tree's own ``.gitattributes``
(export-ignore, export-subst, filter, eol, ident), letting a pull request hide its patch from
the gate; so any attribute that matches a kernel input is refused, as is a ``.gitattributes`` or
``.gitmodules`` among them and any entry that is not a regular file (docs/security.md).

It writes a tar of those files and a manifest of their blob ids; the lab job receives data
only, verifies every file against the manifest and lays them over its own checkout.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from rtgate.ciout import escape
from rtgate.errors import InputError

INPUTS = ("kernel/patches", "kernel/configs")
TAR = "kernel-inputs.tar"
MANIFEST = "kernel-inputs.json"
REGULAR = {"100644": 0o644, "100755": 0o755}
# A real series with the PREEMPT_RT patch set is a few MiB; this bounds what the lab unpacks.
MAX_TOTAL = 256 << 20
MAX_FILES = 10_000
# Gate inputs are everything else but the prose, which no job runs (CODEOWNERS owns it all).
NOT_GATE_INPUTS = (":!kernel/patches", ":!kernel/configs")


@dataclass(frozen=True)
class TreeFile:
    path: str
    mode: str
    blob: str


@dataclass(frozen=True)
class MergeInputs:
    """What the plan job decided from the merge, for the run context."""

    head: str
    main: str
    merge_tree: str | None
    """The merge's tree; None when the merge cannot be formed (the head's kernel inputs are
    then measured: nothing merges until the pull request is updated, which reruns the gate)."""
    conflicts: list[str]
    source: str
    """The tree (or the head commit) whose kernel inputs the tar holds."""
    measure: bool
    """False only when the merge forms and leaves every kernel input as the default branch has
    it."""
    changed_inputs: list[str]
    files: list[TreeFile]


def _git(repo: Path, *args: str, env: dict[str, str] | None = None,
         ok: tuple[int, ...] = (0,)) -> subprocess.CompletedProcess[bytes]:
    # No config, attributes or hooks of the user's: this must read the repository's objects.
    proc = subprocess.run(["git", "-c", "core.attributesFile=/dev/null", *args], cwd=repo,
                          capture_output=True, env={**os.environ, **(env or {}),
                                                    "GIT_CONFIG_NOSYSTEM": "1"})
    if proc.returncode not in ok:
        err = proc.stderr.decode(errors="replace").strip().splitlines()
        raise InputError(f"git {args[0]} failed: {err[-1] if err else proc.returncode}",
                         path=repo)
    return proc


def _commit(repo: Path, ref: str) -> str:
    out = _git(repo, "rev-parse", "--verify", "--end-of-options", f"{ref}^{{commit}}")
    return out.stdout.decode().strip()


def merge(repo: Path, main: str, head: str) -> tuple[str | None, list[str]]:
    """The merge's tree and its conflicted paths; no tree when git cannot form one at all
    (unrelated histories, a failure). Criss-cross histories merge their bases first (ort)."""
    proc = _git(repo, "merge-tree", "--write-tree", "--name-only", "-z", "--no-messages",
                main, head, ok=(0, 1, 128))
    if proc.returncode == 128:
        return None, []
    fields = [f.decode(errors="surrogateescape") for f in proc.stdout.split(b"\0") if f]
    if not fields:
        return None, []
    return fields[0], sorted(set(fields[1:]))


def entries(repo: Path, tree: str) -> list[TreeFile]:
    """Every entry under the kernel inputs of ``tree``, as git lists it."""
    out = _git(repo, "ls-tree", "-r", "-z", "--full-tree", tree, "--", *INPUTS).stdout
    found = []
    for record in out.split(b"\0"):
        if record:
            meta, _, raw = record.partition(b"\t")
            mode, _kind, oid = meta.decode().split()
            found.append(TreeFile(raw.decode(errors="surrogateescape"), mode, oid))
    return found


def refuse(tree: str, found: list[TreeFile]) -> None:
    """A non-regular entry (link, submodule), a ``.gitattributes`` or ``.gitmodules``, one
    outside the two directories, or too many: refused, the first one named."""
    where = tree[:12]
    if len(found) > MAX_FILES:
        raise InputError(f"{len(found)} kernel inputs, more than {MAX_FILES}; refused",
                         path=where)
    for e in found:
        shown = shown_path(e.path)
        if e.mode not in REGULAR:
            raise InputError(f"{shown}: kernel inputs must be regular files; refused "
                             f"(mode {e.mode})", path=where)
        if e.path.rsplit("/", 1)[-1] in (".gitattributes", ".gitmodules"):
            raise InputError(f"{shown}: no .gitattributes or .gitmodules among the kernel "
                             "inputs; refused", path=where)
        if not any(e.path.startswith(d + "/") for d in INPUTS):
            raise InputError(f"{shown}: not below {' or '.join(INPUTS)}; refused", path=where)


def check_attributes(repo: Path, tree: str, paths: list[str]) -> None:
    """Refuse any git attribute the tree's own ``.gitattributes`` files (anywhere) set on a
    kernel input: a checkout of the merge would apply it to the bytes kbuild reads."""
    if not paths:
        return
    with tempfile.TemporaryDirectory(prefix="rtgate-attr-") as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        _git(repo, "read-tree", tree, env=env)
        stdin = b"".join(p.encode(errors="surrogateescape") + b"\0" for p in paths)
        proc = subprocess.run(["git", "-c", "core.attributesFile=/dev/null", "check-attr",
                               "--cached", "-a", "-z", "--stdin"], cwd=repo, input=stdin,
                              capture_output=True,
                              env={**os.environ, **env, "GIT_CONFIG_NOSYSTEM": "1"})
    if proc.returncode != 0:
        raise InputError(f"git check-attr failed: {proc.stderr.decode(errors='replace')}",
                         path=repo)
    fields = proc.stdout.split(b"\0")
    for i in range(0, len(fields) - 2, 3):
        path = fields[i].decode(errors="surrogateescape")
        attr, value = fields[i + 1].decode(errors="replace"), fields[i + 2].decode(
            errors="replace")
        raise InputError(f"{shown_path(path)}: git attribute {attr} ({value}) matches a kernel "
                         "input; refused: the gate measures blob bytes as committed, a checkout "
                         "would not", path=f"{tree[:12]}")


def changed(repo: Path, old: str, new: str, *pathspec: str) -> list[str]:
    """Paths that differ between two trees (renames as both names)."""
    out = _git(repo, "diff-tree", "-r", "--no-renames", "--name-only", "-z", old, new, "--",
               *pathspec).stdout
    return [p.decode(errors="surrogateescape") for p in out.split(b"\0") if p]


def plan(repo: Path, head: str, main: str = "HEAD") -> MergeInputs:
    """Form the merge and decide, all from git's objects."""
    head_c, main_c = _commit(repo, head), _commit(repo, main)
    tree, conflicts = merge(repo, main_c, head_c)
    inputs_conflict = any(c == d or c.startswith(d + "/") for c in conflicts for d in INPUTS)
    source = tree if tree is not None and not inputs_conflict else head_c
    files = entries(repo, source)
    refuse(source, files)
    check_attributes(repo, source, [e.path for e in files])
    formed = tree is not None and not conflicts
    # Gate inputs: what merging would change (else the head against main) outside the kernel.
    gate = changed(repo, main_c, tree if tree is not None else head_c, ".", *NOT_GATE_INPUTS)
    measure = not formed or bool(changed(repo, main_c, source, *INPUTS))
    return MergeInputs(head_c, main_c, tree if formed else None, conflicts, source, measure,
                       gate, files)


def blob_id(data: bytes) -> str:
    """git's object id of a blob (SHA-1 repositories, as GitHub's)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()  # noqa: S324 - git's id


def write(repo: Path, decided: MergeInputs, out: Path) -> None:
    """``out``/kernel-inputs.tar and the manifest; the blobs read with ``git cat-file``."""
    out.mkdir(parents=True, exist_ok=True)
    total = 0
    with tarfile.open(out / TAR, "w", format=tarfile.PAX_FORMAT) as tar:
        for e in decided.files:
            data = _git(repo, "cat-file", "blob", e.blob).stdout
            total += len(data)
            if total > MAX_TOTAL:
                raise InputError(f"kernel inputs over {MAX_TOTAL >> 20} MiB; refused",
                                 path=shown_path(e.path))
            info = tarfile.TarInfo(e.path)
            info.size, info.mode, info.mtime = len(data), REGULAR[e.mode], 0
            tar.addfile(info, io.BytesIO(data))
    (out / MANIFEST).write_text(json.dumps(asdict(decided), indent=1) + "\n")


def shown_path(path: str) -> str:
    """A path as one inert line: ciout's escaping, the one used for every value rtgate prints
    where a workflow log reads it (no workflow command, no control character)."""
    return escape(path)


def verify(context: Path) -> dict[str, tuple[int, bytes]]:
    """The tar's files, each checked against the manifest's blob id: {path: (mode, bytes)}."""
    try:
        manifest = json.loads((context / MANIFEST).read_text())
        want = {f["path"]: (f["mode"], f["blob"]) for f in manifest["files"]}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(f"no usable manifest: {exc}", path=context / MANIFEST) from exc
    got: dict[str, tuple[int, bytes]] = {}
    total = 0
    try:
        with tarfile.open(context / TAR, "r:") as tar:
            for member in tar:
                name = shown_path(member.name)
                if member.name not in want or not member.isreg() or member.name in got:
                    raise InputError(f"{name}: not a kernel input of the manifest; refused",
                                     path=context / TAR)
                total += member.size
                if total > MAX_TOTAL:
                    raise InputError(f"over {MAX_TOTAL >> 20} MiB; refused", path=context / TAR)
                handle = tar.extractfile(member)
                data = handle.read() if handle is not None else b""
                mode, blob = want[member.name]
                if blob_id(data) != blob or mode not in REGULAR:
                    raise InputError(f"{name}: its bytes are not blob {blob}; refused",
                                     path=context / TAR)
                got[member.name] = (REGULAR[mode], data)
    except (OSError, tarfile.TarError) as exc:
        raise InputError(f"unreadable: {exc}", path=context / TAR) from exc
    missing = sorted(set(want) - set(got))
    if missing:
        raise InputError(f"{shown_path(missing[0])}: in the manifest, not in the tar; refused",
                         path=context / TAR)
    for path in got:
        parts = path.split("/")
        if not any(path.startswith(d + "/") for d in INPUTS) or "" in parts or ".." in parts \
                or "." in parts:
            raise InputError(f"{shown_path(path)}: not a kernel input path; refused",
                             path=context / MANIFEST)
    return got


def apply(context: Path, checkout: Path) -> list[str]:
    """Replace the checkout's kernel inputs with the verified files; their paths."""
    files = verify(context)
    for d in INPUTS:
        shutil.rmtree(checkout / d, ignore_errors=True)
    for path, (mode, data) in sorted(files.items()):
        target = checkout / path
        target.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
    for d in INPUTS:
        (checkout / d).mkdir(parents=True, exist_ok=True)
    return sorted(files)
