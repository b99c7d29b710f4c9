"""The command line is declared (gridbench.commandline): every command's function is
named as ``"module:function"``; each name here must lead to a function that takes the
parsed arguments and the Ui, and what a declaration spells again (the reference grid's
presets and tiers, compare's default sample cap) must agree with the code it stands for."""

from __future__ import annotations

import argparse
import importlib
import inspect
from collections.abc import Iterator

from gridbench.cli.declared import build_parser
from gridbench.commandline import Command, Commands, Handler, arg
from gridbench.family import CommandSet


def parsers(p: argparse.ArgumentParser, words: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    yield words
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from parsers(sub, (*words, name))


def parser_at(words: tuple[str, ...]) -> argparse.ArgumentParser:
    p = build_parser()
    for w in words:
        (sub,) = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
        p = sub.choices[w]
    return p


def test_every_command_names_a_function_that_exists() -> None:
    top = build_parser()
    leaves = 0
    for words in parsers(top):
        p = top
        for w in words:
            (sub,) = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
            p = sub.choices[w]
        handler = p.get_default("func")
        if not isinstance(handler, Handler):
            continue  # a command of actions, or a plugin's own
        leaves += 1
        module, _, name = handler.target.partition(":")
        function = getattr(importlib.import_module(module), name)
        params = list(inspect.signature(function).parameters)
        assert len(params) >= 2, (words, handler.target)  # (args, ui)
    assert leaves >= 35


def test_a_declaration_is_a_command_set() -> None:
    declared = Commands("x", (Command("x", help="h", run="m:f", args=(arg("--y"),)),))
    assert isinstance(declared, CommandSet)
    from gridbench.model import cli, commands

    assert commands.COMMANDS is cli.COMMANDS  # an install with the old entry point still works


def test_the_reference_grid_s_options_are_the_grid_s() -> None:
    from gridbench.jobflow.reference.jobs import TIERS
    from gridbench.jobflow.reference.presets import DEFAULT_PRESET, preset_names
    from gridbench.jobflow.reference.server import DEFAULT_HOST, DEFAULT_PORT

    p = parser_at(("reference", "serve"))
    options = {a.dest: a for a in p._actions}
    assert list(options["preset"].choices or ()) == preset_names()
    assert options["preset"].default == DEFAULT_PRESET
    assert list(options["tier"].choices or ()) == list(TIERS)
    assert (options["host"].default, options["port"].default) == (DEFAULT_HOST, DEFAULT_PORT)
    demo = {a.dest: a for a in parser_at(("demo",))._actions}
    assert list(demo["policy"].choices or ()) == preset_names()


def test_compare_s_sample_cap_is_the_comparison_s() -> None:
    from gridbench.compare.model import Settings

    for command in ("compare", "history"):
        options = {a.dest: a for a in parser_at((command,))._actions}
        assert options["max_samples"].default == Settings().max_samples
