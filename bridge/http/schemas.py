"""OpenAPI schemas of the bodies routes parse themselves (the answer body, whose nested models
pydantic puts under `$defs`): `component_schemas` returns them ready for
`components.schemas`, where `app.py` moves them when the OpenAPI document is built."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

COMPONENTS_KEY = "x-hitl-components"


def component_schemas(*models: type[BaseModel]) -> dict[str, Any]:
    """Schemas for routes that parse their own body: put under `openapi_extra[COMPONENTS_KEY]`,
    they are moved to `components.schemas` when the OpenAPI document is built."""
    out: dict[str, Any] = {}
    for model in models:
        schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
        out.update(schema.pop("$defs", {}))
        out[model.__name__] = schema
    return out


def body_of(model: type[BaseModel]) -> dict[str, Any]:
    """`openapi_extra` for a route that reads `model` as its JSON body itself."""
    return {"requestBody": {"required": True, "content": {"application/json": {
        "schema": {"$ref": f"#/components/schemas/{model.__name__}"}}}},
        COMPONENTS_KEY: component_schemas(model)}
