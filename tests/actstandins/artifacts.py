"""The artifact store of the act stand-ins: upload-artifact's and download-artifact's rules at
the commits latency-report.yml pins, on a local directory (STORE/RUN_ID/NAME.zip).

upload-artifact (bbbca2ddaa5d8feaa63e36b76fdaad77386f024f, v7.0.0, README): several paths share
their least common ancestor as the artifact's root ("Exclude paths do not affect the directory
structure"); "hidden files are excluded by default" (v4.4+: a file beginning with `.` or within a
folder beginning with `.`); symbolic links are followed (@actions/glob's default), so the
artifact holds the files they point to; an artifact is one zip archive; `overwrite: true`
replaces an artifact of the same name in the run, else a second upload of a name fails.

download-artifact (3e5f45b2cfb9172054b4087a40e8e0b5a5461e7c, v8.0.1, src/download-artifact.ts
lines 60-196 and the README's "v5 - What's new"): `name` downloads that artifact directly into
`path` (missing: "Artifact 'NAME' not found"); `pattern` (minimatch) filters the run's
artifacts, and each goes into `path/NAME/` UNLESS merge-multiple is true or only ONE artifact
matched, which is extracted directly into `path` ("This change also applies to patterns that
only match a single artifact"); `github-token` with `run-id` reads another run's artifacts.

Standard library only: act runs it with the job's python3.
"""

from __future__ import annotations

import fnmatch
import os
import re
import sys
import zipfile
from pathlib import Path


def _hidden(relative: Path) -> bool:
    return any(part.startswith(".") for part in relative.parts)


def _files(root: Path, excludes: list[Path]) -> list[tuple[Path, Path]]:
    """(file, its name in the artifact) under root, symbolic links followed, hidden files and
    excluded paths left out."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        here = Path(dirpath)
        dirnames[:] = [d for d in dirnames
                       if not any((here / d).resolve() == e.resolve() for e in excludes)]
        for name in filenames:
            path = here / name
            relative = path.relative_to(root)
            if _hidden(relative) or any(path.resolve() == e.resolve() for e in excludes):
                continue
            if path.is_file():
                out.append((path, relative))
    return sorted(out, key=lambda f: str(f[1]))


def upload(store: Path, run_id: str, name: str, spec: str, *, overwrite: bool = False,
           if_no_files_found: str = "warn") -> Path | None:
    """Upload ``spec`` (upload-artifact's `path`: one path a line, ``!`` excludes) as artifact
    ``name`` of run ``run_id``; the zip written, or None when nothing was found."""
    lines = [ln.strip() for ln in spec.splitlines() if ln.strip()]
    includes = [Path(ln) for ln in lines if not ln.startswith("!")]
    excludes = [Path(ln[1:]) for ln in lines if ln.startswith("!")]
    if not includes:
        raise SystemExit("upload-artifact: no path to upload")
    root = Path(os.path.commonpath([str(p.resolve()) for p in includes]))
    if len(includes) == 1 and includes[0].is_file():
        root = includes[0].resolve().parent
    found: list[tuple[Path, Path]] = []
    for path in includes:
        if path.is_dir():
            found += [(f, f.relative_to(root) if f.is_relative_to(root) else rel)
                      for f, rel in _files(path, excludes)]
        elif path.is_file() and not _hidden(path.resolve().relative_to(root)):
            found.append((path, path.resolve().relative_to(root)))
    if not found:
        message = f"No files were found with the provided path: {spec.strip()}."
        if if_no_files_found == "error":
            raise SystemExit(f"upload-artifact: {message}")
        if if_no_files_found == "warn":
            print(f"::warning::{message} No artifacts will be uploaded.")
        return None
    target = store / run_id / f"{name}.zip"
    if target.exists() and not overwrite:
        raise SystemExit(f"upload-artifact: an artifact named {name} exists in run {run_id} "
                         "(Conflict: an artifact with this name already exists on the run)")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".part")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as archive:
        for path, relative in found:
            archive.write(path, relative.as_posix())
    tmp.replace(target)
    return target


def _braces(pattern: str) -> list[str]:
    """minimatch's brace expansion (`{a,b}`), which fnmatch lacks."""
    m = re.search(r"\{([^{}]*)\}", pattern)
    if not m:
        return [pattern]
    return [x for alt in m.group(1).split(",")
            for x in _braces(pattern[:m.start()] + alt + pattern[m.end():])]


def download(store: Path, run_id: str, *, name: str = "", pattern: str = "", path: Path,
             merge_multiple: bool = False) -> list[str]:
    """Download as download-artifact does; the names downloaded."""
    run = store / run_id
    available = sorted(p.stem for p in run.glob("*.zip")) if run.is_dir() else []
    if name:
        if name not in available:
            raise SystemExit(f"Unable to download artifact(s): Artifact '{name}' not found")
        chosen = [name]
    elif pattern:
        chosen = [a for a in available
                  if any(fnmatch.fnmatchcase(a, p) for p in _braces(pattern))]
    else:
        chosen = available
    direct = bool(name) or merge_multiple or len(chosen) == 1
    for artifact in chosen:
        target = path if direct else path / artifact
        target.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(run / f"{artifact}.zip") as archive:
            archive.extractall(target)
        print(f"Artifact {artifact} was downloaded to {target}")
    return chosen


def main(argv: list[str]) -> int:
    """The stand-ins' entry: `artifacts.py upload|download`, inputs from INPUT_* variables."""
    store = Path(os.environ["ACTLAB_ARTIFACTS"])
    def given(key: str, default: str = "") -> str:
        return os.environ.get(f"INPUT_{key}", default).strip() or default
    if argv[0] == "upload":
        upload(store, os.environ["GITHUB_RUN_ID"], given("NAME", "artifact"), given("PATH"),
               overwrite=given("OVERWRITE", "false") == "true",
               if_no_files_found=given("IF_NO_FILES_FOUND", "warn"))
        return 0
    run_id = os.environ["GITHUB_RUN_ID"]
    if given("RUN_ID") and given("RUN_ID") != run_id:
        if not given("GITHUB_TOKEN"):
            raise SystemExit("download-artifact: another run's artifacts need github-token")
        run_id = given("RUN_ID")
    workspace = Path(os.environ.get("GITHUB_WORKSPACE", "."))
    download(store, run_id, name=given("NAME"), pattern=given("PATTERN"),
             path=workspace / given("PATH", "."),
             merge_multiple=given("MERGE_MULTIPLE", "false") == "true")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
