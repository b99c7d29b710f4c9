"""Command sets that are no family (``gridbench.commands``): the what-if model's commands
come through that seam, and so does a plugin's, from outside the tree; a set that cannot
load is one clear error, never a traceback."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from conftest import BIN, cli_env

HELLO = """\
from gridbench.family import Ui


class Hello:
    name = "hello"

    def add_commands(self, sub, ui: Ui) -> None:
        p = sub.add_parser("hello", help="say hello from a plugin command set")
        p.add_argument("who")
        p.set_defaults(func=lambda args: print(f"hello {args.who}") or 0)


COMMANDS = Hello()
"""


def plugin(tmp: Path, target: str) -> Path:
    """A package with one ``gridbench.commands`` entry point, importable from ``tmp``."""
    (tmp / "gridbench_hello.py").write_text(HELLO)
    info = tmp / "gridbench_hello-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: gridbench-hello\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[gridbench.commands]\nhello = {target}\n")
    return tmp


def gb(*args: str, path: Path | None = None, results: Path) -> subprocess.CompletedProcess[str]:
    env = cli_env(results)
    if path is not None:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(path), env.get("PYTHONPATH")) if p)
    return subprocess.run([str(BIN), *args], env=env, capture_output=True, text=True, timeout=120)


def test_model_commands_come_through_the_command_set_seam(tmp_path: Path) -> None:
    from gridbench.family import command_sets

    assert "model" in [c.name for c in command_sets()]
    p = gb("model", "--help", results=tmp_path / "r")
    assert p.returncode == 0 and "fit" in p.stdout and "predict" in p.stdout, p.stderr


def test_a_plugin_command_set_adds_its_command(tmp_path: Path) -> None:
    (tmp_path / "plugin").mkdir()
    path = plugin(tmp_path / "plugin", "gridbench_hello:COMMANDS")
    p = gb("hello", "world", path=path, results=tmp_path / "r")
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.strip() == "hello world"
    assert "hello" in gb("--help", path=path, results=tmp_path / "r").stdout


def test_a_broken_command_set_is_one_error(tmp_path: Path) -> None:
    (tmp_path / "plugin").mkdir()
    path = plugin(tmp_path / "plugin", "gridbench_hello:MISSING")
    p = gb("--help", path=path, results=tmp_path / "r")
    assert p.returncode == 2, p.stdout + p.stderr
    assert "Traceback" not in p.stderr
    assert "command set 'hello' cannot be loaded" in p.stderr
    assert "gridbench.commands:hello" in p.stderr
