"""The Bonnie profile on bonnie++: sequential output per char and block, rewrite,
sequential input per char and block, each with CPU% (the seed's ``Bonnie -s 2047``); with
``files`` (``-n``), Bonnie's file tests too: files created, stat'ed and removed per
second, in order and at random, each with CPU%.

bonnie++ prints one CSV line with ``-q``. ``+++++`` means the phase took under 500 ms,
too fast for bonnie++ to time: it becomes ``None`` with that reason, never a number.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

from gridbench.errors import BackendError, ResultsError
from gridbench.io.model import BonnieSpec

#: (column, CSV index of kB/s; CPU% follows it) in the seed's table order.
COLUMNS: tuple[tuple[str, int], ...] = (
    ("output_char", 9),
    ("output_block", 11),
    ("rewrite", 13),
    ("input_char", 15),
    ("input_block", 17),
)
LABEL = {
    "output_char": "Output per char",
    "output_block": "Output block",
    "rewrite": "Rewrite",
    "input_char": "Input per char",
    "input_block": "Input block",
}
#: The file tests (``-n``): (column, CSV index of files/s; CPU% follows it).
FILE_COLUMNS: tuple[tuple[str, int], ...] = (
    ("seq_create", 26),
    ("seq_stat", 28),
    ("seq_delete", 30),
    ("ran_create", 32),
    ("ran_stat", 34),
    ("ran_delete", 36),
)
LABEL |= {
    "seq_create": "Sequential create",
    "seq_stat": "Sequential stat",
    "seq_delete": "Sequential delete",
    "ran_create": "Random create",
    "ran_stat": "Random stat",
    "ran_delete": "Random delete",
}
#: The key of a column's rate: kB/s for the throughput phases, files/s for the file tests.
RATE_KEY: dict[str, str] = {c: "kbps" for c, _ in COLUMNS} | {c: "per_s" for c, _ in FILE_COLUMNS}
TOO_FAST = "+++++"


def bonnie_argv(spec: BonnieSpec, workdir: Path, binary: str = "bonnie++") -> list[str]:
    """bonnie++ with file size and RAM in MiB, no small-file tests, CSV output.

    No -D (O_DIRECT) even in direct mode: bonnie++ 2.00a's per-char phases then fail
    ("Can't write() - disk full?"), and they are half of the seed's table. The cache is
    defeated the way bonnie++ intends it: a file at least twice RAM (see ``ram_note``).
    ``-n FILES:SIZE:SIZE:DIRS`` runs the file tests when ``files`` is set; ``-n 0`` skips them."""
    size_mib = max(1, spec.size // 2**20)
    ram_mib = max(1, (spec.ram if spec.ram is not None else spec.size // 2) // 2**20)
    return [
        binary,
        "-d",
        str(workdir),
        "-s",
        str(size_mib),
        "-r",
        str(ram_mib),
        "-n",
        _files_arg(spec),
        "-u",
        spec.user,
        "-q",
        "-m",
        "gridbench",
    ]


def _files_arg(spec: BonnieSpec) -> str:
    if not spec.files:
        return "0"
    return f"{spec.files}:{spec.file_size}:{spec.file_size}:{spec.dirs}"


def ram_note(spec: BonnieSpec, ram: int) -> str | None:
    """A note when the bonnie++ file is smaller than twice the real RAM: bonnie++ is told a
    smaller RAM (-r) so it runs, but its figures may then come from the page cache."""
    if spec.size >= 2 * ram:
        return None
    return (
        f"bonnie++ file ({spec.size / 2**20:.0f} MiB) is smaller than twice RAM "
        f"({ram / 2**30:.1f} GiB): its figures may come from the page cache"
    )


def _cell(fields: list[str], i: int) -> float | None:
    v = fields[i].strip() if i < len(fields) else ""
    if not v or v.startswith("+"):
        return None
    try:
        return float(v)
    except ValueError:
        return None


def parse_bonnie_csv(text: str, where: str) -> dict[str, Any]:
    """Figures from bonnie++'s CSV line: ``{column: {kbps, cpu_pct, note}}``; the file
    tests' columns (when bonnie++ ran them) hold ``per_s`` (files per second) for ``kbps``."""
    lines = [ln for ln in text.strip().splitlines() if ln.count(",") >= 20]
    if not lines:
        raise ResultsError(
            "bonnie++ printed no CSV result line",
            where=where,
            fix="run the command by hand; the size may be too small for its RAM setting",
        )
    fields = lines[-1].split(",")
    if not fields[0].startswith("1.9"):
        raise ResultsError(
            f"unknown bonnie++ CSV format {fields[0]!r} (expected 1.9x)",
            where=where,
            fix="use bonnie++ 1.98 or 2.0x (Debian's)",
        )
    out: dict[str, Any] = {"version": fields[1], "file_size": fields[5]}
    files_run = len(fields) > 21 and fields[21].strip() not in ("", "0")
    for name, i in (*COLUMNS, *(FILE_COLUMNS if files_run else ())):
        raw = fields[i].strip() if i < len(fields) else ""
        out[name] = {
            RATE_KEY[name]: _cell(fields, i),
            "cpu_pct": _cell(fields, i + 1),
            "note": "too fast to time (bonnie++ printed +++++)" if raw.startswith("+") else "",
        }
    return out


def run_bonnie(argv: list[str], timeout: float | None = None) -> str:
    """Run bonnie++ (no shell) and return its stdout; BackendError naming the command."""
    cmd = shlex.join(argv)
    if shutil.which(argv[0]) is None:
        raise BackendError(
            "bonnie++ not found", where=cmd, fix="install it: apt-get install bonnie++"
        )
    try:
        proc = subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout, check=False, errors="replace"
        )
    except subprocess.TimeoutExpired:
        raise BackendError(f"bonnie++ did not finish within {timeout} s", where=cmd) from None
    if proc.returncode != 0:
        said = " | ".join(proc.stderr.strip().splitlines()[-3:])
        raise BackendError(
            f"bonnie++ failed (exit {proc.returncode}): {said or 'no message'}",
            where=cmd,
            fix="check the target is writable and has room for the file size",
        )
    return proc.stdout
