"""A newcomer's first run: `make demo` from a clean clone on a stock Debian 12 container.

The development machine is not a fresh machine: it once had qemu's recommended option ROMs and a
Python with pip, so every test passed while `make demo` failed on a fresh install. This test runs
the README's first command where nothing of the host can leak in: a debootstrapped Debian 12
(docker/debian-base.sh) with only `make` and `git` added, and the repository cloned into it.

Two things are handed in, both caches of what the demo would otherwise rebuild for 20 minutes:
the host's kernel cache entries for the demo's two kernels, and the very `linux-source-6.12`
package they were built from (its version moves with Debian's security updates, and the cache
key holds it). The kernel plan inside the container must then give the host's keys, which the
test checks before `make demo`, so a mismatch fails in seconds with both plans, not after a
cold build. `RTGATE_FRESH_REF` names another commit to try (to show that an old one fails).

The network is the lab's, not the machine's: where the host reaches the registries through a
TLS-inspecting egress proxy, its CA certificates (/usr/local/share/ca-certificates) and the
bundle and variables that name them (SSL_CERT_FILE, PIP_CERT ...) go into the container too, as
they would be set on any machine of that lab.

Afterwards every dependency group `make test` uses is installed in the same container, so docker,
act, actionlint, buildx and chromium are proven installable on a stock Debian 12 too.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from junitparser import JUnitXml
from kcidb_io.schema import LATEST

from rtgate.kernel.build import BuildResult
from rtgate.kernel.cache import cache_root

ROOT = Path(__file__).resolve().parents[2]
HOME = "/root"
REPO = f"{HOME}/rtgate"
# What `make test` installs (Makefile: deps, then `deps.sh ci report kernel qemu docker lab`).
TEST_GROUPS = "core ci report kernel qemu docker lab"

# The lab's egress CAs and the variables pointing tools at them (see the module docstring).
LAB_CAS = Path("/usr/local/share/ca-certificates")
CA_VARIABLES = ("SSL_CERT_FILE", "PIP_CERT", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
                "GIT_SSL_CAINFO")

pytestmark = [pytest.mark.integration, pytest.mark.kernel]


def sh(argv: list[str], timeout: float = 600, **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kw)


class Container:
    """A throwaway container of the stock Debian 12 image, kept running while the test drives
    it with `docker exec`."""

    def __init__(self, image: str) -> None:
        self.name = f"rtgate-fresh-{uuid.uuid4().hex[:8]}"
        proc = sh(["docker", "run", "-d", "--name", self.name, image, "sleep", "infinity"])
        assert proc.returncode == 0, proc.stderr

    def run(self, script: str, timeout: float) -> subprocess.CompletedProcess[str]:
        env = [f"--env={name}" for name in CA_VARIABLES if name in os.environ]
        return sh(["docker", "exec", "-e", "DEBIAN_FRONTEND=noninteractive", *env, self.name,
                   "bash", "-c", script], timeout=timeout)

    def trust_the_lab_network(self) -> None:
        for cert in sorted(LAB_CAS.glob("*.crt")):
            self.put(cert, f"{LAB_CAS}/{cert.name}")
        bundles = {Path(os.environ[name]) for name in CA_VARIABLES if name in os.environ}
        for bundle in sorted(b for b in bundles if b.is_file()):
            self.put(bundle, str(bundle))

    def put(self, src: Path, dest: str) -> None:
        self.run(f"mkdir -p {shlex.quote(str(Path(dest).parent))}", 60)
        proc = sh(["docker", "cp", str(src), f"{self.name}:{dest}"])
        assert proc.returncode == 0, proc.stderr

    def get(self, src: str, dest: Path) -> None:
        proc = sh(["docker", "cp", f"{self.name}:{src}", str(dest)])
        assert proc.returncode == 0, proc.stderr

    def remove(self) -> None:
        sh(["docker", "rm", "-f", self.name])


def rtgate_exit(make: subprocess.CompletedProcess[str]) -> int:
    """rtgate's exit code behind `make demo`: GNU make itself exits 2 for any failed recipe
    and names the recipe's own code in its `*** [...] Error N` line."""
    if make.returncode == 0:
        return 0
    said = re.search(r"^make: \*\*\* \[Makefile:\d+: demo\] Error (\d+)$", make.stderr, re.M)
    assert said, f"make demo failed before rtgate gave a verdict:\n{tail(make, 80)}"
    return int(said[1])


def tail(proc: subprocess.CompletedProcess[str], lines: int = 40) -> str:
    return "\n".join((proc.stdout + proc.stderr).splitlines()[-lines:])


@pytest.fixture(scope="module")
def kernels(kernel_build: Callable[[str, str], BuildResult]) -> list[BuildResult]:
    return [kernel_build("qemu-arm64", flavor) for flavor in ("stock", "rt")]


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[Container]:
    for script in ("dockerd.sh", "debian-base.sh"):
        proc = sh([str(ROOT / "docker" / script)], timeout=900)
        assert proc.returncode == 0, tail(proc)
    image = proc.stdout.strip().splitlines()[-1]
    container = Container(image)
    try:
        container.trust_the_lab_network()
        yield container
    finally:
        container.remove()


def source_package(build: BuildResult, into: Path) -> Path:
    """The exact Debian package the host's kernels were built from, as a .deb file."""
    src = build.plan.source
    assert src.kind == "debian", "the demo's kernels come from a Debian source package"
    proc = sh(["apt-get", "download", f"{src.location}={src.ref}"], cwd=into)
    assert proc.returncode == 0, f"cannot hand the container {src.location} {src.ref}: " \
                                 f"{tail(proc)}"
    (deb,) = into.glob(f"{src.location}_*.deb")
    return deb


def test_make_demo_on_a_stock_debian_12(fresh: Container, kernels: list[BuildResult],
                                        tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    ref = os.environ.get("RTGATE_FRESH_REF", "HEAD")
    proc = sh(["git", "clone", "-q", "--no-hardlinks", str(ROOT), str(clone)])
    assert proc.returncode == 0, proc.stderr
    assert sh(["git", "-C", str(clone), "checkout", "-q", ref]).returncode == 0
    fresh.put(clone, REPO)
    for build in kernels:
        entry = cache_root() / "kernels" / build.plan.cache_key
        assert entry.is_dir(), f"no host cache entry for {build.plan.cache_key}"
        fresh.put(entry, f"{HOME}/.cache/rtgate/kernels/{build.plan.cache_key}")
    deb = source_package(kernels[0], tmp_path)
    fresh.put(deb, f"/tmp/{deb.name}")

    # The stated prerequisites, and the handed-in source package, nothing else.
    proc = fresh.run("apt-get update -qq && apt-get install -y -qq --no-install-recommends "
                     f"make git /tmp/{deb.name} >/dev/null", timeout=600)
    assert proc.returncode == 0, tail(proc)
    assert fresh.run("command -v python3 pip3 pip", 60).stdout == "", \
        "the base image is not a stock minimal Debian 12"

    # The same plan inside as outside, or `make demo` would spend 20 minutes rebuilding.
    plans = " && ".join(f".venv/bin/python -m rtgate kernel plan --board qemu-arm64 --flavor {f}"
                        f" > /tmp/plan-{f}.json" for f in ("stock", "rt"))
    proc = fresh.run(f"cd {REPO} && scripts/deps.sh core kernel >/dev/null && {plans}", 900)
    assert proc.returncode == 0, tail(proc)
    for build in kernels:
        fresh.get(f"/tmp/plan-{build.plan.flavor}.json", tmp_path / "inside.json")
        inside = json.loads((tmp_path / "inside.json").read_text())
        assert inside["cache_key"] == build.plan.cache_key, (
            f"the container plans another kernel than the host built:\n"
            f"host:   {build.plan.to_json()}\ninside: {json.dumps(inside, indent=2)}")

    demo = fresh.run(f"cd {REPO} && make demo", timeout=1200)
    # 0, whatever else loads the host: the virtual board's budgets judge no host speed
    # (thresholds.yml, qemu-arm64), so 1 is a failure here, as is 3.
    assert rtgate_exit(demo) == 0, f"make demo: rtgate exit {rtgate_exit(demo)}:\n" \
                                   f"{tail(demo, 80)}"
    assert (demo.stdout + demo.stderr).count("(cache hit)") == 2, tail(demo, 80)
    site = re.search(r"^site: +(\S+)$", demo.stdout, re.M)
    assert site, tail(demo)
    fresh.get(f"{REPO}/out", tmp_path / "out")
    index = (Path(REPO) / site[1]).relative_to(f"{REPO}/out")  # absolute paths stay as they are
    assert (tmp_path / "out" / index).is_file()
    cases = [case for suite in JUnitXml.fromfile(str(tmp_path / "out/demo/junit.xml"))
             for case in suite]
    assert cases
    for case in cases:
        assert re.search(r"measured ≥?\d", case.system_out or ""), \
            f"{case.name}: no measured value ({case.system_out!r})"
    # The demo's KCIDB report, beside its outputs, valid by kcidb-io's own schema (issue 39).
    report = json.loads((tmp_path / "out/demo/kcidb.json").read_text())
    LATEST.validate(report)
    assert {t["path"] for t in report["tests"]} >= {"boot", "rt-tests.cyclictest.net.all.max"}

    proc = fresh.run(f"cd {REPO} && scripts/deps.sh {TEST_GROUPS}", timeout=1800)
    assert proc.returncode == 0, tail(proc)
    tools = ("act actionlint shellcheck chromium dockerd qemu-system-aarch64 cyclictest gnuplot "
             "systemd-nspawn debootstrap")
    # The lab extra (lab/'s Ansible) is in the project's venv.
    proc = fresh.run(f"set -e; for t in {tools}; do command -v $t; done; docker buildx version; "
                     f"{REPO}/.venv/bin/ansible-playbook --version; "
                     f"{REPO}/.venv/bin/ansible-lint --version", timeout=120)
    assert proc.returncode == 0, tail(proc)
    # rtla (rtgate/trace/rtla.py) links libtracefs/libtraceevent, for the host and arm64.
    libs = "libtracefs libtraceevent"
    proc = fresh.run(f"set -e; pkg-config --exists {libs}; PKG_CONFIG_LIBDIR="
                     f"/usr/lib/aarch64-linux-gnu/pkgconfig pkg-config --exists {libs}",
                     timeout=120)
    assert proc.returncode == 0, tail(proc)
