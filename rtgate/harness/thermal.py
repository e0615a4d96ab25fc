"""The hottest a thermal zone got during a run: throttling shows up as latency, so we keep it."""

from __future__ import annotations

import threading
from pathlib import Path
from types import TracebackType

THERMAL = Path("/sys/class/thermal")


class ThermalSampler:
    """Samples every thermal zone once per ``interval_s`` in a background thread.

    ``max_c``/``zone`` stay None on machines without thermal zones (most VMs).
    """

    def __init__(self, root: Path = THERMAL, interval_s: float = 1.0) -> None:
        self.zones = sorted(root.glob("thermal_zone*"))
        self.interval_s = interval_s
        self.max_c: float | None = None
        self.zone: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="thermal", daemon=True)

    def sample(self) -> None:
        for zone in self.zones:
            try:
                milli = int((zone / "temp").read_text().strip())
            except (OSError, ValueError):
                continue  # some zones refuse reads (e.g. a sleeping sensor): skip, not fail
            celsius = milli / 1000
            if self.max_c is None or celsius > self.max_c:
                kind = (zone / "type").read_text().strip() if (zone / "type").exists() else ""
                self.max_c, self.zone = celsius, f"{zone.name} {kind}".strip()

    def _loop(self) -> None:
        while True:
            self.sample()
            if self._stop.wait(self.interval_s):
                return

    def __enter__(self) -> ThermalSampler:
        if self.zones:
            self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        if self.zones:
            self.sample()
