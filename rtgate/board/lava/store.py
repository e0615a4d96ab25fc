"""Where a LAVA lab downloads a job's images from: served by the controller over HTTP
(ImageServer), or uploaded to a store the lab reads (ImageStore)."""

from __future__ import annotations

import hashlib
import http.server
import shutil
import threading
import urllib.error
import urllib.request
from contextlib import suppress
from pathlib import Path
from typing import Any
from urllib.parse import quote

from rtgate.board.lava.client import HTTP_TIMEOUT_S, LavaError, token
from rtgate.board.spec import ImageStoreOptions


class ImageServer:
    """Serves the job's images (and nothing else) over HTTP for the lab's worker."""

    def __init__(self, files: dict[str, Path], host: str, port: int) -> None:
        table = dict(files)

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_HEAD(self) -> Path | None:  # noqa: N802 - the stdlib's names
                path = table.get(self.path.lstrip("/"))
                if path is None:
                    self.send_error(404)
                    return None
                self.send_response(200)
                self.send_header("Content-Length", str(path.stat().st_size))
                self.end_headers()
                return path

            def do_GET(self) -> None:  # noqa: N802
                if path := self.do_HEAD():
                    with open(path, "rb") as fh, suppress(ConnectionError):
                        # The worker may probe a file and hang up: not an error here.
                        shutil.copyfileobj(fh, self.wfile)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

        self.httpd = http.server.ThreadingHTTPServer(("0.0.0.0", port), Handler)
        self.base = f"http://{host}:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class ImageStore:
    """Uploads images to a store the lab reads: HTTP PUT, as WebDAV servers take it.

    Each image is named by its content (``<sha256>/<file name>``): one URL is one image for
    good, and uploading it again is harmless. It is then read back from the lab's (GET) URL,
    without the token, as the lab will read it: a store that serves other bytes is refused
    before any job runs.
    """

    def __init__(self, opts: ImageStoreOptions) -> None:
        self.opts = opts
        self.headers = {} if opts.token_env is None else {
            "Authorization": f"Bearer {token(opts.token_env, 'image store token')}"}

    def publish(self, path: Path, digest: str) -> str:
        """Upload ``path`` (its sha256: ``digest``) and check it; the URL the lab reads."""
        name = f"{digest}/{quote(path.name)}"
        put, get = (f"{base.rstrip('/')}/{name}" for base in (self.opts.put, self.opts.get))
        with open(path, "rb") as fh:
            self._send(urllib.request.Request(put, data=fh, method="PUT", headers={
                **self.headers, "Content-Length": str(path.stat().st_size),
                "Content-Type": "application/octet-stream"})).close()
        got = hashlib.sha256()
        with self._send(urllib.request.Request(get)) as resp:
            while chunk := resp.read(1 << 20):
                got.update(chunk)
        if got.hexdigest() != digest:
            raise LavaError(f"image store {get} serves other bytes than rtgate uploaded (sha256 "
                            f"{got.hexdigest()}, not {digest}): refused")
        return get

    @staticmethod
    def _send(req: urllib.request.Request) -> Any:
        try:
            return urllib.request.urlopen(req, timeout=HTTP_TIMEOUT_S)
        except urllib.error.HTTPError as exc:
            raise LavaError(f"image store {req.get_method()} {req.full_url}: HTTP {exc.code} "
                            f"{exc.reason}") from exc
        except (urllib.error.URLError, OSError) as exc:
            raise LavaError(f"image store {req.get_method()} {req.full_url}: unreachable: "
                            f"{getattr(exc, 'reason', exc)}") from exc
