"""Where kernel sources, ccache and built kernels are kept between runs."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """$RTGATE_CACHE, else ~/.cache/rtgate: shared by every build on this machine."""
    env = os.environ.get("RTGATE_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "rtgate"
