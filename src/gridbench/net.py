"""Network helpers shared by the servers gridbench starts (the dashboard, the reference grid)."""

from __future__ import annotations

import ipaddress


def is_loopback(host: str) -> bool:
    """True for ``localhost``, 127.0.0.0/8 and ::1, with or without URL brackets (``[::1]``):
    a server bound there is reachable from this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
