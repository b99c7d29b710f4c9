"""Loading an ``io`` spec with errors that name the file, line, field and fix (the shared
loader of :mod:`gridbench.specload`, as every family uses)."""

from __future__ import annotations

from gridbench.io.model import IoSpec
from gridbench.io.threshold_paths import check_io_spec
from gridbench.specload import SpecLoader

LOADER = SpecLoader(
    IoSpec,
    what="an io spec",
    keys="name:, targets:, ...",
    template="examples/io-local-quick.yaml",
    docs="docs/io.md",
    kind="io",
    check=check_io_spec,
)
load_io_spec_text = LOADER.load_text
load_io_spec = LOADER.load
