"""Bodies a handler reads itself: bounded JSON, errors as JSON, and their OpenAPI doc."""

from __future__ import annotations

import json
from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse

from gridbench.errors import GridbenchError

MAX_JSON_DEPTH = 32  # nesting of posted JSON (a spec is a few levels deep)
STRING = {"type": "string"}


def body_doc(media_type: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """The OpenAPI ``requestBody`` of a handler that reads its body itself (the schema
    documents it, and the schemathesis test fuzzes it)."""
    schema = {"type": "object", "properties": properties, "required": required}
    return {"requestBody": {"required": True, "content": {media_type: {"schema": schema}}}}


def form_doc(*fields: str, required: list[str]) -> dict[str, Any]:
    """:func:`body_doc` of a urlencoded form of string fields."""
    props = {f: STRING for f in fields}
    return body_doc("application/x-www-form-urlencoded", props, required)


def error_dict(exc: GridbenchError) -> dict[str, str]:
    """An error as the pages and the JSON API show it: what, where, the fix."""
    return {"message": exc.message, "where": exc.where or "", "fix": exc.fix or ""}


def json_depth(obj: Any) -> int:
    """Nesting depth of JSON data, without recursion (it may be deeper than the stack)."""
    deepest, todo = 0, [(obj, 1)]
    while todo:
        node, d = todo.pop()
        if isinstance(node, dict | list):
            deepest = max(deepest, d)
            todo.extend((v, d + 1) for v in (node.values() if isinstance(node, dict) else node))
    return deepest


class BadJSON(ValueError):
    """A posted JSON body that cannot be used; the message says why."""


async def read_json_body(request: Request) -> Any:
    """The request's JSON body, or BadJSON (invalid, or nested deeper than MAX_JSON_DEPTH)."""
    raw = await request.body()
    try:
        body = json.loads(raw)  # its C parser raises RecursionError past the stack's depth
    except RecursionError:
        raise BadJSON(f"the JSON is nested more than {MAX_JSON_DEPTH} levels deep") from None
    except ValueError as exc:
        raise BadJSON(f"the body is not valid JSON: {str(exc)[:200]}") from None
    if json_depth(body) > MAX_JSON_DEPTH:
        raise BadJSON(f"the JSON is nested more than {MAX_JSON_DEPTH} levels deep")
    return body


async def json_or_422(request: Request) -> tuple[Any, JSONResponse | None]:
    """The request's JSON body, or the 422 response naming what is wrong with it."""
    try:
        return await read_json_body(request), None
    except BadJSON as exc:
        return None, JSONResponse({"error": str(exc)}, status_code=422)
