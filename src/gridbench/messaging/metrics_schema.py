"""The structure of a net ``metrics.json`` (``gridbench.net/1``), checked.

metrics.json is foreign input (a shared store, a run copied in, a file half written by a
crash). :func:`validate_metrics` checks the parts the net report, compare and history
read before any of it is read, and raises one :class:`~gridbench.errors.ResultsError`
naming the file and the first bad field (``pingpong.0.rows.2.rtt_ms.mean: Input should be
a valid number``). Models allow extra fields; what is declared must have its type (the
scalars of :mod:`gridbench.schema`: never a bool or a numeric string for a number).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import PlainValidator
from pydantic_core import PydanticCustomError

from gridbench.schema import (
    Count,
    Flag,
    Num,
    OpenModel,
    Text,
    ThresholdResult,
    ValidityDoc,
    validate_document,
)

SCHEMA = "gridbench.net/1"


def _key_count(v: Any) -> int:
    # a whole number (an integral float too), never null, a bool or a string
    if isinstance(v, bool) or not isinstance(v, int | float) or not float(v).is_integer():
        raise PydanticCustomError("int_type", "Input should be a valid integer")
    return int(v)


def _key_text(v: Any) -> str:
    if not isinstance(v, str):
        raise PydanticCustomError("string_type", "Input should be a valid string")
    return v


#: What names a series or a row: present, not null, of its type.
KeyCount = Annotated[int, PlainValidator(_key_count)]
KeyText = Annotated[str, PlainValidator(_key_text)]


class Spread(OpenModel):
    """A figure across repetitions: mean, sd, min, max."""

    mean: Num = None
    sd: Num = None
    min: Num = None
    max: Num = None


class Rtt(Spread):
    sd_pct: Num = None
    median: Num = None
    p50: Num = None
    p90: Num = None
    p99: Num = None
    p999: Num = None


class PingFloor(OpenModel):
    tool: Text = None
    figure: Text = None
    value: Num = None
    ratio: Num = None


class PingRow(OpenModel):
    size_bytes: KeyCount
    size_kib: Num = None
    tests: Count = None
    failed_tests: Count = None
    errors: list[Text] = []
    round_trips: Count = None
    total_ms: Num = None
    rtt_ms: Rtt
    speed_mb_s: Num = None
    one_way_ms: Num = None
    test_means_ms: list[Num] = []
    floor: PingFloor | None = None
    overhead: Flag = None
    floor_void: Text = None


class Series(OpenModel):
    transport: KeyText
    env: KeyText


class PingSeries(Series):
    rows: list[PingRow]


class Repeated(OpenModel):
    """A figure's repetitions: how many succeeded and failed, the failures' errors
    (:func:`gridbench.messaging.summaries._reps`)."""

    reps: Count = None
    failed_reps: Count = None
    errors: list[Text] = []


class Latencies(Repeated):
    """Echo calls' latency figures over repetitions, of one series length or one client
    count (:func:`gridbench.messaging.summaries._latencies`)."""

    n: Count = None
    mean_ms: Num = None
    sd_ms: Num = None
    p50_ms: Num = None
    p99_ms: Num = None
    rep_means_ms: list[Num] = []


class EchoRow(Latencies):
    calls: KeyCount
    total_ms: Spread | None = None


class EchoFloor(OpenModel):
    tool: Text = None
    size_bytes: Count = None
    payload_bytes: Count = None
    value: Num = None
    ratio: Num = None


class EchoSeries(Series):
    config: KeyText
    mean_ms: Num = None
    p50_ms: Num = None
    rows: list[EchoRow]
    floor: EchoFloor | None = None
    overhead: Flag = None


class ScalePoint(Latencies):
    clients: KeyCount
    client_sd_ms: Num = None
    hosts: Count = None
    total_clients: Count = None
    throughput_per_s: Num = None
    cohosted_mean_ms: Num = None
    cohosted_sd_ms: Num = None
    remote_mean_ms: Num = None
    remote_sd_ms: Num = None


class Fit(OpenModel):
    model: Text = None
    form: Text = None
    statement: Text = None
    r2: Num = None
    n: Count = None
    coefficients: dict[str, Num] = {}


class Saturation(OpenModel):
    saturated: Flag = None
    total_clients: Count = None
    throughput_per_s: Num = None
    statement: Text = None


class Scaling(Series):
    config: KeyText
    points: list[ScalePoint]
    fit: Fit | None = None
    saturation: Saturation | None = None


class Gaps(OpenModel):
    p50: Num = None
    p90: Num = None
    p99: Num = None
    max: Num = None
    n: Count = None


class Timeline(OpenModel):
    t_ms: list[Num] = []
    completed: list[Num] = []


class Burst(Series, Repeated):
    calls: Count = None
    responses_min: Count = None
    enqueue_ms: Spread | None = None
    first_ms: Spread | None = None
    total_ms: Spread | None = None
    rep_enqueue_ms: list[Num] = []
    enqueue_cpu_ms: Spread | None = None
    rep_enqueue_cpu_ms: list[Num] = []
    rep_first_ms: list[Num] = []
    gap_ms: Gaps | None = None
    timeline: Timeline | None = None


class TransferFloor(OpenModel):
    tool: Text = None
    streams: Count = None
    value_mb_s: Num = None
    ratio: Num = None


class Transfer(Repeated):
    tool: KeyText
    env: KeyText
    direction: KeyText
    streams: KeyCount
    bytes: Count = None
    mb_s: Spread | None = None
    samples_mb_s: list[Num] = []
    floor: TransferFloor | None = None
    overhead: Flag = None


class Sockperf(OpenModel):
    size_bytes: KeyCount
    rtt_ms: Rtt
    samples: Count = None
    runs: Count = None


class Iperf3(OpenModel):
    streams: KeyCount
    direction: KeyText
    mb_s: Num = None
    seconds: Num = None
    runs: Count = None


class FloorFailure(OpenModel):
    tool: Text = None
    size_bytes: Count = None
    streams: Count = None
    direction: Text = None
    error: Text = None


class Floor(OpenModel):
    env: KeyText
    path: Text = None
    sockperf: list[Sockperf] = []
    iperf3: list[Iperf3] = []
    failed: list[FloorFailure] = []


class Overhead(OpenModel):
    pattern: Text = None
    transport: Text = None
    tool: Text = None
    env: Text = None
    size_bytes: Count = None
    figure: Text = None
    value: Num = None
    floor: Num = None
    ratio: Num = None
    statement: Text = None


class Flagged(OpenModel):
    rule: Text = None
    pattern: Text = None
    name: Text = None
    env: Text = None
    config: Text = None
    at: Text = None
    detail: Text = None
    ratio: Num = None


class Withheld(OpenModel):
    pattern: Text = None
    name: Text = None
    env: Text = None
    at: Text = None
    n: Count = None
    percentiles: list[Text] = []


class Validity(ValidityDoc):
    flags: list[Flagged] = []
    withheld: list[Withheld] = []


class NetMetrics(OpenModel):
    """The top level of ``gridbench.net/1``."""

    kind: Text = None
    name: Text = None
    status: Text = None
    error: Text = None
    environments: list[Text] = []
    floor_factor: Num = None
    echo_payload: Count = None
    formulas: Text = None
    precision: Text = None
    pingpong: list[PingSeries] = []
    echo: list[EchoSeries] = []
    echo_scaling: list[Scaling] = []
    burst: list[Burst] = []
    transfer: list[Transfer] = []
    floor: list[Floor] = []
    overheads: list[Overhead] = []
    overheads_count: Count = None
    validity: Validity | None = None
    thresholds: list[ThresholdResult] = []
    thresholds_ok: Flag = None
    notes: list[Text] = []


def validate_metrics(metrics: Any, where: str = "metrics.json") -> dict[str, Any]:
    """``metrics`` if it is a ``gridbench.net/1`` document of the expected structure,
    else one ResultsError naming ``where`` and the first bad field path."""
    return validate_document(metrics, NetMetrics, SCHEMA, where)
