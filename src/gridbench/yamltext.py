"""YAML text of plain data, the one way gridbench writes YAML (spec.yaml, presets, the
dashboard's forms) and reads it: the hardened parser every spec, preset, declaration and
stored spec.yaml goes through (:func:`parse_yaml`, :func:`plain_data`; size, node-count
and nesting caps, no tag but ``!!str``, no duplicate key), and :func:`parse_mapping`, a
YAML document as a plain mapping with the error a caller's place and fix. A foundation:
it imports nothing of gridbench but its errors, so the store (which writes and reads a
run's spec.yaml) and the spec loader both stand on it."""

from __future__ import annotations

import io
import itertools
import re
import sys
from datetime import date
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import TaggedScalar
from ruamel.yaml.error import YAMLError

from gridbench.errors import GridbenchError, SpecError

#: The largest YAML document gridbench reads (a spec, a preset, a declaration).
MAX_YAML_BYTES = 1024 * 1024


def dump_yaml(data: Any) -> str:
    """``data`` (plain dicts, lists and scalars) as block-style YAML text."""
    buf = io.StringIO()
    y = YAML(typ="safe", pure=True)
    y.default_flow_style = False
    y.dump(data, buf)
    return buf.getvalue()


def _yaml() -> YAML:
    y = YAML(typ="rt")
    y.allow_duplicate_keys = False
    return y


def parse_yaml(
    text: str,
    origin: str,
    *,
    fix: str = "check indentation and quoting near that line",
    what: str = "",
) -> Any:
    """Parse YAML text into ruamel's round-trip nodes (which remember line numbers); bad
    YAML is a SpecError naming ``origin`` and the line ("``what`` is not valid YAML"),
    with ``fix``."""
    if _flow_depth(text) > MAX_SPEC_DEPTH:  # ruamel's scanner slows down per open level
        raise _too_deep(origin)
    try:
        return _yaml().load(io.StringIO(text))
    except RecursionError:  # ruamel's composer recurses once per nesting level
        raise _too_deep(origin) from None
    except ValueError as exc:  # int() past sys.get_int_max_str_digits(), in the constructor
        if "digits" not in str(exc):
            raise
        raise SpecError(
            f"a number has more than {sys.get_int_max_str_digits()} digits",
            where=origin,
            fix="a spec's numbers are short: check for a pasted blob",
        ) from None
    except YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{origin}:{mark.line + 1}" if mark is not None else origin
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SpecError(
            f"{what} is not valid YAML: {problem}" if what else f"not valid YAML: {problem}",
            where=where,
            fix=fix,
        ) from None


MAX_SPEC_NODES = 100_000
#: Deeper data is refused: every later step (validation, copies, JSON) recurses per level.
MAX_SPEC_DEPTH = 64


_BRACKETS = re.compile(r"[\[\]{}]")


def _flow_depth(text: str) -> int:
    """Deepest nesting of flow brackets; brackets in strings and comments count too
    (an over-estimate: a spec's regexes add a level or two, never dozens)."""
    marks = _BRACKETS.findall(text)
    if len(marks) <= MAX_SPEC_DEPTH:
        return len(marks)
    return max(itertools.accumulate(1 if c in "[{" else -1 for c in marks))


def _too_deep(origin: str | None = None) -> SpecError:
    return SpecError(
        f"the spec is nested too deeply (more than {MAX_SPEC_DEPTH} levels)",
        where=origin,
        fix="a spec is a few levels deep: check for runaway brackets or indentation",
    )


def plain_data(node: Any, budget: list[int] | None = None, depth: int = 0) -> Any:
    """Plain Python data (dicts with str keys, lists, str, int, float, bool, None) from the
    ruamel nodes :func:`parse_yaml` returns, for validation, copies and JSON.

    A node budget stops alias bombs (anchors that reference each other expand
    exponentially) and a depth cap stops nesting bombs; either raises a SpecError. The
    ``budget`` and ``depth`` arguments are the recursion's own: callers pass only ``node``.
    """
    budget = budget if budget is not None else [MAX_SPEC_NODES]
    budget[0] -= 1
    if budget[0] < 0:
        raise SpecError(
            f"the spec expands to more than {MAX_SPEC_NODES} values",
            fix="a spec is small: check anchors and aliases (&name / *name) for loops",
        )
    if depth > MAX_SPEC_DEPTH:
        raise _too_deep()
    _refuse_tag(node)
    try:
        if isinstance(node, dict):
            return {str(k): plain_data(v, budget, depth + 1) for k, v in node.items()}
        if isinstance(node, list):
            return [plain_data(v, budget, depth + 1) for v in node]
    except RecursionError:  # called deep inside another recursion
        raise _too_deep() from None
    # ruamel's round-trip scalars (ScalarFloat, ScalarInt, ...) become plain Python values
    if isinstance(node, bool) or node is None:
        return node
    if isinstance(node, int):
        return int(node)
    if isinstance(node, float):
        return float(node)
    if isinstance(node, str):
        return str(node)
    if isinstance(node, TaggedScalar):  # only !!str is left: _refuse_tag let it through
        return str(node.value)
    if isinstance(node, date):  # an unquoted 2026-01-01: the text, as the user wrote it
        return node.isoformat()
    raise SpecError(
        f"a value of YAML type {type(node).__name__} is not supported",
        fix="a spec holds mappings, lists, strings, numbers, booleans and null "
        "(drop tags like !!binary and !!set)",
    )


#: The one explicit tag a scalar may carry (``!!str 5``): it keeps 5 a string.
_STR_TAG = "tag:yaml.org,2002:str"


def _refuse_tag(node: Any) -> None:
    """SpecError for a node with an explicit tag other than ``!!str`` (``!foo``,
    ``!!python/object:...``): gridbench builds no objects from a spec."""
    tag = getattr(getattr(node, "tag", None), "value", None)
    if tag is None or (tag == _STR_TAG and isinstance(node, TaggedScalar)):
        return
    shown = tag.replace("tag:yaml.org,2002:", "!!")
    raise SpecError(
        f"the YAML tag {shown[:80]!r} is not supported",
        fix="remove the tag: a spec holds plain mappings, lists, strings and numbers",
    )


def parse_mapping(
    text: str,
    origin: str,
    *,
    what: str,
    fix: str,
    where: str | None = None,
    error: type[GridbenchError] = SpecError,
) -> dict[str, Any]:
    """A YAML document (a preset, a declaration, a configuration, a stored spec.yaml) as a
    plain mapping (str keys; lists, str, int, float, bool, None), parsed by the hardened
    parser; an empty document is an empty mapping.

    Anything wrong is one ``error`` (SpecError unless the caller says, e.g. ResultsError
    for the store) saying ``what`` it is about ("preset 'slurm'"): bad YAML with its line,
    a document past the caps, a tag, or a document that is not a mapping. Its place is
    ``where`` (the spec field that named the document) when given, the line then in the
    message, else ``origin`` (the file) with the line; its fix is the caller's ``fix``
    (what a good document holds), after "check indentation and quoting near that line"
    for bad YAML; a cap's own fix for a document past one."""
    place = where or origin
    if len(text) > MAX_YAML_BYTES:
        raise error(
            f"{what} is larger than {MAX_YAML_BYTES // (1024 * 1024)} MiB",
            where=place,
            fix=f"it is a short file: {fix}",
        )
    syntax_fix = f"check indentation and quoting near that line; {fix}"
    try:
        data = plain_data(parse_yaml(text, origin, fix=syntax_fix, what=what))
    except SpecError as exc:  # bad YAML (says what), or past a cap, or a tag (do not)
        said = exc.message if exc.message.startswith(what) else f"{what}: {exc.message}"
        at = f" ({exc.where})" if where is not None and exc.where else ""
        raise error(
            f"{said}{at}", where=place if where else exc.where or origin, fix=exc.fix
        ) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise error(f"{what} is not a mapping", where=place, fix=fix)
    return data
