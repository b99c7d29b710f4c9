"""Every count of work in a spec has an upper bound: 10^30 repetitions once planned an
"about 1.96e27 h" run with exit 0, and a probe burst of 10^14 threads would have started
that many concurrent calls. One case per bounded field, just past and at its limit."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gridbench.errors import SpecError
from gridbench.io.load import load_io_spec_text
from gridbench.jobflow.spec.load import load_spec_text
from gridbench.messaging.load import load_net_spec_text

EX = Path(__file__).resolve().parents[2] / "examples"
Loader = Callable[..., tuple[Any, dict[str, Any]]]


@pytest.mark.parametrize(
    ("loader", "example", "key", "limit"),
    [
        (load_io_spec_text, "io-seed-nfs.yaml", "http.repetitions", 1000),
        (load_net_spec_text, "net-loopback-quick.yaml", "echo.client_calls", 1_000_000),
        (load_net_spec_text, "net-loopback-quick.yaml", "pingpong.warmup", 100_000),
        (load_net_spec_text, "net-loopback-quick.yaml", "floor.factor", 1000),
        (load_spec_text, "probe-submit.yaml", "load.count", 1_000_000),
        (load_spec_text, "probe-submit.yaml", "load.burst.requests", 1_000_000),
        (load_spec_text, "batch-local.yaml", "load.submitters", 10_000),
    ],
)
def test_a_count_past_its_limit_is_a_field_error(
    loader: Loader, example: str, key: str, limit: int
) -> None:
    text = (EX / example).read_text(encoding="utf-8")
    with pytest.raises(SpecError, match=rf"--set {key}: .*less than or equal to {limit}"):
        loader(text, example, [f"{key}={limit + 1}"])
    with pytest.raises(SpecError, match=rf"--set {key}: "):
        loader(text, example, [f"{key}={10**30}"])
    spec, _ = loader(text, example, [f"{key}={limit}"])
    assert spec is not None


def test_probe_thread_counts_and_sustain_users_are_bounded() -> None:
    probe = (EX / "probe-submit.yaml").read_text(encoding="utf-8")
    for bad in ("[0]", "[10001]", f"[1, {10**14}]"):
        with pytest.raises(SpecError, match=r"field 'load.burst.threads.\d'"):
            load_spec_text(probe, "probe", [f"load.burst.threads={bad}"])
    load_spec_text(probe, "probe", ["load.burst.threads=[1, 10000]"])
    sustain = (
        "name: s\nbackend: {type: noop}\nload: {model: sustain, users: 2, jobs_per_user: 1}\n"
        "trial: {duration: 1s}\n"
    )
    for key, limit in (("load.users", 10_000), ("load.jobs_per_user", 1_000_000)):
        with pytest.raises(SpecError, match=rf"less than or equal to {limit}"):
            load_spec_text(sustain, "s", [f"{key}={limit + 1}"])


def test_a_number_past_64_bits_is_said_so() -> None:
    """pydantic calls a YAML number past 64 bits an "input string" it cannot parse."""
    text = (EX / "batch-local.yaml").read_text(encoding="utf-8")
    with pytest.raises(SpecError) as info:
        load_spec_text(text, "b.yaml", ["safety.max_jobs=1e300"])
    assert "field 'safety.max_jobs': the number is past the 64-bit integers" in str(info.value)
    assert "input string" not in str(info.value)
