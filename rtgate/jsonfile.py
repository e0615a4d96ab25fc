"""``loads``: json.loads for files rtgate is handed, where hostile input is expected.

Besides syntax errors (json.JSONDecodeError, which callers word themselves), Python's json fails
in two ways a crafted file can trigger: an integer too long to convert (ValueError) and nesting
deeper than the recursion limit (RecursionError). Both become one-line input errors (exit 2)
naming the file, never a crash reported as an infrastructure failure.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from rtgate.errors import InputError


def loads(data: str | bytes, path: Path) -> Any:
    try:
        return json.loads(data)
    except json.JSONDecodeError:
        raise
    except ValueError as exc:
        raise InputError(f"holds an integer of more than {sys.get_int_max_str_digits()} digits, "
                         "not a measurement", path=path) from exc
    except RecursionError as exc:
        raise InputError("nested too deeply for a measurement", path=path) from exc
