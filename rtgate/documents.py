"""The documents rtgate writes whose JSON Schemas it commits, for editors and other tools.

``python -m rtgate.documents`` (``make schema``) rewrites each schema file from its model; tests
keep the committed files current.
"""

from __future__ import annotations

import json

from rtgate import calibration, result
from rtgate.ab import doc as ab_doc
from rtgate.bisect import doc as bisect_doc
from rtgate.board import rawrun
from rtgate.gate import thresholds
from rtgate.jsonfile import write_atomic

DOCUMENTS = (result, calibration, thresholds, bisect_doc, ab_doc, rawrun)


def main() -> None:
    for module in DOCUMENTS:
        write_atomic(module.SCHEMA_FILE, json.dumps(module.json_schema(), indent=2) + "\n")
        print(module.SCHEMA_FILE)


if __name__ == "__main__":
    main()
