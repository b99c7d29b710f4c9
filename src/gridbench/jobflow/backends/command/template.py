"""Argv templates with placeholders, substituted without a shell.

A template is a list of argv items. ``{name}`` inside an item is replaced by a value *inside
that same item*, so whatever the value holds (spaces, ``;``, ``$()``, backquotes, ``|``,
newlines) it stays one inert argument: the list goes straight to ``execve``.

Some values are lists (``{ids}``, ``{command}``, list-valued user variables). As a whole
item, a list expands to one item per element. Inside a longer item it must be joined:
``{ids}`` with the template's ``ids_join`` separator; other lists cannot be embedded.

``{{`` and ``}}`` are literal braces; a brace that does not open ``{identifier}`` is kept
as it is, so arguments such as ``%i %T`` or ``{"a": 1}`` need no escaping.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

_TOKEN = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")

# Placeholders whose value is a list.
LIST_PLACEHOLDERS = frozenset({"ids", "command"})


@dataclass(frozen=True, slots=True)
class Placeholder:
    """A ``{name}`` inside an argv item."""

    name: str


Part = str | Placeholder


class TemplateError(ValueError):
    """A template is malformed; the message says what and how to fix it."""


def parse_item(item: str) -> tuple[Part, ...]:
    """Split one argv item into literal text and placeholders."""
    parts: list[Part] = []
    buf: list[str] = []
    pos = 0
    for m in _TOKEN.finditer(item):
        buf.append(item[pos : m.start()])
        tok = m.group(0)
        if tok == "{{":
            buf.append("{")
        elif tok == "}}":
            buf.append("}")
        else:
            if buf and "".join(buf):
                parts.append("".join(buf))
            buf = []
            parts.append(Placeholder(m.group(1)))
        pos = m.end()
    buf.append(item[pos:])
    if "".join(buf):
        parts.append("".join(buf))
    return tuple(parts)


def placeholders(item: str) -> set[str]:
    """The placeholder names used in one item."""
    return {p.name for p in parse_item(item) if isinstance(p, Placeholder)}


def _check_value(name: str, value: str) -> str:
    if "\x00" in value:
        raise TemplateError(f"the value of {{{name}}} contains a NUL byte")
    return value


def render_item(
    parts: Sequence[Part],
    values: Mapping[str, str],
    lists: Mapping[str, Sequence[str]],
    joins: Mapping[str, str],
) -> str:
    """One item as a single string; list values are joined by ``joins[name]``."""
    out: list[str] = []
    for p in parts:
        if isinstance(p, str):
            out.append(p)
        elif p.name in values:
            out.append(_check_value(p.name, values[p.name]))
        elif p.name in lists and p.name in joins:
            out.append(joins[p.name].join(_check_value(p.name, v) for v in lists[p.name]))
        else:
            raise TemplateError(f"no value for {{{p.name}}}")
    return "".join(out)


@dataclass(frozen=True, slots=True)
class ArgvTemplate:
    """A parsed argv template; ``render`` gives the argv of one call."""

    raw: tuple[str, ...]
    items: tuple[tuple[Part, ...], ...]
    joins: Mapping[str, str]

    @classmethod
    def parse(
        cls,
        raw: Sequence[str],
        allowed: set[str],
        lists: set[str],
        joins: Mapping[str, str] | None = None,
    ) -> ArgvTemplate:
        """Parse and check ``raw`` against the placeholder names ``allowed`` here.

        ``lists`` are the allowed names whose values are lists; ``joins`` maps the list
        names that may be embedded in a longer item to their separator.
        """
        joins = dict(joins or {})
        if not raw:
            raise TemplateError("the argv list is empty")
        items = tuple(parse_item(s) for s in raw)
        for n, (text, parts) in enumerate(zip(raw, items, strict=True)):
            for p in parts:
                if not isinstance(p, Placeholder):
                    continue
                if p.name not in allowed:
                    known = ", ".join("{" + a + "}" for a in sorted(allowed))
                    raise TemplateError(
                        f"unknown placeholder {{{p.name}}} in item {n} ({text!r}); "
                        f"available here: {known}"
                    )
                whole = len(parts) == 1
                if p.name in lists and not whole and p.name not in joins:
                    hint = (
                        "set ids_join (e.g. ',') to join the ids into this one item, or make "
                        "'{ids}' an item of its own"
                        if p.name == "ids"
                        else f"make '{{{p.name}}}' an item of its own"
                    )
                    raise TemplateError(
                        f"list placeholder {{{p.name}}} is embedded in item {n} ({text!r}): " + hint
                    )
                if n == 0 and p.name in lists and p.name not in joins:
                    raise TemplateError(f"the program (item 0) cannot be the list {{{p.name}}}")
        if not raw[0]:
            raise TemplateError("the program (item 0) is empty")
        return cls(tuple(raw), items, joins)

    def names(self) -> set[str]:
        """Every placeholder name this template uses."""
        return {p.name for parts in self.items for p in parts if isinstance(p, Placeholder)}

    def program(self, values: Mapping[str, str]) -> str:
        """Item 0 (the program) alone; raise TemplateError if it needs a missing value."""
        return render_item(self.items[0], values, {}, {})

    def render(
        self, values: Mapping[str, str], lists: Mapping[str, Sequence[str]] | None = None
    ) -> list[str]:
        """The argv for one call: every value stays inside its own item."""
        lists = lists or {}
        argv: list[str] = []
        for parts in self.items:
            if (
                len(parts) == 1
                and isinstance(parts[0], Placeholder)
                and parts[0].name in lists
                and parts[0].name not in self.joins
            ):
                name = parts[0].name
                argv.extend(_check_value(name, v) for v in lists[name])
            else:
                argv.append(render_item(parts, values, lists, self.joins))
        if not argv or not argv[0]:
            raise TemplateError("the rendered program (item 0) is empty")
        return argv


@dataclass(frozen=True, slots=True)
class TextTemplate:
    """A single-string template (stdin text, a file path); lists are joined."""

    raw: str
    parts: tuple[Part, ...]
    joins: Mapping[str, str]

    @classmethod
    def parse(
        cls, raw: str, allowed: set[str], joins: Mapping[str, str] | None = None
    ) -> TextTemplate:
        parts = parse_item(raw)
        for p in parts:
            if isinstance(p, Placeholder) and p.name not in allowed:
                known = ", ".join("{" + a + "}" for a in sorted(allowed))
                raise TemplateError(f"unknown placeholder {{{p.name}}}; available here: {known}")
        return cls(raw, parts, dict(joins or {}))

    def names(self) -> set[str]:
        return {p.name for p in self.parts if isinstance(p, Placeholder)}

    def render(
        self, values: Mapping[str, str], lists: Mapping[str, Sequence[str]] | None = None
    ) -> str:
        return render_item(self.parts, values, lists or {}, self.joins)
