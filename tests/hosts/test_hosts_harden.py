"""The adversarial pass over what this turn adds to hosts (issue 41): ``hosts check --write``
rewrites a user's inventory, so a link planted beside it must never be written through."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gridbench.errors import GridbenchError
from gridbench.hosts.check import HostCheck, write_offsets
from gridbench.hosts.inventory import load_inventory

INVENTORY = "hosts:\n  h1: {address: 127.0.0.1}  # the first host\n"


def test_a_link_planted_at_the_temporary_name_is_not_written_through(tmp_path: Path) -> None:
    inv = tmp_path / "inventory.yaml"
    inv.write_text(INVENTORY)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    # the name the writer once used: predictable from the pid
    (tmp_path / f".{inv.name}.{os.getpid()}.tmp").symlink_to(victim)
    assert write_offsets(inv, [HostCheck("h1", "127.0.0.1", offset_ms=1.2346)]) == ["h1"]
    assert victim.read_text() == "keep me\n"
    assert not inv.is_symlink()
    assert load_inventory(inv).hosts["h1"].clock_offset_ms == pytest.approx(1.235)
    assert "# the first host" in inv.read_text()  # comments kept


def test_an_inventory_that_is_a_link_is_refused_not_replaced(tmp_path: Path) -> None:
    real = tmp_path / "real.yaml"
    real.write_text(INVENTORY)
    inv = tmp_path / "inventory.yaml"
    inv.symlink_to(real)
    with pytest.raises(GridbenchError, match="symbolic link"):
        write_offsets(inv, [HostCheck("h1", "127.0.0.1", offset_ms=2.0)])
    assert inv.is_symlink() and real.read_text() == INVENTORY
