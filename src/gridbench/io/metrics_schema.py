"""The structure of an io ``metrics.json`` (``gridbench.io/1``), checked.

metrics.json is foreign input: the store may be shared, a run copied in, a crash may
leave it half written. ``validate_metrics`` checks the parts the io report and compare
code rely on, before any of it is read, and raises one :class:`ResultsError` naming the
file and the first bad field (``matrix.3.kbps.mean: Input should be a valid number``).

Every model allows extra fields and most fields may be absent or ``null``; what is there
must have its type. Numbers are checked by hand (never a bool or a numeric string). The
scalar types and the error come from the core (``gridbench.schema``).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from gridbench.io.metrics_schema_clients import Clients
from gridbench.io.metrics_schema_posix import Conformance, IdentityCheck, Replay
from gridbench.io.model import FileSharing
from gridbench.schema import (
    Count,
    Described,
    Flag,
    Num,
    OpenModel,
    Rep,
    Text,
    ThresholdResult,
    ValidityDoc,
    validate_document,
)

SCHEMA = "gridbench.io/1"


# --- the figures -------------------------------------------------------------------------


class Latency(OpenModel):
    """Latency percentiles in ms (io/parse.py's PERCENTILES): named, so that a threshold
    on a near miss (``lat_ms.p98``) is refused before the run."""

    p50: Num = None
    p90: Num = None
    p99: Num = None
    p999: Num = None


class Entry(OpenModel):
    """One (test, target) of the iozone matrix."""

    test: Text = None
    target: Text = None
    kbps: Rep | None = None
    lat_ms: Latency = Field(default_factory=Latency)
    baseline: Text = None
    baseline_kbps: Num = None
    speedup: Num = None
    cpu_pct: Num = None


class CacheEffect(OpenModel):
    target: Text = None
    reread_over_read: Num = None
    cached: Flag = None
    statement: Text = None


class Cdf(OpenModel):
    target: Text = None
    test: Text = None
    ms: list[Num] = []
    cdf: list[Num] = []


class LatencySeries(OpenModel):
    target: Text = None
    test: Text = None
    direction: Text = None
    n: Num = None
    p50_ms: Num = None
    p99_ms: Num = None
    p999_ms: Num = None
    second: list[Num] = []
    bin_ms: Num = None
    ios: list[Num] = []
    p99_ms_per_s: list[Num] = []


class Concurrency(OpenModel):
    target: Text = None
    test: Text = None
    clients: Count = None
    files: FileSharing | None = None
    last_done_kbps: Rep | None = None
    first_done_kbps: Rep | None = None
    finish_spread_s: Num = None
    per_client_kbps: dict[str, Num] = {}
    lat_ms: Latency = Field(default_factory=Latency)


class Bonnie(OpenModel):
    target: Text = None
    column: Text = None
    kbps: Rep | None = None  # the throughput phases
    per_s: Rep | None = None  # the file tests (bonnie++ -n): files per second
    cpu_pct: Num = None
    baseline_kbps: Num = None
    baseline_per_s: Num = None
    speedup: Num = None
    note: Text = None


class Check(OpenModel):
    """One consistency check (``ok`` null: not run)."""

    check: Text = None
    ok: Flag = None
    seconds: Num = None
    detail: Text = None


class Http(OpenModel):
    size: Count = None
    op: Text = None
    seconds: Rep | None = None
    mib_s: Rep | None = None
    ok: Flag = None


class Series(OpenModel):
    t: list[Num] = []
    mib_s: list[Num] = []
    p50_ms: list[Num] = []
    p99_ms: list[Num] = []
    errors: list[Num] = []


class Fault(OpenModel):
    action: Text = None
    server: Text = None
    address: Text = None
    at: Num = None
    t: Num = None
    ok: Flag = None
    detail: Text = None
    before_mib_s: Num = None
    lowest_mib_s: Num = None
    throughput_back_s: Num = None
    worst_p99_ms: Num = None


class Recovery(OpenModel):
    cause: Text = None
    since: Num = None
    online_s: Num = None
    healed_s: Num = None
    ok: Flag = None
    detail: Text = None


class BadFile(OpenModel):
    file: Text = None
    problem: Text = None
    bytes: Count = None


class Integrity(OpenModel):
    files: Count = None
    bytes: Count = None
    seconds: Num = None
    mib_s: Num = None
    bad: list[BadFile] = []
    bad_bytes: Count = None
    ok: Flag = None
    read_after: Text = None


class WriterHost(OpenModel):
    """One client host's resilience writers (``resilience.hosts``)."""

    host: Text = None
    writes: Count = None
    write_errors: Count = None
    bytes_written: Count = None
    mib_s: Num = None


class WriterHostLost(OpenModel):
    host: Text = None
    t: Num = None
    exit: int | None = None
    detail: Text = None


class Resilience(OpenModel):
    """The resilience phase: load, faults, recoveries, integrity."""

    target: Text = None
    duration: Num = None
    writers: Count = None
    file_size: Count = None
    interval: Num = None
    writes: Count = None
    write_errors: Count = None
    bytes_written: Count = None
    mib_s: Num = None
    series: Series | None = None
    faults: list[Fault] = []
    recoveries: list[Recovery] = []
    integrity: Integrity | None = None
    capped_s: Num = None
    hosts: list[WriterHost] = []
    hosts_lost: list[WriterHostLost] = []
    ok: Flag = None


class HttpClients(OpenModel):
    """N concurrent HTTP clients, one direction."""

    clients: Count = None
    op: Text = None
    transfers: Count = None
    per_client_mib_s: dict[str, Num] = {}
    client_mib_s: Rep | None = None
    aggregate_mib_s: Rep | None = None
    sum_mib_s: Rep | None = None
    refused: Count = None
    refusal_s: Rep | None = None
    statuses: list[Text] = []
    failed: list[Text] = []


class ServiceOp(OpenModel):
    """One service operation at one payload size, client count and reuse mode."""

    op: Text = None
    size: Count = None
    clients: Count = None
    reuse: Flag = None
    requests: Count = None
    failed: Count = None
    latency_ms: Described | None = None
    failures: list[Text] = []


class ServiceRound(OpenModel):
    """All clients of one payload size and reuse mode at once: the throughput."""

    size: Count = None
    clients: Count = None
    reuse: Flag = None
    requests: Count = None
    failed: Count = None
    seconds: Num = None
    requests_per_s: Num = None
    mib_s: Num = None


class Service(OpenModel):
    ops: list[ServiceOp] = []
    rounds: list[ServiceRound] = []


class Threshold(ThresholdResult):
    """One threshold's result, with io's own fields for its tables."""

    target: Text = None
    test: Text = None
    ok: Flag = None
    detail: Text = None


class Runtime(OpenModel):
    target: Text = None
    test: Text = None
    kind: Text = None
    direction: Text = None
    clients: Count = None
    rows: Count = None
    short_rows: Count = None
    runtime_ms: Num = None
    runtime_ms_max: Num = None
    resolution: Num = None


class Flagged(Runtime):
    rule: Text = None
    detail: Text = None
    limit: Num = None


class Validity(ValidityDoc):
    flags: list[Flagged] = []
    max_resolution: Num = None
    runtimes: list[Runtime] = []


class Iozone(OpenModel):
    file_size: Num = None
    record_size: Num = None
    include_close: Flag = None
    include_flush: Flag = None


class Target(OpenModel):
    name: Text = None
    path: Text = None
    cache_requested: Text = None
    cache_used: Text = None


class IoMetrics(OpenModel):
    """The top level of ``gridbench.io/1``."""

    name: Text = None
    status: Text = None
    error: Text = None
    baseline: Text = None
    speedup_formula: Text = None
    repetitions: Count = None
    iozone: Iozone | None = None
    targets: list[Target] = []
    matrix: list[Entry]
    cache_effects: list[CacheEffect] = []
    latency_cdf: list[Cdf] = []
    latency_series: list[LatencySeries] = []
    concurrency: list[Concurrency] = []
    bonnie: list[Bonnie] = []
    consistency: list[Check] = []
    http: list[Http] = []
    conformance: Conformance | None = None
    replay: list[Replay] = []
    identities: list[IdentityCheck] = []
    identities_ok: Flag = None
    thresholds: list[Threshold] = []
    validity: Validity | None = None
    thresholds_ok: Flag = None
    consistency_ok: Flag = None
    resilience: Resilience | None = None
    resilience_ok: Flag = None
    http_clients: list[HttpClients] = []
    http_clients_ok: Flag = None
    service: Service | None = None
    service_ok: Flag = None
    clients: Clients | None = None


def validate_metrics(data: Any, where: str = "metrics.json") -> dict[str, Any]:
    """``data`` if it is a ``gridbench.io/1`` document of the expected structure, else
    ResultsError naming ``where`` and the first bad field path."""
    return validate_document(data, IoMetrics, SCHEMA, where)
