"""The records a net run appends to ``RUN/records.jsonl`` as each result exists (one JSON
object per line, fsynced: :func:`gridbench.store.records.append_record`). Analysis reads
them back as foreign input (:mod:`gridbench.messaging.analysis`).

Every record has ``pattern`` and ``env`` (an :data:`~gridbench.messaging.model.Environment`),
``ok`` (bool) and ``error`` (str or null). Times are integers in nanoseconds, measured with
``time.perf_counter_ns`` on the client. Per pattern:

``pingpong``  one test of M round trips at one size:
    ``transport, size_bytes, test, rtt_ns: [M ints]``
``echo``      one series of calls from one client:
    ``transport, config, calls, rep, lat_ns: [calls ints]``
``echo_scale`` one repetition of the client-scaling series (k client processes at once):
    ``transport, config, clients, rep, lat_ns: [all calls of all clients], client_mean_ns:
    [k ints]``
``burst``     N asynchronous calls fired at once:
    ``transport, calls, rep, enqueue_ns, first_ns, arrival_ns: [ints, from the first send,
    in arrival order], enqueue_cpu_ns`` (the enqueuing thread's CPU time for the enqueue,
    ``time.thread_time_ns``; ``enqueue_ns`` is wall time. Absent or null in older runs)
``transfer``  one move of a payload:
    ``tool, direction ("up" client->peer, "down" peer->client), bytes, streams, rep,
    elapsed_ns``
``floor``     one native-tool measurement in an environment:
    ``tool: "sockperf"``: ``size_bytes, rtt_ns: {mean, min, max, p50, p90, p99, p999},
    samples``; ``tool: "iperf3"``: ``streams, direction, bits_per_second, seconds``;
    a size or tool that cannot run there: ``ok: false`` with the reason in ``error``.
``note``      something the report must say (a skipped combination, an environment fact):
    ``text`` (and ``transport``/``tool`` when it concerns one).
"""

from __future__ import annotations

from typing import Final, Literal

Pattern = Literal["pingpong", "echo", "echo_scale", "burst", "transfer", "floor", "rr", "note"]
RECORDS_FILE: Final = "records.jsonl"
