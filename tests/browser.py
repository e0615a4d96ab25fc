"""Headless Chromium (Debian's package) over the DevTools protocol, for the site's tests and
its benchmark: pages, DOM queries, screenshots, and the width check (no page scrolls sideways,
the verdict in view)."""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"]
# What a page must keep at any width: the document no wider than the window, and every verdict
# badge of a table of runs inside it.
WIDTH_JS = """(() => {
  const doc = document.documentElement, problems = [];
  if (doc.scrollWidth > doc.clientWidth)
    problems.push(`scrolls sideways: ${doc.scrollWidth} > ${doc.clientWidth} px`);
  for (const v of document.querySelectorAll('table.runs .verdict')) {
    const r = v.getBoundingClientRect();
    if (r.width === 0 || r.right > doc.clientWidth) {
      problems.push(`verdict out of view: right edge ${Math.round(r.right)} px`);
      break;
    }
  }
  return problems;
})()"""


class Browser:
    """Chromium over --remote-debugging-pipe: commands on fd 3, answers on fd 4, NUL-framed."""

    def __init__(self, width: int = 1400, height: int = 1000) -> None:
        self.profile = tempfile.mkdtemp(prefix="rtgate-chromium-")
        cmd_r, self._cmd_w = os.pipe()
        self._ans_r, ans_w = os.pipe()

        def fds() -> None:
            a, b = os.dup(cmd_r), os.dup(ans_w)  # never 3/4 already: dup2 then clears CLOEXEC
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen(
            ["chromium", *CHROMIUM_FLAGS, f"--user-data-dir={self.profile}",
             "--remote-debugging-pipe", "about:blank"],
            close_fds=False, preexec_fn=fds,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(cmd_r)
        os.close(ans_w)
        self._buf = b""
        self._id = 0
        self.events: list[dict[str, Any]] = []
        target = self.call("Target.createTarget", {"url": "about:blank"}, session=False)
        self.session = self.call("Target.attachToTarget",
                                 {"targetId": target["targetId"], "flatten": True},
                                 session=False)["sessionId"]
        self.call("Page.enable")
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buf:
            if not select.select([self._ans_r], [], [], max(0.0, deadline - time.monotonic()))[0]:
                raise TimeoutError("chromium did not answer")
            chunk = os.read(self._ans_r, 1 << 20)
            if not chunk:
                raise EOFError("chromium closed the pipe")
            self._buf += chunk
        message, self._buf = self._buf.split(b"\0", 1)
        return json.loads(message)

    def call(self, method: str, params: dict[str, Any] | None = None, *,
             session: bool = True, timeout: float = 30) -> dict[str, Any]:
        self._id += 1
        message: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self.session
        os.write(self._cmd_w, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            answer = self._read(deadline)
            if answer.get("id") == self._id:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer["result"]
            self.events.append(answer)

    def goto(self, url: str, timeout: float = 30) -> None:
        self.events.clear()
        result = self.call("Page.navigate", {"url": url})
        assert not result.get("errorText"), f"{url}: {result.get('errorText')}"
        deadline = time.monotonic() + timeout
        while not any(e.get("method") == "Page.loadEventFired" for e in self.events):
            self.events.append(self._read(deadline))

    def js(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", {"expression": expression,
                                                "returnByValue": True})
        assert "exceptionDetails" not in result, result
        return result["result"].get("value")

    def screenshot(self, path: Path) -> Path:
        data = self.call("Page.captureScreenshot", {"format": "png",
                                                    "captureBeyondViewport": True})["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        try:
            self.call("Browser.close", session=False, timeout=10)
        except (EOFError, TimeoutError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._cmd_w)
        os.close(self._ans_r)
        shutil.rmtree(self.profile, ignore_errors=True)


def overflowing_pages(browser: Browser, root: Path) -> dict[str, list[str]]:
    """Every page of the site at the browser's width, by what is wrong with it."""
    found = {}
    for page in sorted(root.rglob("*.html")):
        if page.relative_to(root).parts[0] == "docs":  # MkDocs' own theme, not the results
            continue
        browser.goto(page.as_uri())
        if problems := browser.js(WIDTH_JS):
            found[page.relative_to(root).as_posix()] = problems
    return found
