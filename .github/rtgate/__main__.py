"""Run this checkout's rtgate under ``python -I``: ``$RTGATE_PYTHON -I .github/rtgate ARGS``.

Isolated mode ignores the user's site-packages, every PYTHON* variable and the current
directory, which is what keeps a ``usercustomize.py`` planted by an earlier job on a lab runner
from changing a verdict; it also drops the checkout from the import path. Running this directory
puts it on the path instead, and it hands over to the checkout two levels up, nothing else.
"""

import sys
from pathlib import Path

sys.path[0] = str(Path(__file__).resolve().parents[2])

from rtgate.cli import main  # noqa: E402 - the path above is what makes it importable

raise SystemExit(main())
