"""Loading a ``net`` spec with errors that name the file, line, field and fix (the shared
loader of :mod:`gridbench.specload`, as every family uses)."""

from __future__ import annotations

from gridbench.messaging.model import NetSpec
from gridbench.messaging.threshold_paths import check_net_spec
from gridbench.specload import SpecLoader

LOADER = SpecLoader(
    NetSpec,
    what="a net spec",
    keys="name:, environments:, pingpong:, echo:, burst:, transfer:, floor:",
    template="examples/net-loopback-quick.yaml",
    docs="docs/net.md",
    kind="net",
    check=check_net_spec,
)
load_net_spec_text = LOADER.load_text
load_net_spec = LOADER.load
