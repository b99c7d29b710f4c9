"""Bodies a handler reads itself: bounded JSON, errors as JSON, and their OpenAPI doc."""

from __future__ import annotations

import json
from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse

from gridbench.family.dashboard import STRING as STRING
from gridbench.family.dashboard import body_doc as body_doc
from gridbench.family.dashboard import error_dict as error_dict
from gridbench.family.dashboard import form_doc as form_doc

MAX_JSON_DEPTH = 32  # nesting of posted JSON (a spec is a few levels deep)


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
