"""The storage-in-depth parts of an io ``metrics.json``: the POSIX conformance table,
the trace-replay matrix and the identity checks (see :mod:`gridbench.io.metrics_schema`,
which holds them in the top level)."""

from __future__ import annotations

from gridbench.schema import Count, Flag, Num, OpenModel, Rep, Text


class ConformanceRow(OpenModel):
    """One (target, syscall) of the conformance table; syscall ``total`` sums a target."""

    target: Text = None
    syscall: Text = None
    tests: Count = None
    passed: Count = None
    failed: Count = None
    skipped: Count = None
    excluded: Count = None
    rate: Num = None
    baseline_rate: Num = None
    worse: list[Text] = []
    better: list[Text] = []


class ConformanceFailure(OpenModel):
    target: Text = None
    syscall: Text = None
    test: Text = None
    detail: Text = None


class SkipReason(OpenModel):
    target: Text = None
    syscall: Text = None
    reason: Text = None
    count: Count = None


class Conformance(OpenModel):
    table: list[ConformanceRow] = []
    failures: list[ConformanceFailure] = []
    skip_reasons: list[SkipReason] = []


class Replay(OpenModel):
    """One (target, streams, sync, direction) of the trace replays."""

    target: Text = None
    streams: Count = None
    sync: Flag = None
    direction: Text = None
    kbps: Rep | None = None
    lat_ms: dict[str, Num] = {}
    baseline_kbps: Num = None
    speedup: Num = None


class IdentityCheck(OpenModel):
    """One identity check: a user's access against what the permission bits say."""

    target: Text = None
    check: Text = None
    user: Text = None
    ok: Flag = None
    expected: Text = None
    actual: Text = None
    detail: Text = None
