"""A lab controller a pull request cannot poison through the kernel cache (issue 10).

The kernel built here is a pull request's tree reduced to what rtgate drives: a Makefile with the
targets rtgate runs (and a write through the tree it is built in, as any PR Makefile may do) and
a merge_config.sh. rtgate's real build, cache and CLI run on it in a second instead of the
twenty minutes of a real kernel; the real kbuild is in test_kernel_build.py and
test_kernel_config.py.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from clirun import RunCli
from fakekernel import VERSION_C, pr_tarball

from rtgate.errors import InfraError
from rtgate.kernel.build import BuildResult, build
from rtgate.kernel.cache import cache_root
from rtgate.kernel.source import materialize, resolve

MAKEFILE = """\
MAKEFLAGS += --no-print-directory
tinyconfig:
\t@: > $(O)/.config
olddefconfig:
\t@:
kernelrelease:
\t@echo 6.12.0-pr
Image:
\t@echo "ccache in $$CCACHE_DIR"
\t@echo "pwned" >> init/version.c
\t@mkdir -p $(O)/arch/arm64/boot
\t@cp init/version.c $(O)/arch/arm64/boot/Image
"""
# The same Makefile reaching out of its build tree by the cache's layout (CURDIR is
# CACHE/work/BOARD-FLAVOR/src): into the pristine sources and the built kernels.
ESCAPE = MAKEFILE + """\
\t-@for f in $(CURDIR)/../../../sources/*/init/version.c; do echo pwned >> $$f; done
\t-@cd $(CURDIR)/../../.. && mkdir -p kernels/planted && echo planted > kernels/planted/Image
"""


@pytest.fixture(scope="module")
def pr_source(tmp_path_factory: pytest.TempPathFactory) -> str:
    return pr_tarball(tmp_path_factory.mktemp("pr"), MAKEFILE)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RTGATE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("RTGATE_CACHE_TRUST", raising=False)
    return tmp_path / "cache"


Build = Callable[..., BuildResult]


@pytest.fixture
def build_pr(pr_source: str, cache: Path, tmp_path: Path) -> Build:
    def run(flavor: str = "rt", out: str = "out", **kwargs: object) -> BuildResult:
        return build("qemu-arm64", flavor, source=pr_source, out=tmp_path / out,
                     progress=False, **kwargs)  # type: ignore[arg-type]
    return run


def test_a_write_in_the_build_tree_never_reaches_the_pristine_tree(build_pr: Build,
                                                                   pr_source: str) -> None:
    first = build_pr("stock", "stock")
    second = build_pr("rt", "rt")
    pristine = materialize(resolve(pr_source), cache_root())
    assert (pristine / "init" / "version.c").read_text() == VERSION_C
    # Each build started from the pristine file: no build inherits an earlier build's write.
    for result in (first, second):
        assert result.image is not None
        assert result.image.read_text() == VERSION_C + "pwned\n"


def _alter_image(entry: Path) -> None:
    (entry / "Image").write_bytes(b"a kernel that passes every gate\n")


def _alter_recorded_sha256(entry: Path) -> None:
    meta = json.loads((entry / "metadata.json").read_text())
    meta["outputs"]["Image"] = "0" * 64
    (entry / "metadata.json").write_text(json.dumps(meta))


def _unparseable_metadata(entry: Path) -> None:
    (entry / "metadata.json").write_text("{not json")


def _no_metadata(entry: Path) -> None:
    (entry / "metadata.json").unlink()


def _image_missing(entry: Path) -> None:
    (entry / "Image").unlink()


def _extra_file(entry: Path) -> None:
    (entry / "dtbs").mkdir()
    (entry / "dtbs" / "planted.dtbo").write_bytes(b"overlay")


def _image_is_a_link(entry: Path) -> None:
    # The link's target has the recorded sha256: only the link itself gives it away.
    (entry / "Image").rename(entry.parent / "elsewhere")
    (entry / "Image").symlink_to(entry.parent / "elsewhere")


def _another_plans_entry(entry: Path) -> None:
    meta = json.loads((entry / "metadata.json").read_text())
    meta["plan"]["cache_key"] = "f" * 64
    (entry / "metadata.json").write_text(json.dumps(meta))


@pytest.mark.parametrize("poison, reason", [
    (_alter_image, "Image has sha256 "),
    (_alter_recorded_sha256, "metadata.json records 0000"),
    (_unparseable_metadata, "metadata.json unreadable"),
    (_no_metadata, "metadata.json unreadable"),
    (_image_missing, "missing Image"),
    (_extra_file, "unrecorded dtbs/planted.dtbo"),
    (_image_is_a_link, "not a regular file: Image"),
    (_another_plans_entry, "is for plan 'ffff"),
])
def test_a_poisoned_cache_entry_is_refused_and_rebuilt(
        build_pr: Build, cache: Path, capsys: pytest.CaptureFixture[str],
        poison: Callable[[Path], None], reason: str) -> None:
    good = build_pr()
    assert good.image is not None
    good_image = good.image.read_bytes()
    entry = cache / "kernels" / good.plan.cache_key
    poison(entry)
    capsys.readouterr()

    again = build_pr(out="again")
    assert again.cache_hit is False
    assert again.image is not None and again.image.read_bytes() == good_image
    err = capsys.readouterr().err
    assert f"refused the cached kernel {entry}: " in err and reason in err, err
    # The poisoned entry is kept for whoever investigates, out of the way of every lookup.
    [kept] = (cache / "refused").iterdir()
    assert kept.name.startswith(good.plan.cache_key)
    # The rebuilt entry is whole again: the next lookup is a hit.
    assert build_pr(out="third").cache_hit is True


def test_the_cli_refuses_a_planted_kernel(rtgate_cli: RunCli,
                                          pr_source: str, tmp_path: Path) -> None:
    env = {"RTGATE_CACHE": str(tmp_path / "cache")}
    args = ("kernel", "build", "--board", "qemu-arm64", "--flavor", "rt", "--source", pr_source,
            "--quiet", "--out")
    first = rtgate_cli(*args, str(tmp_path / "first"), env=env)
    assert first.returncode == 0, first.stderr
    key = json.loads(first.stdout)["cache_key"]
    _alter_image(tmp_path / "cache" / "kernels" / key)
    second = rtgate_cli(*args, str(tmp_path / "second"), env=env)
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout)["cache_hit"] is False
    assert "rtgate kernel: refused the cached kernel" in second.stderr
    assert (tmp_path / "second" / "Image").read_text() == VERSION_C + "pwned\n"


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if not p.is_dir()}


@pytest.mark.parametrize("choose", [["--cache-trust", "untrusted"], []])
def test_an_untrusted_build_is_invisible_to_a_trusted_one(rtgate_cli: RunCli,
                                                          pr_source: str, tmp_path: Path,
                                                          choose: list[str]) -> None:
    cache = tmp_path / "cache"
    trusted_env = {"RTGATE_CACHE": str(cache), "RTGATE_CACHE_TRUST": "trusted"}
    untrusted_env = trusted_env | ({} if choose else {"RTGATE_CACHE_TRUST": "untrusted"})
    args = ("kernel", "build", "--board", "qemu-arm64", "--flavor", "rt", "--source", pr_source,
            "--quiet", "--out")
    pr = rtgate_cli(*args, str(tmp_path / "pr"), *choose, env=untrusted_env)
    assert pr.returncode == 0, pr.stderr
    # Sources, work tree, ccache and the built kernel: all under untrusted/, nothing beside it.
    assert {p.name for p in cache.iterdir()} == {"untrusted"}
    # Its ccache is its own, in its work area (and gone with it).
    ccache = cache / "untrusted" / "work" / "qemu-arm64-rt" / "ccache"
    assert f"ccache in {ccache}" in (tmp_path / "pr" / "build.log").read_text()
    assert not ccache.exists()
    key = json.loads(pr.stdout)["cache_key"]
    assert f"kernels/{key}/Image" in _files(cache / "untrusted")

    main = rtgate_cli(*args, str(tmp_path / "main"), env=trusted_env)
    assert main.returncode == 0, main.stderr
    report = json.loads(main.stdout)
    assert report["cache_key"] == key and report["cache_hit"] is False
    assert f"kernels/{key}/Image" in _files(cache)


def test_an_unknown_trust_domain_is_an_input_error(rtgate_cli: RunCli,
                                                   pr_source: str, tmp_path: Path) -> None:
    proc = rtgate_cli("kernel", "build", "--board", "qemu-arm64", "--flavor", "rt", "--source",
                      pr_source, "--quiet", "--out", str(tmp_path / "out"),
                      env={"RTGATE_CACHE": str(tmp_path / "cache"), "RTGATE_CACHE_TRUST": "pr"})
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1
    assert "unknown cache trust domain 'pr'" in proc.stderr and "RTGATE_CACHE_TRUST" in proc.stderr
    assert not (tmp_path / "cache").exists()


def test_a_link_a_build_plants_in_its_work_area_is_never_written_through(
        cache: Path, tmp_path: Path) -> None:
    # Whatever the container may write: the work area. A link left there where the host once
    # kept its build.log made the next build's log overwrite any file the runner user owns,
    # e.g. a script of the trusted cache's pristine sources.
    trusted = tmp_path / "trusted-script"
    trusted.write_text("#!/bin/sh\necho trusted\n")
    plant = MAKEFILE.replace("olddefconfig:\n\t@:\n", "olddefconfig:\n"
                             f"\t@ln -sf {trusted} $(CURDIR)/../build.log\n"
                             f"\t@ln -sf {trusted} $(CURDIR)/../stage\n")
    source = pr_tarball(tmp_path / "plant", plant)
    for out in ("first", "second"):
        build("qemu-arm64", "rt", source=source, out=tmp_path / out, progress=False)
        (cache / "kernels").rename(tmp_path / f"kernels-{out}")  # the next one builds again
    build("qemu-arm64", "rt", source=source, out=tmp_path / "config", progress=False,
          config_only=True)
    assert trusted.read_text() == "#!/bin/sh\necho trusted\n"
    assert "### rtgate: compiling" in (tmp_path / "second" / "build.log").read_text()


@pytest.mark.parametrize("target, planted", [
    ("Image", "Image:\n\t@mkdir -p $(O)/arch/arm64/boot\n"
              "\t@ln -sf {secret} $(O)/arch/arm64/boot/Image\n"),
    ("olddefconfig", "olddefconfig:\n\t@ln -sf {secret} $(O)/.config\n"),
    ("kernelrelease", "kernelrelease:\n\t@rm -rf $(O) && ln -s {outside} $(O)\n"
                      "\t@echo 6.12.0-pr\n"),
])
def test_the_host_reads_no_output_through_a_link(cache: Path, tmp_path: Path, target: str,
                                                 planted: str) -> None:
    # A link among the outputs would copy any file the runner user may read (a token in its
    # .env) into the cache, the published .config, an error message or the board.
    secret = tmp_path / "runner.env"
    secret.write_text("GITHUB_TOKEN=ghs_secret\n")
    outside = tmp_path / "outside"
    (outside / "arch" / "arm64" / "boot").mkdir(parents=True)
    (outside / "arch" / "arm64" / "boot" / "Image").write_text("GITHUB_TOKEN=ghs_secret\n")
    (outside / ".config").write_text("GITHUB_TOKEN=ghs_secret\n")
    lines = MAKEFILE.splitlines(keepends=True)
    start = lines.index(f"{target}:\n")
    end = next((i for i in range(start + 1, len(lines)) if not lines[i].startswith("\t")),
               len(lines))
    makefile = "".join([*lines[:start], planted.format(secret=secret, outside=outside),
                        *lines[end:]])
    source = pr_tarball(tmp_path / "pr", makefile)
    with pytest.raises(InfraError, match="as a symbolic link") as caught:
        build("qemu-arm64", "rt", source=source, out=tmp_path / "out", progress=False)
    assert "ghs_secret" not in str(caught.value)
    leaked = [p for p in (*cache.rglob("*"), *(tmp_path / "out").rglob("*"))
              if p.is_file() and not p.is_symlink() and "ghs_secret" in p.read_text("latin-1")]
    assert leaked == []


@pytest.mark.integration
def test_the_builder_container_sees_only_its_work_tree_and_ccache(
        builder_image: str, cache: Path, tmp_path: Path) -> None:
    source = pr_tarball(tmp_path / "escape", ESCAPE)
    result = build("qemu-arm64", "rt", source=source, runtime="docker", out=tmp_path / "out",
                   progress=False)
    assert result.image is not None and result.image.read_text() == VERSION_C + "pwned\n"
    pristine = materialize(resolve(source), cache_root())
    assert (pristine / "init" / "version.c").read_text() == VERSION_C
    assert [p.name for p in (cache / "kernels").iterdir()] == [result.plan.cache_key]
