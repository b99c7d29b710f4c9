"""is_loopback: the one check both servers (dashboard, reference grid) use before binding."""

from __future__ import annotations

import pytest

from gridbench.errors import SpecError
from gridbench.jobflow.reference.server import check_host
from gridbench.net import is_loopback


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", "127.1.2.3", "::1", "[::1]"])
def test_loopback(host: str) -> None:
    assert is_loopback(host)
    check_host(host, allow_remote=False)  # the reference grid accepts it


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.1", "[2001:db8::1]", "example.org", ""])
def test_not_loopback(host: str) -> None:
    assert not is_loopback(host)
    with pytest.raises(SpecError, match="non-loopback"):
        check_host(host, allow_remote=False)
    check_host(host, allow_remote=True)
