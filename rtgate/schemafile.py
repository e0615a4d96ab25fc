"""The JSON Schemas rtgate commits for editors and other tools, generated from its models.

``python -m rtgate.schemafile`` (``make schema``) rewrites them; tests keep them current.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel


def schema_of(model: type[BaseModel], schema_id: str) -> dict[str, Any]:
    schema = model.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = schema_id
    return schema


def main() -> None:
    # The models import schema_of from here: import them only when writing the files.
    from rtgate import bisectdoc, result
    from rtgate.gate import thresholds

    for module in (result, thresholds, bisectdoc):
        result.write_atomic(module.SCHEMA_FILE, json.dumps(module.json_schema(), indent=2) + "\n")
        print(module.SCHEMA_FILE)


if __name__ == "__main__":
    main()
