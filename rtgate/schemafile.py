"""A model's JSON Schema as rtgate commits it: draft 2020-12, with the document's schema id."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


def schema_of(model: type[BaseModel], schema_id: str) -> dict[str, Any]:
    schema = model.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = schema_id
    return schema
