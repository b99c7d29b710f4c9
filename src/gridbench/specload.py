"""Loading any family's YAML spec: parsing with line marks, ``--set key.path=value``
overrides, and pydantic errors turned into one SpecError that names the file and line (or
the ``--set``), the field, what was expected and the fix. Size, node-count and nesting
caps keep hostile YAML (alias bombs, runaway brackets) a clear error.

Generic core: each family validates the plain data against its own model (job flow in
:mod:`gridbench.jobflow.spec.load`, io in :mod:`gridbench.io.load`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Generic, TypeVar

from pydantic import BaseModel, Field, ValidationError
from ruamel.yaml.comments import CommentedMap, CommentedSeq

from gridbench.errors import SpecError
from gridbench.family import OwnsSpecs, command_of, family_of_spec
from gridbench.spechints import did_you_mean
from gridbench.yamltext import MAX_SPEC_DEPTH as MAX_SPEC_DEPTH
from gridbench.yamltext import MAX_SPEC_NODES as MAX_SPEC_NODES
from gridbench.yamltext import MAX_YAML_BYTES
from gridbench.yamltext import _flow_depth as _flow_depth  # tests use it
from gridbench.yamltext import dump_yaml as dump_yaml  # re-exported: specs' callers use it
from gridbench.yamltext import parse_yaml as parse_yaml  # the hardened parser, re-exported
from gridbench.yamltext import plain_data as plain_data

MAX_SPEC_BYTES = MAX_YAML_BYTES

#: The ``name`` every family's spec gives its runs. Any text: every place that shows it
#: makes control characters visible and escapes markup (gridbench.fmt).
SpecName = Annotated[str, Field(min_length=1, max_length=200)]


def read_spec_text(path: str | Path) -> str:
    p = Path(path)
    if not p.is_file():
        raise SpecError("spec file not found", where=str(p), fix="give the path to a YAML spec")
    if p.stat().st_size > MAX_SPEC_BYTES:
        raise SpecError(
            "spec file is larger than 1 MiB", where=str(p), fix="a spec is a short file"
        )
    try:
        return p.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise SpecError("spec is not UTF-8 text", where=str(p), fix="save it as UTF-8") from None


def _line_of(root: Any, loc: tuple[int | str, ...]) -> int | None:
    """1-based line of the deepest node of ``loc`` that exists in the YAML tree."""
    node, line = root, None
    for key in loc:
        if isinstance(node, CommentedMap) and key in node:
            line = node.lc.key(key)[0] + 1
            node = node[key]
        elif isinstance(node, CommentedSeq) and isinstance(key, int) and key < len(node):
            line = node.lc.item(key)[0] + 1
            node = node[key]
        else:
            break
    if line is None and isinstance(root, CommentedMap | CommentedSeq):
        line = root.lc.line + 1
    return line


_FIX_BY_TYPE = {
    "extra_forbidden": "remove it, or check its spelling against docs/spec.md",
    "missing": "add this field (see docs/spec.md)",
    "literal_error": "use one of the allowed values",
    "int_parsing": "give a whole number",
    "float_parsing": "give a number",
    "greater_than_equal": "give a larger value",
    "less_than_equal": "give a smaller value",
    "int_parsing_size": "give a number in the field's range: see docs/spec.md",
    "string_pattern_mismatch": "write it in that form: see docs/spec.md",
}
#: pydantic's words that misname what the user gave (a YAML number is no "input string")
_MSG_BY_TYPE = {"int_parsing_size": "the number is past the 64-bit integers"}
#: The spec fields' patterns in words (a regular expression is no explanation); the test
#: suite checks that every pattern of every family's spec is here.
PATTERN_WORDS = {
    r"^[A-Za-z][A-Za-z0-9_-]{0,39}$": "1 to 40 letters, digits, '_' or '-', the first a letter",
    r"^[A-Za-z_][A-Za-z0-9_]*$": "an environment variable's name (letters, digits and '_', "
    "not starting with a digit)",
    r"^[A-Za-z0-9_.@-]+$": "letters, digits, '.', '_', '@' or '-'",
    r"^[A-Za-z0-9_.-]+$": "letters, digits, '.', '_' or '-'",
    r"^[A-Za-z0-9_.-]{1,40}$": "1 to 40 letters, digits, '.', '_' or '-'",
    r"^[A-Za-z0-9_.-]{1,64}$": "1 to 64 letters, digits, '.', '_' or '-'",
    r"^[a-z_][a-z0-9_.-]*\$?$": "a Unix account name (lower-case letters, digits, '_', '.' "
    "or '-', the first a letter or '_')",
    r"^[a-z_][a-z0-9_.-]{0,31}$": "a Unix user name (up to 32 lower-case letters, digits, "
    "'_', '.' or '-', the first a letter or '_')",
    r"^https?://": "an http:// or https:// URL",
    r"^\d+(\.\d+)?(bit|kbit|mbit|gbit)$": "a rate such as 100mbit (bit, kbit, mbit or gbit)",
    r"^10\.\d{1,3}\.\d{1,3}$": "the first three octets of a 10.x.y.0/24 network, e.g. 10.247.0",
    r"^[A-Za-z0-9_.:\[\]-]+$": "a host name or address",
    r"^(brick[1-9][0-9]{0,2}|[A-Za-z0-9_.-]+:/[^\s]*)$": "brickN (N from 1) or HOST:/PATH",
    r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$": "a host's name in the inventory (1 to 63 letters, "
    "digits, '.', '_' or '-', the first a letter or digit)",
    r"^[1-9][0-9]{0,5}[KMG]?$": "a rate for iperf3 -b such as 100M (a number, then K, M or G)",
}


def _message(err: Any) -> str:
    """pydantic's message for ``err``, in the spec's words where pydantic's mislead."""
    if err["type"] == "string_pattern_mismatch":
        pattern = str(err.get("ctx", {}).get("pattern", ""))
        words = PATTERN_WORDS.get(pattern)
        if words is not None:
            return f"{str(err.get('input'))[:80]!r} is not {words}"
    return _MSG_BY_TYPE.get(err["type"]) or str(err["msg"]).removeprefix("Value error, ")


def _place(
    loc: tuple[int | str, ...],
    line: int | None,
    origin: str,
    overridden: list[tuple[str, ...]] | None,
) -> str:
    """Where a value at ``loc`` came from: the ``--set`` that supplied it, else file:line
    (the file alone for the whole spec), naming the ``--set`` values a check across the
    fields below ``loc`` read (``record_size`` against ``file_size``)."""
    path = tuple(str(x) for x in loc)
    by_set = next((o for o in overridden or [] if path[: len(o)] == o), None)
    if by_set:
        return f"--set {'.'.join(by_set)}"
    place = f"{origin}:{line}" if line and path else origin
    within = [".".join(o) for o in overridden or [] if o[: len(path)] == path]
    return f"{place} (with --set {', '.join(within)})" if within else place


def _data_loc(root: Any, loc: tuple[int | str, ...]) -> tuple[int | str, ...]:
    """``loc`` without pydantic's union tags: parts past a single value of the spec
    (``point.int`` for a ``point: zz`` that is neither an integer nor 'all'/'any') and
    tags such as ``literal['all','any']``."""
    loc = tuple(x for x in loc if not (isinstance(x, str) and "[" in x))
    node = root
    for i, key in enumerate(loc):
        if isinstance(node, dict):
            if key not in node:
                return loc  # a missing or unknown key: the path names it
            node = node[key]
        elif isinstance(node, list):
            if not isinstance(key, int) or not 0 <= key < len(node):
                return loc
            node = node[key]
        else:
            return loc[:i]  # nothing lies below a single value: the rest are tags
    return loc


@dataclass(frozen=True, slots=True)
class SpecProblem:
    """A mistake a family's check finds in a valid spec (what pydantic cannot see, e.g. a
    threshold path no metric has): the place in the spec, what is wrong and the fix."""

    loc: tuple[int | str, ...]
    message: str
    fix: str


def problem_error(
    problem: SpecProblem,
    root: Any,
    origin: str,
    overridden: list[tuple[str, ...]] | None = None,
) -> SpecError:
    """``problem`` as one SpecError worded like a validation error: place, field, fix."""
    place = _place(problem.loc, _line_of(root, problem.loc), origin, overridden)
    field = ".".join(str(x) for x in problem.loc)
    return SpecError(f"{place}: field '{field}': {problem.message} (fix: {problem.fix})")


def misspelt_threshold(
    data: dict[str, Any],
    problem_of: Callable[[str], tuple[str, str | None] | None],
    docs: str,
) -> SpecProblem | None:
    """The first threshold of the plain spec ``data`` whose metric path ``problem_of``
    refuses ((what is wrong, the path it probably meant or None)), with a "did you mean".
    The plain data keeps each item's index in the file, whatever a family translates."""
    items = data.get("thresholds")
    for i, item in enumerate(items if isinstance(items, list) else []):
        metric = item.get("metric") if isinstance(item, dict) else None
        problem = problem_of(metric) if isinstance(metric, str) else None
        if problem is not None:
            message, instead = problem
            return SpecProblem(
                ("thresholds", i, "metric"),
                f"threshold metric {metric!r}: {message}",
                (f"did you mean {instead!r}? " if instead else "")
                + f"the paths are listed in {docs} (Thresholds)",
            )
    return None


def validation_error(
    exc: ValidationError,
    root: Any,
    origin: str,
    overridden: list[tuple[str, ...]] | None = None,
    model: type[BaseModel] | None = None,
    data: Any = None,
) -> SpecError:
    """Turn a pydantic error into one SpecError listing every problem with its line
    (or the ``--set`` that supplied the value), with the key or value a near miss meant
    ("did you mean"; keys from ``model``). ``data`` is what was validated (the file's
    tree with the overrides applied; ``root`` when not given)."""
    # one line per field: a union's members each refuse the value ("a valid integer",
    # "'all' or 'any'"), said together
    by_field: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for err in exc.errors():
        loc = _data_loc(root if data is None else data, err["loc"])
        field = ".".join(str(x) for x in loc) or "(top level)"
        place = _place(loc, _line_of(root, loc), origin, overridden)
        msg = _message(err)
        meant = did_you_mean(model, err)
        if meant is not None:
            msg = f"{msg}; did you mean '{meant}'?"
        fix = _FIX_BY_TYPE.get(err["type"], "see docs/spec.md")
        by_field.setdefault((place, field), []).append((msg, fix))
    lines = []
    for (place, field), said in by_field.items():
        msgs = "; or ".join(dict.fromkeys(m for m, _ in said))
        fixes = "; or ".join(dict.fromkeys(f for _, f in said))
        lines.append(f"{place}: field '{field}': {msgs} (fix: {fixes})")
    first, *rest = lines
    return SpecError("\n".join([first, *rest]) if rest else first)


M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class SpecWords:
    """How a family's spec errors speak of it: what the spec is called, its top-level
    keys, an example file to copy and the doc the fixes point at."""

    what: str = "a spec"
    keys: str = "name:, ..."
    template: str = "examples/"
    docs: str = "docs/spec.md"


def validate_spec(
    model: type[M],
    data: Any,
    root: Any,
    origin: str,
    overridden: list[tuple[str, ...]] | None = None,
    words: SpecWords = SpecWords(),
) -> M:
    """Plain spec data as a family's ``model``: a mapping (else "``what`` must be a YAML
    mapping (``keys``)", fix: see ``template``), validated, every problem in one SpecError
    whose fixes point at ``docs``."""
    if not isinstance(data, dict):
        raise SpecError(
            f"{words.what} must be a YAML mapping ({words.keys})",
            where=origin,
            fix=f"see {words.template} for a template",
        )
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        err = validation_error(exc, root, origin, overridden, model, data)
        raise SpecError(err.message.replace("docs/spec.md", words.docs)) from None


def apply_overrides(data: Any, overrides: list[str], origin: str = "--set") -> Any:
    """Apply ``key.path=value`` overrides (value parsed as YAML) to a plain dict."""
    data = copy.deepcopy(data)
    for item in overrides:
        if "=" not in item:
            raise SpecError(
                f"override {item!r} has no '='", where=origin, fix="write --set key.path=value"
            )
        key, raw = item.split("=", 1)
        parts = [p for p in key.strip().split(".") if p]
        if not parts:
            raise SpecError(f"override {item!r} has an empty key", where=origin, fix="name a field")
        value = plain_data(parse_yaml(raw, f"{origin} {key}")) if raw.strip() else ""
        try:
            set_path(data, parts, value)
        except (KeyError, IndexError, TypeError) as exc:
            raise SpecError(
                f"cannot set {key!r}: {exc.args[0] if exc.args else exc}",
                where=f"--set {item}",
                fix="name a mapping field, or a list item by index (load.schedule.0.rate)",
            ) from None
    return data


def set_path(data: Any, parts: list[str], value: Any) -> None:
    """Set ``value`` at a dotted path; numeric parts index lists; missing mappings are made."""
    node = data
    for i, p in enumerate(parts):
        last = i == len(parts) - 1
        if isinstance(node, list):
            if not p.lstrip("-").isdigit():
                raise TypeError(f"{'.'.join(parts[:i])} is a list: index it with a number")
            k = int(p)
            if not -len(node) <= k < len(node):
                raise IndexError(f"{'.'.join(parts[:i])} has {len(node)} items, no item {k}")
            if last:
                node[k] = value
            else:
                node = node[k]
        elif isinstance(node, dict):
            if last:
                node[p] = value
            else:
                if p not in node or node[p] is None:
                    node[p] = {}
                node = node[p]
        else:
            raise TypeError(f"{'.'.join(parts[:i])} is a single value, not a mapping")


def parse_with_overrides(
    text: str, origin: str, overrides: list[str] | None
) -> tuple[Any, Any, list[tuple[str, ...]]]:
    """YAML text as (the parsed document with line marks, plain data with ``--set``
    overrides applied, the overridden key paths): what every spec loader validates."""
    root = parse_yaml(text, origin)
    try:
        data = plain_data(root)
    except SpecError as exc:
        raise SpecError(exc.message, where=origin, fix=exc.fix) from None
    overridden: list[tuple[str, ...]] = []
    if overrides:
        data = apply_overrides(data, overrides)
        overridden = [
            tuple(p for p in o.split("=", 1)[0].strip().split(".") if p) for o in overrides
        ]
    return root, data, overridden


def own_kind(data: Any, kind: str, origin: str) -> Any:
    """``data`` without its ``kind:`` when that names this family (``kind``); a SpecError
    naming the family and its command when it names another."""
    if not kind or not isinstance(data, dict) or "kind" not in data:
        return data
    if data["kind"] == kind:
        return {k: v for k, v in data.items() if k != "kind"}
    raise SpecError(
        f"this spec says kind: {data['kind']!r}, not {kind!r}",
        where=f"{origin}: kind",
        fix=f"run it with 'gridbench validate|plan|run {origin}', which finds its family, "
        f"or correct kind:",
    )


def other_family(data: Any, kind: str, what: str, origin: str) -> SpecError | None:
    """The one error for a spec of another family handed to this one's command (instead
    of this family's complaints about every key it does not know), or None."""
    fam = family_of_spec(data)
    if fam is None or fam.name == kind or not isinstance(fam, OwnsSpecs):
        return None
    own = " ".join(["gridbench", *command_of(fam), "validate", origin])
    generic = f"gridbench validate {origin}"
    return SpecError(
        f"this is {fam.spec_noun}, not {what} (its keys: "
        f"{', '.join(sorted(k for k in data if k in fam.spec_marks))})",
        where=origin,
        fix=f"'{own}'"
        + ("" if own == generic else f", or '{generic}', which finds the family from the spec"),
    )


@dataclass(frozen=True, slots=True)
class SpecLoader(Generic[M]):
    """How a family loads its spec: the model and the words of its "must be a mapping"
    error. A family's ``load.py`` is one of these (data) and two aliases of its methods.
    """

    model: type[M]
    what: str  # "an io spec"
    keys: str  # the top-level keys named in the error, "name:, targets:, ..."
    template: str  # an example spec, "examples/io-local-quick.yaml"
    docs: str  # where the fixes point, "docs/io.md"
    kind: str = ""  # the family's name: a spec may say ``kind: <it>``
    #: what pydantic cannot see, checked on the valid spec and its plain data (before
    #: anything runs: every command loads the spec through here)
    check: Callable[[M, dict[str, Any]], SpecProblem | None] | None = None

    def load_text(
        self,
        text: str,
        origin: str = "<spec>",
        overrides: list[str] | None = None,
        *,
        checked: bool = True,
    ) -> tuple[M, dict[str, Any]]:
        """Parse, override and validate spec text; returns the model and the plain data.
        ``checked=False`` skips the family's ``check``: re-analysing a finished run reports
        what its spec asked (an unknown threshold path fails that threshold, not the run)."""
        root, data, overridden = parse_with_overrides(text, origin, overrides)
        data = own_kind(data, self.kind, origin)
        try:
            words = SpecWords(self.what, self.keys, self.template, self.docs)
            spec = validate_spec(self.model, data, root, origin, overridden, words)
        except SpecError:
            other = other_family(data, self.kind, self.what, origin)
            if other is None:
                raise
            raise other from None
        problem = self.check(spec, data) if checked and self.check is not None else None
        if problem is not None:
            raise problem_error(problem, root, origin, overridden)
        return spec, data

    def load(
        self, path: str | Path, overrides: list[str] | None = None
    ) -> tuple[M, dict[str, Any]]:
        """Load a spec file."""
        return self.load_text(read_spec_text(path), str(path), overrides)
