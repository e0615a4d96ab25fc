"""A board in a LAVA lab: deploy, boot and run become one LAVA job.

rtgate builds the same initramfs as the QEMU virtual board (Debian arm64 programs and the
console-protocol ``/init``), serves it and the built kernel over HTTP for the lab's worker to
download, or uploads them to an image store the lab reads (``image_store``: a controller the lab
cannot reach, such as a GitHub-hosted runner), sha256 in the job so LAVA checks them too, and
renders the board's job template (bench/lava/) with them. The job boots the kernel and then,
as an interactive test, types the scenario script into the init's console protocol: the probe
(uname, cyclictest --help) and the run (guestscript.render: loads, cyclictest, the awk
block-maxima reducer), whose raw files come back as base64 between ``RTGATE-BEGIN`` and
``RTGATE-END <sha256>`` in LAVA's log.

rtgate submits the job over the REST API v0.2, follows it, fetches the log and builds
result.json on the controller with the strict parser: the job's output is untrusted data, and
LAVA's own pass/fail of the interactive test is never read. The command line is built for the
guest's cyclictest from its --help, run under qemu-user from the same initramfs before the job;
the help the guest reports must be the same, or the run is an infrastructure failure.

A board is one device: its device type and tags must select exactly one device of the lab, and
every job must have run on it. LAVA schedules by type and tags, so two matching devices would
let one run, or one side of an A/B test's rounds, land on another board.

All loads run inside the job (a LAVA device has no controller-side peer): a scenario's iperf3
client reaches the guest's own server over loopback.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import json
import shutil
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import jinja2
import yaml
from rich.console import Console

from rtgate import paths
from rtgate.board.base import BoardDriver, KernelArtifacts
from rtgate.board.lava.client import Lava, LavaError, lava_error, target_lines, token
from rtgate.board.lava.store import ImageServer, ImageStore
from rtgate.board.qemu import guestscript, initramfs
from rtgate.board.qemu.guestenv import (
    WIRE_CAP,
    GuestFacts,
    board_records,
    note,
    on_controller,
    read_log,
    unpack,
)
from rtgate.board.rawrun import RawRun
from rtgate.board.spec import BoardSpec, LavaOptions, board_path
from rtgate.cyclictest.version import Capabilities, parse_help
from rtgate.errors import InfraError, InputError
from rtgate.harness.plan import Params, Plan, make_plan, timeout_for
from rtgate.harness.runner import RunLog
from rtgate.harness.scenario import load_scenario
from rtgate.kernel.source import sha256_file
from rtgate.layout import RAW

TEMPLATES = paths.ROOT / "bench" / "lava"
QUEUED = ("Submitted", "Scheduling", "Scheduled")
MARKERS = ("RTGATE-LOADS-UP", "RTGATE-MEASURE-START", "RTGATE-MEASURE-END", "RTGATE-BEGIN")


def guest_capabilities(initrd: Path) -> Capabilities:
    """The initramfs's cyclictest --help, run on the controller under qemu-user."""
    with tempfile.TemporaryDirectory(prefix="rtgate-lava-root-") as tmp:
        unpacked = subprocess.run(
            f"gzip -dc {initrd} | cpio -id --quiet --no-absolute-filenames usr/bin/cyclictest "
            "'lib/*' 'usr/lib/*'", shell=True, cwd=tmp, capture_output=True, text=True)
        if unpacked.returncode != 0:
            raise InfraError(f"cannot unpack the initramfs: {unpacked.stderr.strip()}",
                             path=initrd)
        try:
            proc = subprocess.run(["qemu-aarch64-static", "-L", tmp, f"{tmp}/usr/bin/cyclictest",
                                   "--help"], capture_output=True, text=True, timeout=60)
        except FileNotFoundError as exc:
            raise InfraError("qemu-aarch64-static is not installed (scripts/deps.sh docker)") \
                from exc
    return parse_help(proc.stdout + proc.stderr)


def payload(lines: list[str], log: Path) -> bytes:
    """The base64 block between RTGATE-BEGIN and RTGATE-END <sha256>, checked."""
    try:
        begin = next(i for i, line in enumerate(lines) if line.startswith("RTGATE-BEGIN"))
        end = next(i for i in range(begin + 1, len(lines)) if lines[i].startswith("RTGATE-END"))
    except StopIteration:
        raise InfraError("the job's log holds no complete results block (RTGATE-BEGIN … "
                         "RTGATE-END); log kept", path=log) from None
    text = "".join(x.strip() for x in lines[begin + 1:end])
    if len(text) * 3 // 4 > WIRE_CAP:
        raise InfraError(f"the job's results block exceeds {WIRE_CAP >> 20} MiB: refused; log "
                         "kept", path=log)
    try:
        data = base64.b64decode(text, validate=False)
    except binascii.Error as exc:
        raise InfraError(f"the job's results block is not base64 ({exc}); log kept",
                         path=log) from exc
    want = lines[end].split()[-1]
    if hashlib.sha256(data).hexdigest() != want:
        raise InfraError("results corrupted in the job's log (sha256 mismatch); log kept",
                         path=log)
    return data


class LavaBoard(BoardDriver):
    def __init__(self, spec: BoardSpec, workdir: Path) -> None:
        super().__init__(spec)
        assert isinstance(spec.options, LavaOptions)
        self.opts: LavaOptions = spec.options
        self.workdir = workdir
        self.initrd: initramfs.Initramfs | None = None
        self.caps: Capabilities | None = None
        self.facts: GuestFacts | None = None
        self.job_id: int | None = None
        """The job still to cancel if rtgate stops."""
        self.finished: int | None = None
        self.lava: Lava | None = None
        self.store: ImageStore | None = None
        self.device: str | None = None
        """The one device of the lab this board is (``pinned``)."""
        self._status = Console(stderr=True)

    @property
    def job_log(self) -> Path:
        return self.workdir / "lava-job.log"

    def deploy(self, kernel: KernelArtifacts | None) -> None:
        if kernel is None:
            raise InputError(f"board {self.spec.name!r} boots only built kernels: give one "
                             f"(rtgate kernel build --board {self.spec.kernel_target})")
        if self.profile is not None:
            raise InputError(f"board {self.spec.name!r} (LAVA) does not apply tuning profiles")
        self.lava = Lava(self.opts, token(self.opts.token_env, "LAVA token"))
        if self.opts.image_store is not None:
            self.store = ImageStore(self.opts.image_store)
        self.device = self.pinned()
        self.kernel = kernel
        with self._status.status(f"{self.spec.name}: preparing the initramfs"):
            self.initrd = initramfs.build(self.opts.packages, self.opts.skip_packages)
            self.caps = guest_capabilities(self.initrd.path)

    def pinned(self) -> str:
        """The one device the board's type and tags select."""
        assert self.lava is not None
        opts = self.opts
        names = sorted(name for name, tags in self.lava.devices(opts.device_type).items()
                       if set(opts.tags) <= tags)
        wanted = f"{opts.device_type} device" + (f" tagged {', '.join(opts.tags)}"
                                                  if opts.tags else "")
        if not names:
            raise LavaError(f"the lab at {self.lava.base} has no {wanted}")
        if len(names) > 1:
            raise InputError(
                f"board {self.spec.name!r} is {len(names)} devices of the lab ({', '.join(names)}"
                f" are each a {wanted}): a board is one device, so that its runs and both "
                "sides of an A/B test measure the same hardware; give one a unique tag and "
                "list it in the board's `tags`", path=board_path(self.spec.name))
        return names[0]

    def boot(self) -> str:
        """Nothing yet: the job boots; collect() checks the kernel it booted is this build."""
        if self.kernel is None:
            raise InputError("deploy a kernel before booting")
        return self.kernel.release

    def _plan(self, scenario_ref: str, duration_s: int, scale: float | None) -> Plan:
        assert self.caps is not None
        scenario, source = load_scenario(scenario_ref)
        if scenario.tool != "cyclictest":
            # Its initramfs has no rtla: never a cyclictest run in the scenario's tool's place.
            raise InfraError(f"scenario {scenario.name!r} measures with {scenario.tool}, which "
                             f"board {self.spec.name!r} cannot run (no rtla in its initramfs)",
                             path=source)
        if self.opts.interval_us:
            test = scenario.cyclictest
            scenario = scenario.model_copy(update={"cyclictest": test.model_copy(
                update={"args": [*test.args, f"-i{self.opts.interval_us}"]})})
        params = Params(cpus=self.opts.cpus, port=5201, tmpdir=guestscript.SCRATCH,
                        scale=scale or scenario.scale,
                        timeout_s=timeout_for(scenario, duration_s))
        return make_plan(scenario, source, self.caps, duration_s=duration_s, params=params,
                         outdir=guestscript.RAW)

    def _dtb(self, name: str) -> Path:
        """The board's device tree from the kernel build's dtbs/ (context ``dtb_file``)."""
        assert self.kernel is not None
        if self.kernel.dtbs is None:
            raise InputError(f"board {self.spec.name!r} needs a device tree ({name}), and the "
                             "kernel build has no dtbs/", path=self.kernel.dir)
        root = self.kernel.dtbs.resolve()
        path = (root / name).resolve()
        if not path.is_relative_to(root):
            raise InputError(f"dtb_file {name!r} is outside the kernel build's dtbs/",
                             path=board_path(self.spec.name))
        if not path.is_file():
            raise InputError(f"the kernel build has no dtbs/{name}", path=self.kernel.dir)
        return path

    def definition(self, plan: Plan, images: dict[str, tuple[str, str]]) -> str:
        """The job: the board's template filled with images (role → url, sha256: kernel,
        ramdisk, and dtb when the board names one), device and the script to type."""
        path = TEMPLATES / f"{self.opts.template}.yaml.j2"
        env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES),
                                 undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
        script = guestscript.PROBE + guestscript.render(plan, [ld.name for ld in plan.loads])
        encoded = base64.b64encode(script.encode()).decode()
        typed = "\n".join([*(encoded[i:i + 76] for i in range(0, len(encoded), 76)),
                           "RTGATE-GO"])
        budget = plan.warmup_s + plan.duration_s + self.opts.run_margin_s
        try:
            return env.get_template(path.name).render({
                **self.opts.context, **images,
                "job_name": f"rtgate {self.spec.name} {plan.scenario}",
                "device_type": self.opts.device_type, "tags": self.opts.tags,
                "command": typed, "run_timeout_s": int(budget), "cpus": self.opts.cpus})
        except jinja2.TemplateNotFound:
            raise InputError(f"no LAVA job template {self.opts.template!r}", path=path) from None
        except jinja2.TemplateError as exc:
            raise InputError(f"job template: {exc}", path=path) from exc

    def run(self, scenario: str, duration_s: int, out: Path, *, flavor: str | None = None,
            scale: float | None = None) -> RawRun:
        if self.kernel is None or self.initrd is None or self.lava is None:
            raise InputError("deploy a kernel before running a scenario")
        plan = self._plan(scenario, duration_s, scale)
        out.mkdir(parents=True, exist_ok=True)
        files = {"kernel": self.kernel.image, "ramdisk": self.initrd.path}
        if "dtb_file" in self.opts.context:
            files["dtb"] = self._dtb(str(self.opts.context["dtb_file"]))
        with self._published(files) as images:
            definition = self.definition(plan, images)
            (out / "lava-job.yaml").write_text(definition)
            run_log = RunLog()
            lines = self._follow(definition, plan, run_log, out)
        unpack(payload([line for _, line in lines], self.job_log), out)
        (out / "lava-images.json").write_text(json.dumps(
            {"job": self.lava.job_url(self.finished or 0), "device": self.device,
             "sha256": {role: digest for role, (_, digest) in images.items()},
             "url": {role: url for role, (url, _) in images.items()}}, indent=2) + "\n")
        return self._left(out, plan, run_log, flavor)

    def _left(self, out: Path, plan: Plan, run_log: RunLog, flavor: str | None) -> RawRun:
        """What the job's run left in ``out`` (raw/, meta/, state/) and its log's times; an
        InfraError when the device booted another kernel or cyclictest, or reported a failure."""
        assert self.kernel is not None and self.caps is not None  # deployed
        facts = GuestFacts.from_tar(_meta_tar(out / "meta"))
        if problem := self.kernel.mismatch(facts.get("uname-r"), facts.get("uname-v")):
            raise InfraError(f"{problem}; LAVA log kept", path=out / "lava-job.log")
        if parse_help(facts.cyclictest_help).options.keys() != self.caps.options.keys():
            raise InfraError("the device's cyclictest is not the one the command was built for",
                             path=out / "meta" / "cyclictest-help")
        state = out / "state"
        infra = state / "infra"
        if infra.is_file():
            raise InfraError(f"in the job: {note(infra).strip()}", path=infra)
        read_log(run_log, plan, state)
        return RawRun(out=out, board=self.spec.name, virtual=self.virtual,
                      plan=on_controller(plan, (out / RAW).resolve()),
                      flavor=flavor or self.kernel.flavor, log=run_log,
                      environment=facts.environment(self.spec, facts.cpus),
                      cyclictest_version=facts.cyclictest_version, job=self.finished or 0,
                      strict=True, loads=board_records(plan, state))

    @contextmanager
    def _published(self, files: dict[str, Path]) -> Iterator[dict[str, tuple[str, str]]]:
        """The images where the lab can fetch them while the job runs: role → (url, sha256)."""
        digests = {role: sha256_file(path) for role, path in files.items()}
        if self.store is not None:
            with self._status.status(f"{self.spec.name}: uploading the images to "
                                     f"{self.store.opts.put}"):
                images = {role: (self.store.publish(path, digests[role]), digests[role])
                          for role, path in files.items()}
            yield images
            return
        assert self.opts.serve_host is not None  # LavaOptions: one or the other
        server = ImageServer({f"{role}/{path.name}": path for role, path in files.items()},
                             self.opts.serve_host, self.opts.serve_port)
        try:
            yield {role: (f"{server.base}/{role}/{path.name}", digests[role])
                   for role, path in files.items()}
        finally:
            server.close()

    def _follow(self, definition: str, plan: Plan, run_log: RunLog,
                out: Path) -> list[tuple[str, str]]:
        """Submit, wait for the device and the end; the device's lines. Ctrl-C cancels."""
        assert self.lava is not None
        self.job_id = self.finished = self.lava.submit(definition)
        url = self.lava.job_url(self.job_id)
        entries: list[dict[str, Any]] = []
        submitted = time.monotonic()
        deadline = submitted + self.opts.queue_timeout_s + plan.warmup_s + plan.duration_s \
            + self.opts.run_margin_s
        try:
            with self._status.status(f"{self.spec.name}: job {url}: queued") as status:
                while True:
                    job = self.lava.job(self.job_id)
                    entries += self.lava.log(self.job_id, len(entries)) \
                        if job["state"] not in QUEUED else []
                    if job["state"] == "Finished":
                        break
                    now = time.monotonic()
                    if job["state"] in QUEUED and now - submitted > self.opts.queue_timeout_s:
                        self._cancel()
                        raise LavaError(f"job {url} waited {self.opts.queue_timeout_s:g} s for a "
                                        f"{self.opts.device_type} device and was canceled "
                                        "(all devices busy, offline or failing health checks?)")
                    if now > deadline:
                        self._cancel()
                        raise LavaError(f"job {url} ran past rtgate's deadline and was canceled")
                    status.update(f"{self.spec.name}: job {url}: {job['state'].lower()}"
                                  + _progress(target_lines(entries), plan))
                    time.sleep(self.opts.poll_interval_s)
        except KeyboardInterrupt:
            self._cancel()
            raise
        finally:
            self.job_log.parent.mkdir(parents=True, exist_ok=True)
            self.job_log.write_text(yaml.safe_dump(entries, sort_keys=False))
            if self.job_log.resolve() != (out / "lava-job.log").resolve():
                shutil.copyfile(self.job_log, out / "lava-job.log")
        self.job_id = None  # finished: nothing left to cancel
        if job["health"] != "Complete":
            raise LavaError(f"LAVA job {job['health'].lower()}: {lava_error(entries)}; "
                            f"job {url}", path=out / "lava-job.log")
        if job.get("actual_device") != self.device:
            raise LavaError(f"job {url} ran on {job.get('actual_device')!r}, not on the board's "
                            f"device {self.device!r}: its numbers would be another board's",
                            path=out / "lava-job.log")
        lines = target_lines(entries)
        for dt, line in lines:
            if line.startswith("RTGATE-MEASURE-START"):
                run_log.start = _when(dt)
            elif line.startswith("RTGATE-MEASURE-END"):
                run_log.end = _when(dt)
        return lines

    def _cancel(self) -> None:
        if self.lava is not None and self.job_id is not None:
            job_id, self.job_id = self.job_id, None
            try:
                self.lava.cancel(job_id)
                self._status.print(f"rtgate: canceled LAVA job {self.lava.job_url(job_id)}")
            except LavaError as exc:
                self._status.print(f"rtgate: could not cancel LAVA job {job_id}: {exc}")

    def restore(self) -> None:
        """A LAVA job leaves nothing behind on the device; cancel one still running."""
        self._cancel()


def _when(dt: str) -> datetime | None:
    try:
        return datetime.fromisoformat(dt.replace("Z", "+00:00"))
    except ValueError:
        return None


def _progress(lines: list[tuple[str, str]], plan: Plan) -> str:
    seen = [line for _, line in lines if line.startswith(MARKERS)]
    if not seen:
        return ": booting" if lines else ""
    last = seen[-1]
    if last.startswith("RTGATE-LOADS-UP"):
        return f": {plan.scenario}: warm-up {plan.warmup_s:g} s"
    if last.startswith("RTGATE-MEASURE-START"):
        return f": {plan.scenario}: measuring {plan.duration_s} s"
    return f": {plan.scenario}: collecting"


def _meta_tar(meta: Path) -> bytes:
    """meta/ as the tar.gz GuestFacts reads (the probe's files travelled in the run's block)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        if meta.is_dir():
            tar.add(meta, arcname="meta")
    return buf.getvalue()
