"""Options of the command backend: preset merging and compilation.

``backend.options`` (after merging the preset, if any) is validated with the pydantic
models of :mod:`.option_models`, then compiled into :class:`CommandConfig`: parsed argv
templates with their placeholders checked per operation, compiled regular expressions, the
native -> gridbench state map and the server stamp plan (:func:`.serverside.compile_stamps`).
Every problem is a :class:`SpecError` naming the option and the fix.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gridbench.errors import SpecError
from gridbench.jobflow.backends.base import JobState
from gridbench.jobflow.backends.command import presets as command_presets
from gridbench.jobflow.backends.command.option_models import (
    CommandOptions,
    OpOptions,
    OutputOptions,
    StatusOptions,
)
from gridbench.jobflow.backends.command.serverside import compile_stamps
from gridbench.jobflow.backends.command.template import (
    LIST_PLACEHOLDERS,
    ArgvTemplate,
    TemplateError,
    TextTemplate,
)
from gridbench.jobflow.backends.options import parse_options
from gridbench.jobflow.events.stamps.declare import StampPlan

OPS = (
    "init",
    "upload",
    "submit",
    "status",
    "finished",
    "cancel",
    "output",
    "queue",
    "download",
)
_DICT_KEYS = ("vars", "env", "states", "operations")
#: a named operation's name (``operations:``): the probe spells it ``op:<name>``
OPERATION_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,63}")

# Placeholders every template may use, and the extra ones of each operation.
COMMON = frozenset({"python", "workdir", "rdir"})
SUBMIT_NAMES = frozenset(
    {
        "name",
        "user",
        "account",
        "credential_file",
        "credential_env",
        "command",
        "command_line",
        "executable",
        "arguments",
        "executable_json",
        "arguments_json",
        "tasks",  # job.tasks (1 when unset)
        "nodes",  # job.nodes (1 when unset)
        # what the job stages (spec job.input_size ... output_files; 0 when unset): a
        # template that makes or fetches that much data, timed by `download`
        "input_size",
        "input_files",
        "output_size",
        "output_files",
    }
)
JOB_NAMES = frozenset({"id", "name"})


@dataclass(frozen=True, slots=True)
class OpConfig:
    """One compiled operation."""

    name: str
    argv: ArgvTemplate | None
    stdin: TextTemplate | None = None
    read: TextTemplate | None = None
    timeout_s: float = 120.0
    ok_codes: frozenset[int] = frozenset({0})
    stream: str = "stdout"
    mode: str = "none"  # batch ({ids}) | single ({id}) | all (no id) | none
    pattern: re.Pattern[str] | None = None
    scope: str = "line"
    ignore: re.Pattern[str] | None = None
    unknown: re.Pattern[str] | None = None
    id_key: re.Pattern[str] | None = None
    chunk: int = 500
    parallel: int = 8
    missing: JobState | None = None
    names: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class CommandConfig:
    """Everything the backend needs, checked."""

    ops: dict[str, OpConfig]
    values: dict[str, str]  # user variables (scalars)
    lists: dict[str, list[str]]  # user variables (lists)
    states: dict[str, JobState]
    env: dict[str, str]
    workdir: str | None
    rdir: str | None
    max_processes: int
    check_executables: bool
    preset: command_presets.PresetInfo | None = None
    raw: dict[str, Any] = field(default_factory=dict)
    named: dict[str, OpConfig] = field(default_factory=dict)  # ``operations:`` by name
    stamps: StampPlan | None = None  # server stamp sources
    #: the stamp sources' paths and globs with the variables filled in
    stamp_locations: tuple[str, ...] = ()


def merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``over`` on top of ``base``: operations and vars/env/states merge key by key.

    An operation given as a list replaces only its argv; ``null`` removes it.
    """
    out = dict(base)
    for k, v in over.items():
        b = out.get(k)
        if k in OPS and isinstance(b, dict) and isinstance(v, list):
            out[k] = {**b, "argv": v}
        elif (k in OPS or k in _DICT_KEYS) and isinstance(b, dict) and isinstance(v, dict):
            out[k] = {**b, **v}
        else:
            out[k] = v
    return out


def _fail(op: str, message: str, fix: str) -> SpecError:
    return SpecError(message, where=f"backend.options.{op}", fix=fix)


def _groups(p: re.Pattern[str]) -> set[str]:
    return set(p.groupindex)


def _compile_op(
    name: str, o: OpOptions, allowed: set[str], lists: set[str], default_timeout: float
) -> OpConfig:
    ids_join = getattr(o, "ids_join", None)
    joins = {"ids": ids_join} if ids_join is not None else {}
    argv = None
    stdin = read = None
    try:
        if o.argv is not None:
            argv = ArgvTemplate.parse(o.argv, allowed, lists, joins)
        scalars = allowed - lists
        if o.stdin is not None:
            stdin = TextTemplate.parse(o.stdin, scalars | set(joins), joins)
        if isinstance(o, OutputOptions) and o.read is not None:
            read = TextTemplate.parse(o.read, scalars)
    except TemplateError as exc:
        raise _fail(name, str(exc), "fix the template (see docs/backends.md, command)") from None
    used = set().union(*(t.names() for t in (argv, stdin, read) if t is not None))
    if "id" in used and "ids" in used:
        raise _fail(name, "uses both {id} and {ids}", "use {ids} (one call) or {id} (per job)")
    mode = "batch" if "ids" in used else "single" if "id" in used else "all"
    pat = getattr(o, "pattern", None)
    status_o = o if isinstance(o, StatusOptions) else None
    return OpConfig(
        name,
        argv,
        stdin,
        read,
        o.timeout_s or default_timeout,
        frozenset(o.ok_codes),
        o.stream,
        mode,
        re.compile(pat, re.MULTILINE) if pat else None,
        status_o.scope if status_o else "line",
        re.compile(status_o.ignore) if status_o and status_o.ignore else None,
        re.compile(status_o.unknown_pattern) if status_o and status_o.unknown_pattern else None,
        re.compile(status_o.id_key) if status_o and status_o.id_key else None,
        getattr(o, "chunk", 500),
        getattr(o, "parallel", 8),
        JobState(status_o.missing) if status_o and status_o.missing else None,
        frozenset(used),
    )


def _check_ops(ops: dict[str, OpConfig]) -> None:
    st = ops["status"]
    assert st.pattern is not None
    if st.mode in ("batch", "all") and not {"id", "state"} <= _groups(st.pattern):
        raise _fail(
            "status.pattern",
            f"a status template that covers many jobs needs a pattern with named groups "
            f"'id' and 'state'; {st.pattern.pattern!r} has "
            f"{sorted(_groups(st.pattern)) or 'none'}",
            r"e.g. pattern: '^\s*(?P<id>\S+)\s+(?P<state>\S+)'",
        )
    sub = ops["submit"]
    if sub.argv is not None and sub.mode != "all":
        raise _fail("submit", "submit cannot use {id}/{ids}", "use {name} for gridbench's job id")
    fin = ops.get("finished")
    if fin is not None:
        assert fin.pattern is not None
        if fin.mode != "single":
            raise _fail("finished", "the finished template must use {id}", "add '{id}' to argv")
        if not {"state", "exit_code"} & _groups(fin.pattern):
            raise _fail(
                "finished.pattern",
                "needs a named group 'state' or 'exit_code'",
                r"e.g. pattern: '^exit_status\s+(?P<exit_code>\d+)'",
            )
    up = ops.get("upload")
    if up is not None and "upload_dir" not in up.names:
        raise _fail(
            "upload",
            "the upload template does not use {upload_dir}, where gridbench writes the "
            "job's input, so nothing would be uploaded",
            "e.g. argv: [scp, -r, '{upload_dir}', 'host:inputs/{name}']",
        )
    can = ops.get("cancel")
    if can is not None and can.mode == "all":
        raise _fail(
            "cancel",
            "the cancel template names no job ({id} or {ids})",
            "cancel by id: gridbench never cancels by a user-wide pattern",
        )
    out = ops.get("output")
    if out is not None and (out.mode == "batch" or not {"id", "name"} & out.names):
        raise _fail(
            "output", "the output template must name one job", "use {id} or {name} in argv or read"
        )
    for name in ("init", "queue"):
        op = ops.get(name)
        if op is not None and op.mode != "all":
            raise _fail(name, f"the {name} template cannot use {{id}}/{{ids}}", "remove them")


def compile_options(options: Mapping[str, Any]) -> CommandConfig:
    """Merge the preset, validate and compile; raise SpecError naming the bad option."""
    raw = dict(options)
    preset_info = None
    if raw.get("preset"):
        name = str(raw["preset"])
        base = command_presets.load(name)
        preset_info = command_presets.PresetInfo(
            name,
            str(base.get("description", "")).strip(),
            bool(base.get("tested")),
            str(base.get("written_for", "")),
        )
        base = {k: v for k, v in base.items() if k not in command_presets.META_KEYS}
        raw = merge(base, raw)
    elif "submit" not in raw or "status" not in raw:
        raise SpecError(
            "the command backend needs a preset or submit and status templates",
            where="backend.options",
            fix=f"set preset: (one of {', '.join(command_presets.names())}) or give submit: "
            "and status: (docs/backends.md, command)",
        )
    opts = parse_options(CommandOptions, raw, "command")
    values: dict[str, str] = {}
    lists: dict[str, list[str]] = {}
    builtin = COMMON | SUBMIT_NAMES | JOB_NAMES | LIST_PLACEHOLDERS
    for k, v in opts.vars.items():
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k):
            raise _fail(f"vars.{k}", "is not a valid placeholder name", "use letters, digits, _")
        if k in builtin:
            raise _fail(f"vars.{k}", f"{{{k}}} is a built-in placeholder", "rename the variable")
        if v is None:
            what = f"preset {opts.preset!r}" if opts.preset else "this configuration"
            raise _fail(f"vars.{k}", f"{what} needs a value for {{{k}}}", f"set vars.{k}")
        if "\x00" in (v if isinstance(v, str) else "".join(v)):
            raise _fail(f"vars.{k}", "contains a NUL byte", "remove it")
        if isinstance(v, list):
            lists[k] = v
        else:
            values[k] = v
    user = set(values) | set(lists)
    list_names = set(lists) | set(LIST_PLACEHOLDERS)
    scopes: dict[str, set[str]] = {
        "init": set(COMMON),
        "queue": set(COMMON),
        "submit": set(COMMON | SUBMIT_NAMES),
        "status": set(COMMON | {"id", "ids"}),
        "finished": set(COMMON | JOB_NAMES),
        "cancel": set(COMMON | {"id", "ids"}),
        "output": set(COMMON | JOB_NAMES),
        "upload": set(COMMON | SUBMIT_NAMES | {"upload_dir"}) - {"command"},
        "download": set(COMMON | JOB_NAMES | {"download_dir"}),
    }
    ops: dict[str, OpConfig] = {}
    for name in OPS:
        o = getattr(opts, name)
        if o is not None:
            ops[name] = _compile_op(name, o, scopes[name] | user, list_names, opts.timeout_s)
    _check_ops(ops)
    named = _compile_named(opts, set(COMMON) | user, list_names)
    plan, locations = compile_stamps(opts.stamps, values)
    return CommandConfig(
        ops=ops,
        values=values,
        lists=lists,
        states={k: JobState(v) for k, v in opts.states.items()},
        env=dict(opts.env),
        workdir=opts.workdir,
        rdir=opts.rdir,
        max_processes=opts.max_processes,
        check_executables=opts.check_executables,
        preset=preset_info,
        raw=opts.model_dump(mode="json", exclude_none=True),
        named=named,
        stamps=plan,
        stamp_locations=locations,
    )


def _compile_named(opts: CommandOptions, allowed: set[str], lists: set[str]) -> dict[str, OpConfig]:
    """The ``operations:`` templates: a name, an argv naming no job (the probe times each
    call on its own)."""
    out: dict[str, OpConfig] = {}
    for name, o in opts.operations.items():
        where = f"operations.{name}"
        if not OPERATION_NAME.fullmatch(name):
            raise _fail(where, f"{name!r} is not an operation name", "use letters, digits, _ . -")
        op = _compile_op(where, o, allowed, lists, opts.timeout_s)
        if op.mode != "all":
            raise _fail(where, "a named operation cannot use {id}/{ids}", "remove them")
        out[name] = op  # named operations.<name> in errors and client-cost records
    return out
