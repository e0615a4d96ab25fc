"""`rtgate kcidb --send` against a local fake of a KCIDB-NG endpoint (issue 39).

The fake answers as kernelci/kcidb-ng's REST daemon does (kcidb-restd-rs/src/main.rs;
README "Sending Data to the API", "Checking Status"): ``POST /submit`` with a Bearer token
spools the body and answers 200 ``{"id", "status": "ok", "message"}``, 400 with an error body
for a body it cannot take, 401 for a refused token, 500 when the spool cannot be written;
``GET /status?id=`` answers ``inprogress``, ``ready``, ``processed`` or ``failed``. Its
ingester step validates the spooled report with kcidb-io, as KCIDB-NG's ingester does. It
listens on 127.0.0.1 on a port the kernel picks.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml
from clirun import RunCli
from kcidb_io.schema import LATEST
from kcidbdata import ORIGIN, ROOT, qemu_gate  # the same real gate run as the unit tests

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

TOKEN = "eyJhbGciOiJIUzI1NiJ9.eyJvcmlnaW4iOiJydGdhdGVfbGFiIn0.c2VjcmV0LXRva2VuLXZhbHVl"


@dataclass
class Fake:
    mode: str
    submissions: dict[str, bytes] = field(default_factory=dict)
    polls: int = 0
    submits: int = 0
    authorizations: list[str] = field(default_factory=list)

    def status_of(self, sid: str) -> tuple[int, dict[str, Any]]:
        if sid not in self.submissions:
            return 404, {"id": sid, "status": "notfound", "message": "File not found"}
        self.polls += 1
        if self.mode == "slow":
            return 200, {"id": sid, "status": "ready", "message": "File waiting for processing"}
        if self.polls == 1:
            return 200, {"id": sid, "status": "inprogress", "message": "File still in progress"}
        try:
            LATEST.validate(json.loads(self.submissions[sid]))  # the ingester's validation
        except Exception:  # noqa: BLE001 - any refusal is "failed", as the ingester's move
            return 200, {"id": sid, "status": "failed",
                         "message": "File failed to pass validation"}
        if self.mode == "ingester-refuses":
            return 200, {"id": sid, "status": "failed",
                         "message": "File failed to pass validation"}
        return 200, {"id": sid, "status": "processed", "message": "File archived"}


def _handler(fake: Fake) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _send(self, code: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _authorized(self) -> bool:
            auth = self.headers.get("Authorization", "")
            fake.authorizations.append(auth)
            if auth != f"Bearer {TOKEN}":
                self._send(401, {"id": "0", "status": "error", "message": "InvalidSignature"})
                return False
            return True

        def do_POST(self) -> None:  # noqa: N802
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            if urlsplit(self.path).path != "/submit" or not self._authorized():
                return
            fake.submits += 1
            if fake.mode == "5xx-then-accept" and fake.submits == 1:
                self._send(500, {"id": "0", "status": "error",
                                 "message": "Internal server error"})
                return
            if fake.mode == "reject":
                self._send(400, {"id": "0", "status": "error",
                                 "message": "EOF while parsing an object at line 1 column 9"})
                return
            sid = f"sub{len(fake.submissions):029d}"
            fake.submissions[sid] = body
            self._send(200, {"id": sid, "status": "ok",
                             "message": f"Received submission {sid} with size {len(body)} "
                                        "bytes"})

        def do_GET(self) -> None:  # noqa: N802
            url = urlsplit(self.path)
            if url.path != "/status" or not self._authorized():
                return
            self._send(*fake.status_of(parse_qs(url.query).get("id", [""])[0]))

    return Handler


@pytest.fixture
def endpoint(request: pytest.FixtureRequest) -> Iterator[tuple[Fake, str]]:
    fake = Fake(request.param)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _send(rtgate: RunCli, tmp: Path, url: str, token: str = TOKEN, wait: str = "20s"):  # noqa: ANN202
    gate = qemu_gate(tmp)
    return rtgate("kcidb", gate, "--origin", ORIGIN, "--out", tmp / "kcidb.json",
                  "--thresholds", ROOT / "thresholds.yml", "--boards", ROOT / "bench" / "boards",
                  "--scenarios", "net,idle", "--run-id", "7001", "--send",
                  "--status-wait", wait, cwd=tmp,
                  env={"RTGATE_KCIDB_URL": url, "RTGATE_KCIDB_TOKEN": token})


def _said(proc: Any) -> dict[str, Any]:
    assert TOKEN not in proc.stdout + proc.stderr  # the token is never printed
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("endpoint", ["accept"], indirect=True)
def test_an_accepted_report_is_polled_until_processed(rtgate_cli: RunCli, tmp_path: Path,
                                                      endpoint: tuple[Fake, str]) -> None:
    fake, url = endpoint
    proc = _send(rtgate_cli, tmp_path, url)
    said = _said(proc)
    assert proc.returncode == 0 and said["sent"] == "accepted", proc.stdout + proc.stderr
    (body,) = fake.submissions.values()
    assert json.loads(body) == json.loads((tmp_path / "kcidb.json").read_text())
    assert fake.polls == 2 and set(fake.authorizations) == {f"Bearer {TOKEN}"}


@pytest.mark.parametrize("endpoint", ["reject", "ingester-refuses"], indirect=True)
def test_a_rejected_report_fails_with_the_endpoints_words(rtgate_cli: RunCli, tmp_path: Path,
                                                          endpoint: tuple[Fake, str]) -> None:
    fake, url = endpoint
    proc = _send(rtgate_cli, tmp_path, url)
    said = _said(proc)
    assert proc.returncode == 1 and said["sent"] == "rejected"
    assert ("EOF while parsing" if fake.mode == "reject"
            else "failed to pass validation") in said["message"]
    assert fake.submits == 1  # a refusal is not retried


@pytest.mark.parametrize("endpoint", ["5xx-then-accept"], indirect=True)
def test_a_server_error_is_retried(rtgate_cli: RunCli, tmp_path: Path,
                                   endpoint: tuple[Fake, str]) -> None:
    fake, url = endpoint
    proc = _send(rtgate_cli, tmp_path, url)
    assert proc.returncode == 0 and _said(proc)["sent"] == "accepted"
    assert fake.submits == 2 and len(fake.submissions) == 1


@pytest.mark.parametrize("endpoint", ["slow"], indirect=True)
def test_a_slow_status_leaves_the_report_queued_not_failed(rtgate_cli: RunCli, tmp_path: Path,
                                                           endpoint: tuple[Fake, str]) -> None:
    fake, url = endpoint
    proc = _send(rtgate_cli, tmp_path, url, wait="2s")
    said = _said(proc)
    assert proc.returncode == 0 and said["sent"] == "queued" and "still ready" in said["message"]
    assert fake.polls >= 2


@pytest.mark.parametrize("endpoint", ["accept"], indirect=True)
def test_a_refused_token_is_not_delivered_and_never_printed(
        rtgate_cli: RunCli, tmp_path: Path, endpoint: tuple[Fake, str]) -> None:
    fake, url = endpoint
    proc = _send(rtgate_cli, tmp_path, url, token="wrong-" + TOKEN)
    said = _said(proc)
    assert "wrong-" not in proc.stdout + proc.stderr
    assert proc.returncode == 3 and said["sent"] == "undelivered" and "HTTP 401" in said["message"]
    assert not fake.submissions


def test_send_without_its_secrets_is_an_input_error(rtgate_cli: RunCli, tmp_path: Path) -> None:
    proc = _send(rtgate_cli, tmp_path, "", token="")
    assert proc.returncode == 2 and "RTGATE_KCIDB_URL" in proc.stderr


DOC = ROOT / "docs" / "kcidb.md"
_BLOCK = re.compile(r"^```sh\n(.*?)^```", re.M | re.S)


def _doc_blocks() -> list[str]:
    return [m.group(1) for m in _BLOCK.finditer(DOC.read_text())]


def test_the_pages_commands_parse_and_name_what_the_workflows_read() -> None:
    """docs/kcidb.md's shell blocks parse (sh -n); its `rtgate kcidb` lines parse with
    rtgate's own parser; the secrets and variables it tells a lab to set are the ones the
    workflows' kcidb jobs read, in the environment those jobs name."""
    from rtgate.cli import build_parser

    blocks = _doc_blocks()
    assert blocks
    for block in blocks:
        proc = subprocess.run(["sh", "-n"], input=block, capture_output=True, text=True,
                              timeout=30)
        assert proc.returncode == 0, proc.stderr
    lines = [ln for b in blocks for ln in b.replace("\\\n", " ").splitlines()]
    rtgate = [shlex.split(ln) for ln in lines if ln.startswith("rtgate ")]
    assert len(rtgate) == 2
    for argv in rtgate:
        args = build_parser("kcidb").parse_args(argv[1:])
        assert args.command == "kcidb" and args.origin
    secrets = {ln.split()[3] for ln in lines if ln.startswith("gh secret set ")}
    variables = {ln.split()[3] for ln in lines if ln.startswith("gh variable set ")}
    assert all("--env kcidb" in ln for ln in lines if ln.startswith("gh secret set "))
    workflows = ROOT / ".github" / "workflows"
    read_secrets: set[str] = set()
    read_vars: set[str] = set()
    for name in ("pages.yml", "latency-report.yml"):
        job = yaml.safe_load((workflows / name).read_text())["jobs"]["kcidb"]
        assert job["environment"] == "kcidb"
        text = yaml.safe_dump(job) + (workflows / name).read_text()
        read_secrets |= set(re.findall(r"secrets\.(RTGATE_KCIDB_\w+)", yaml.safe_dump(job)))
        read_vars |= set(re.findall(r"vars\.(RTGATE_(?:KCIDB|SITE)_\w+)", text))
    assert secrets == read_secrets == {"RTGATE_KCIDB_URL", "RTGATE_KCIDB_ORIGIN",
                                       "RTGATE_KCIDB_TOKEN"}
    assert variables == read_vars == {"RTGATE_SITE_URL", "RTGATE_KCIDB_PULL_REQUESTS"}


WORKFLOWS = ROOT / ".github" / "workflows"


def _step_env(tmp: Path, **values: str) -> dict[str, str]:
    import os

    return {"PATH": os.environ["PATH"], "HOME": str(tmp), "RUNNER_TEMP": str(tmp / "runner"),
            "GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "o/r", **values}


@pytest.mark.parametrize(("workflow", "job"), [("pages.yml", "kcidb"),
                                               ("latency-report.yml", "kcidb")])
def test_a_lab_without_an_endpoint_sends_nothing_and_passes(tmp_path: Path, workflow: str,
                                                            job: str) -> None:
    from steps import run

    proc = run(WORKFLOWS / workflow, "Report and send to KCIDB", job=job, cwd=tmp_path,
               env=_step_env(tmp_path, RTGATE_KCIDB_URL="", RTGATE_KCIDB_ORIGIN="",
                             RTGATE_KCIDB_TOKEN=""))
    assert proc.returncode == 0 and "nothing sent" in proc.stdout, proc.stderr


def test_the_history_job_publishes_the_build_files_the_report_links(tmp_path: Path) -> None:
    """pages.yml's history step, run as the runner runs it (rtgate from this checkout's venv),
    on a gate artifact of real results with their build records."""
    import sys

    from steps import run

    work = tmp_path / "work"
    gate = qemu_gate(work / "gate")
    (work / "runner").mkdir()
    (work / "runner" / "venv").symlink_to(sys.prefix)  # the venv rtgate runs from here
    for name in ("thresholds.yml", "bench"):
        (work / name).symlink_to(ROOT / name)
    proc = run(WORKFLOWS / "pages.yml", "Build files for KCIDB reports", job="history", cwd=work,
               env=_step_env(work, RTGATE_ROOT=str(work), SITE_URL="https://o.github.io/r"))
    assert proc.returncode == 0, proc.stderr
    configs = sorted((work / "site" / "kcidb" / "builds").glob("*/config.txt"))
    assert len(configs) == 2 and all(c.read_text() == "CONFIG_PREEMPT_RT=y\n" for c in configs)
    assert gate.is_dir()
