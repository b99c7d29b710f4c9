"""Distance on a path to a host, through Toxiproxy (docs/hosts.md, "Latency paths").

This kernel has no netem, so a latency is added where TCP passes a proxy: Toxiproxy's
``latency`` toxic on each direction, half the round trip each way. The lab sets one up for
``--latency HOST:DELAY`` and writes it into the inventory as the host's ``latency:``; a
family then opens a proxy in front of any port of that host (net's ``remote`` environment,
for its peers and for the native floor on the same path), and closes it afterwards.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from gridbench.errors import GridbenchError

#: seconds a call to Toxiproxy's API may take
API_TIMEOUT_S = 10.0


class HostLatency(BaseModel):
    """A Toxiproxy that reaches a host's ports with ``delay_ms`` added to each round trip."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: Toxiproxy's API, ``http://ADDR:PORT``
    api: Annotated[str, StringConstraints(pattern=r"^https?://[A-Za-z0-9_.:\[\]-]+$")]
    #: the address its proxies listen on (reachable from the controller)
    listen: Annotated[str, StringConstraints(min_length=1, max_length=253)]
    delay_ms: float = Field(gt=0, le=60_000)


def _call(method: str, url: str, body: dict[str, Any] | None = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(
        url, data=data, headers={"Content-Type": "application/json"}, method=method
    )
    try:
        with urllib.request.urlopen(req, timeout=API_TIMEOUT_S) as r:
            text = r.read(1 << 20)
    except (OSError, urllib.error.HTTPError) as exc:
        raise GridbenchError(
            f"toxiproxy refused {method} {url}: {exc}",
            where="latency path",
            fix="check that toxiproxy-server runs there (a lab's: 'gridbench lab status')",
        ) from None
    try:
        return json.loads(text) if text else None
    except ValueError:
        raise GridbenchError(
            f"toxiproxy's answer to {method} {url} is not JSON", where="latency path"
        ) from None


def open_proxy(api: str, name: str, listen: str, upstream: str, delay_ms: float) -> str:
    """A proxy ``name`` on ``listen`` (``ADDR:PORT``; port 0: any) to ``upstream`` that adds
    ``delay_ms`` to each round trip; the ``ADDR:PORT`` it listens on."""
    made = _call(
        "POST",
        f"{api}/proxies",
        {"name": name, "listen": listen, "upstream": upstream, "enabled": True},
    )
    half = int(delay_ms / 2)
    for stream in ("upstream", "downstream"):
        _call(
            "POST",
            f"{api}/proxies/{name}/toxics",
            {
                "name": f"latency-{stream}",
                "type": "latency",
                "stream": stream,
                "attributes": {"latency": half, "jitter": 0},
            },
        )
    got = made.get("listen") if isinstance(made, dict) else None
    if not isinstance(got, str) or ":" not in got:
        raise GridbenchError(
            f"toxiproxy did not say where proxy {name} listens", where="latency path"
        )
    return got


def close_proxy(api: str, name: str) -> None:
    """Remove proxy ``name`` (gone already: nothing to do)."""
    try:
        _call("DELETE", f"{api}/proxies/{name}")
    except GridbenchError as exc:
        if "404" not in exc.message:
            raise


def open_path(path: HostLatency, name: str, upstream: str) -> str:
    """A proxy on ``path`` (any free port) to ``upstream``; where it listens."""
    return open_proxy(path.api, name, f"{path.listen}:0", upstream, path.delay_ms)
