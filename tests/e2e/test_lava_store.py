"""The lava driver's image store (``image_store``): rtgate PUTs the job's images to a store the
lab reads and gives LAVA the store's URL, for a controller the lab cannot reach (a GitHub-hosted
runner). The store here is a real one: Debian's nginx with its WebDAV module (``dav_methods
PUT``, `scripts/deps.sh docker`), which, like a store behind a login, takes uploads only with
the right bearer token and serves downloads to anyone. tests/e2e/test_lava.py runs a LAVA job whose
worker fetches the images from it.
"""

from __future__ import annotations

import hashlib
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from pydantic import ValidationError

from rtgate.board.lava.client import LavaError
from rtgate.board.lava.store import ImageStore
from rtgate.board.spec import ImageStoreOptions, LavaOptions
from rtgate.errors import Exit, InputError
from rtgate.harness.loads import free_port

pytestmark = pytest.mark.integration

TOKEN_ENV = "RTGATE_TEST_STORE_TOKEN"
FORGED = b"not the image rtgate uploaded\n"


@dataclass(frozen=True)
class Store:
    url: str
    """The server's base URL: ``/rtgate/`` is the store, ``/broken/`` answers 500 to
    everything, ``/forged/`` serves the same other bytes under every name."""
    root: Path
    token: str

    def options(self, put: str = "rtgate", get: str = "rtgate",
                token_env: str | None = TOKEN_ENV) -> ImageStoreOptions:
        return ImageStoreOptions(put=f"{self.url}/{put}/", get=f"{self.url}/{get}/",
                                 token_env=token_env)


NGINX_CONF = """\
# Running as root, the workers would be `nobody`, who cannot write the test's directories.
user {user};
daemon off;
worker_processes 1;
pid {dir}/nginx.pid;
events {{ worker_connections 64; }}
http {{
  access_log off;
  client_max_body_size 0;
  client_body_temp_path {dir}/body;
  proxy_temp_path {dir}/proxy;
  fastcgi_temp_path {dir}/fastcgi;
  uwsgi_temp_path {dir}/uwsgi;
  scgi_temp_path {dir}/scgi;
  # Downloads for anyone, uploads with the token only.
  map "$request_method:$http_authorization" $refused {{
    default 1;
    "~^(GET|HEAD):" 0;
    "PUT:Bearer {token}" 0;
  }}
  server {{
    listen {host}:{port};
    root {dir}/www;
    location /rtgate/ {{
      if ($refused) {{ return 403; }}
      dav_methods PUT;
      create_full_put_path on;
    }}
    location /broken/ {{ return 500; }}
    location /forged/ {{ try_files /forged.bin =404; }}
  }}
}}
"""


@contextmanager
def nginx_store(workdir: Path, host: str = "127.0.0.1") -> Iterator[Store]:
    """Debian's nginx as a WebDAV store on ``host`` (a free port), for as long as it is used."""
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    if not Path(nginx).is_file():
        pytest.fail("nginx is not installed: run scripts/deps.sh docker (make test does)")
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "www" / "rtgate").mkdir(parents=True)
    (workdir / "www" / "forged.bin").write_bytes(FORGED)
    port, token = free_port(), secrets.token_hex(16)
    conf = workdir / "nginx.conf"
    conf.write_text(NGINX_CONF.format(user=pwd.getpwuid(os.getuid()).pw_name, dir=workdir,
                                      token=token, host=host, port=port))
    proc = subprocess.Popen([nginx, "-p", str(workdir), "-c", str(conf), "-e",
                             str(workdir / "error.log")], stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, proc.communicate()[1]
            try:
                socket.create_connection((host if host != "0.0.0.0" else "127.0.0.1", port),
                                         timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "nginx did not start listening"
                time.sleep(0.2)
        yield Store(f"http://{host}:{port}", workdir / "www", token)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    with nginx_store(tmp_path_factory.mktemp("store")) as running:
        yield running


@pytest.fixture
def image(tmp_path: Path) -> tuple[Path, str]:
    """A kernel-sized file of random bytes and its sha256."""
    path = tmp_path / "Image"
    path.write_bytes(os.urandom(8 << 20))
    return path, hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def token(store: Store, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(TOKEN_ENV, store.token)
    return store.token


def test_an_image_is_uploaded_under_its_sha256_and_read_back_as_the_lab_reads_it(
        store: Store, image: tuple[Path, str], token: str) -> None:
    path, digest = image
    url = ImageStore(store.options()).publish(path, digest)
    assert url == f"{store.url}/rtgate/{digest}/Image"
    stored = store.root / "rtgate" / digest / "Image"
    assert stored.read_bytes() == path.read_bytes()
    # What LAVA does: a plain download of the URL, no token.
    assert urllib.request.urlopen(url, timeout=30).read() == path.read_bytes()
    # Again: the same name for the same bytes, harmless.
    mtime = stored.stat().st_mtime_ns
    assert ImageStore(store.options()).publish(path, digest) == url
    assert stored.read_bytes() == path.read_bytes() and stored.stat().st_mtime_ns >= mtime
    # Other bytes under the same file name are another URL: a URL names one image.
    path.write_bytes(b"another build")
    other = hashlib.sha256(b"another build").hexdigest()
    assert ImageStore(store.options()).publish(path, other) == f"{store.url}/rtgate/{other}/Image"
    assert stored.read_bytes() != b"another build"


def test_the_token_goes_in_the_upload_header_and_nowhere_else(
        store: Store, image: tuple[Path, str], monkeypatch: pytest.MonkeyPatch) -> None:
    path, digest = image
    # The store takes uploads only with `Authorization: Bearer <its token>`.
    for options, value in ((store.options(token_env=None), None),
                           (store.options(), "wrong-" + store.token)):
        if value is not None:
            monkeypatch.setenv(TOKEN_ENV, value)
        with pytest.raises(LavaError) as refused:
            ImageStore(options).publish(path, digest)
        said = refused.value.oneline()
        assert said == f"image store PUT {store.url}/rtgate/{digest}/Image: HTTP 403 Forbidden"
        assert refused.value.code == Exit.INCOMPLETE
        assert value is None or value not in said
    assert not (store.root / "rtgate" / digest).exists()
    monkeypatch.setenv(TOKEN_ENV, store.token)
    ImageStore(store.options()).publish(path, digest)
    assert (store.root / "rtgate" / digest / "Image").is_file()


def test_a_board_naming_a_token_variable_that_is_unset_is_an_input_error(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    with pytest.raises(InputError, match=f"no image store token: set the environment variable "
                                         f"{TOKEN_ENV}"):
        ImageStore(store.options())


def test_a_failing_store_is_an_infrastructure_failure_naming_its_url_and_status(
        store: Store, image: tuple[Path, str], token: str) -> None:
    path, digest = image
    with pytest.raises(LavaError) as failed:
        ImageStore(store.options(put="broken")).publish(path, digest)
    assert failed.value.oneline() == (f"image store PUT {store.url}/broken/{digest}/Image: "
                                      "HTTP 500 Internal Server Error")
    assert failed.value.code == Exit.INCOMPLETE
    # Stored, but not where the lab is told to read it.
    with pytest.raises(LavaError) as missing:
        ImageStore(store.options(get="elsewhere")).publish(path, digest)
    assert missing.value.oneline() == (f"image store GET {store.url}/elsewhere/{digest}/Image: "
                                       "HTTP 404 Not Found")
    closed = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(LavaError, match=f"image store PUT {closed}/x/{digest}/Image: "
                                        "unreachable: "):
        ImageStore(ImageStoreOptions(put=f"{closed}/x", get=f"{closed}/x")).publish(path, digest)


def test_a_store_that_serves_other_bytes_is_refused(
        store: Store, image: tuple[Path, str], token: str) -> None:
    path, digest = image
    with pytest.raises(LavaError) as forged:
        ImageStore(store.options(get="forged")).publish(path, digest)
    assert forged.value.oneline() == (
        f"image store {store.url}/forged/{digest}/Image serves other bytes than rtgate "
        f"uploaded (sha256 {hashlib.sha256(FORGED).hexdigest()}, not {digest}): refused")
    assert forged.value.code == Exit.INCOMPLETE


def test_a_board_either_serves_its_images_or_uploads_them() -> None:
    base = {"server": "http://lava", "device_type": "qemu", "template": "qemu-arm64"}
    store = {"put": "https://store/up/", "get": "https://store/down/"}
    assert LavaOptions.model_validate({**base, "image_store": store}).serve_host is None
    assert LavaOptions.model_validate({**base, "serve_host": "192.0.2.1"}).image_store is None
    for wrong in ({}, {"serve_host": "192.0.2.1", "image_store": store}):
        with pytest.raises(ValidationError, match="give either serve_host .* or image_store"):
            LavaOptions.model_validate({**base, **wrong})
    with pytest.raises(ValidationError, match="token_env"):
        LavaOptions.model_validate({**base, "image_store": {**store, "token_env": "a token"}})
