"""What an io spec will run, step by step, and about how long it takes: for ``gridbench io
plan``, ``validate`` and the progress bar.

A step is one progress step of the runner (:mod:`gridbench.io.runner` walks the same
steps in the same order). The duration is a cost model in plain data: every fio run costs
its start-up plus the bytes it moves at an assumed rate, a cache drop and a check a fixed
time. The target's real rate is unknown before the run, so the estimate is for a local
disk; a slower target (NFS, a WAN) takes longer by about its rate's ratio. Pure: nothing
here starts a process.
"""

from __future__ import annotations

from dataclasses import dataclass

from gridbench.io.matrix import needs_cache_drop, ordered_tests
from gridbench.io.model import IoSpec

# Calibration: examples/io-local-quick.yaml (64 MiB files, direct I/O, two /tmp directories
# on one SSD, 2 shared cores), 90 fio runs in 37 s: each run 0.32..0.45 s from job file to
# JSON, of which fio's own runtime was 0.05..0.1 s for 64 MiB and 0.6 s for 4 × 64 MiB.

#: One fio process: start, lay out its job, parse, write its JSON+ output (measured 0.27 s).
FIO_START_S = 0.28
#: The data rate assumed for a target (64 MiB in 0.07 s direct on the local SSD, 4 × 64 MiB
#: in 0.16..0.2 s of wall time: about 1 GiB/s).
ASSUMED_RATE_BPS = 1024**3
#: The runner's own work between two fio runs (rows, latency-log summary: 0.01..0.03 s).
STEP_GAP_S = 0.02
#: Dropping the page cache (sync, then drop_caches); not measured by the shipped example
#: (it uses direct I/O), a sync of a quiet disk is well under a second.
DROP_CACHES_S = 0.5
#: The consistency checks of one target without a peer or fill (0.3 s measured).
CONSISTENCY_S = 0.3
#: bonnie++ passes over its file (per-char and block write, rewrite, per-char and block
#: read), plus its small-file create/stat/delete phase.
BONNIE_PASSES = 5
BONNIE_FILES_S = 5.0
#: pjdfstest's 398 cases on one local target: 1.7 s on an idle machine, 6 s with both
#: cores busy (measured on /tmp, ext4); a network file system takes longer.
CONFORMANCE_S = 3.0
#: One target's identity checks: about 140 coreutils probes run as other users (1 s).
IDENTITIES_S = 1.0
#: An O_SYNC replay's rate over the whole trace (70% reads): every write waits for the
#: disk (4 MiB trace on /tmp, ext4: 1.0..1.3 s per replay, 1 or 2 streams).
OSYNC_RATE_BPS = 4 * 1024**2
#: Starting the command, preparing the targets, analysis and the reports (2 s measured).
RUN_FIXED_S = 2.0


@dataclass(frozen=True, slots=True)
class IoStep:
    """One progress step and its estimated seconds."""

    target: str  # "" for a step over all targets (HTTP)
    rep: int | None  # None for a step done once (consistency, HTTP)
    what: str  # test, "N clients test", "bonnie++", "consistency checks", "HTTP transfers"
    seconds: float

    def label(self) -> str:
        """Short text for the plan's table."""
        rep = f"rep {self.rep + 1}: " if self.rep is not None else ""
        return f"{self.target} {rep}{self.what}".strip()


#: After a resilience load: the volume healed (about 2 s measured on loopback).
HEAL_S = 3.0
#: Reading back and checking what a resilience load wrote (and fsynced), as a share of
#: the load's duration (measured on the loopback replica-3 GlusterFS volume).
READBACK_SHARE = 0.25


def fio_seconds(bytes_moved: int) -> float:
    """One fio run moving ``bytes_moved`` bytes at the assumed rate."""
    return FIO_START_S + STEP_GAP_S + bytes_moved / ASSUMED_RATE_BPS


def iozone_steps(spec: IoSpec, target: str, rep: int) -> list[IoStep]:
    """The matrix on one target: one fio run per test, the layout run (a matrix without
    ``write``) counted with the first test."""
    z = spec.iozone
    tests = ordered_tests(z)
    layout = 0.0 if "write" in tests else fio_seconds(z.file_size)
    out: list[IoStep] = []
    for i, test in enumerate(tests):
        drop = DROP_CACHES_S if spec.cache == "drop_caches" and needs_cache_drop(test) else 0.0
        extra = layout if i == 0 else 0.0
        out.append(IoStep(target, rep, test, fio_seconds(z.file_size) + drop + extra))
    return out


def concurrency_steps(spec: IoSpec, target: str, rep: int) -> list[IoStep]:
    """N clients at once per test: one fio run moving N files' worth."""
    c = spec.concurrency
    out: list[IoStep] = []
    for n in c.clients:
        for test in c.tests:
            read = test in ("read", "random_read")
            drop = DROP_CACHES_S if spec.cache == "drop_caches" and read else 0.0
            secs = fio_seconds(n * spec.iozone.file_size) + drop
            out.append(IoStep(target, rep, f"{n} clients {test}", secs))
    return out


def consistency_seconds(spec: IoSpec, has_peer: bool) -> float:
    """One target's checks: fixed, plus the fill at the assumed rate, plus (with a peer)
    up to the visibility time-out, the most a slow peer makes them wait."""
    c = spec.consistency
    secs = CONSISTENCY_S + (c.max_fill / ASSUMED_RATE_BPS if c.fill else 0.0)
    return secs + (c.timeout if has_peer else 0.0)


def http_seconds(spec: IoSpec) -> float:
    """Every size up and down, per repetition, at the assumed rate (plus the file-system
    copy on the compare target)."""
    h = spec.http
    if h is None:
        return 0.0
    copies = 4 if h.compare_target else 2
    return h.repetitions * sum(copies * s / ASSUMED_RATE_BPS + FIO_START_S for s in h.sizes)


def resilience_seconds(spec: IoSpec) -> float:
    """The load's duration, the heal afterwards and the read-back of what was written."""
    r = spec.resilience
    if r is None:
        return 0.0
    return r.duration * (1.0 + READBACK_SHARE) + HEAL_S


def http_clients_seconds(spec: IoSpec) -> float:
    """Every client count's bytes up and down at the assumed rate, per repetition."""
    h = spec.http_clients
    if h is None:
        return 0.0
    return h.repetitions * sum(2 * n * h.size / ASSUMED_RATE_BPS + FIO_START_S for n in h.clients)


#: one service request on loopback (nginx's WebDAV: a few ms measured for 1 MiB)
SERVICE_REQUEST_S = 0.005


def service_seconds(spec: IoSpec) -> float:
    """Each round's requests (one client's, the others at once) plus its bytes up and
    down at the assumed rate."""
    s = spec.service
    if s is None:
        return 0.0
    per = len(s.ops) * s.requests
    return len(s.reuse) * sum(
        per * (SERVICE_REQUEST_S + 2 * n * size / ASSUMED_RATE_BPS)
        for size in s.sizes
        for n in s.clients
    )


#: One ``fio --client`` run from the controller: fio's own client/server exchange (job
#: file sent, results gathered) on top of a local fio's start (1.0..1.5 s measured on the
#: lab, 3 hosts, 16 MiB each).
FIO_CLIENT_S = 1.2
#: Starting ``fio --server`` on every client host and waiting for each to listen (lab
#: hosts: about 1 s for 3; over SSH each login adds its own).
FIO_SERVERS_S = 1.5


def clients_steps(spec: IoSpec, target: str, rep: int) -> list[IoStep]:
    """The ``clients:`` phase on one target, in :class:`gridbench.io.clients.ClientsPhase`'s
    order: the series (N clients, each test), the same-file read (its layout counted with
    it) and each host alone (each test)."""
    c = spec.clients
    if c is None:
        return []
    size = c.file_size or spec.iozone.file_size

    def secs(n: int, test: str) -> float:
        read = test in ("read", "random_read")
        drop = DROP_CACHES_S if spec.cache == "drop_caches" and read else 0.0
        return FIO_CLIENT_S + STEP_GAP_S + n * size / ASSUMED_RATE_BPS + drop

    out = [
        IoStep(target, rep, f"series {n} host(s) {test}", secs(n, test))
        for n in c.series
        for test in c.tests
    ]
    if c.same_file:
        layout = fio_seconds(size)
        out.append(IoStep(target, rep, "same_file 2 host(s) read", secs(2, "read") + layout))
    if c.compare_hosts:
        out += [
            IoStep(target, rep, f"hosts 1 host(s) {test} on {host}", secs(1, test))
            for host in c.hosts
            for test in c.tests
        ]
    return out


def in_depth_steps(spec: IoSpec) -> list[IoStep]:
    """Conformance per target, the trace's recording, its replays (per repetition,
    target, O_SYNC and stream count: a layout plus the replay) and the identity checks,
    in the runner's order (:mod:`gridbench.io.runner_posix`)."""
    out: list[IoStep] = []
    if spec.conformance.enabled:
        out += [IoStep(t.name, None, "POSIX conformance", CONFORMANCE_S) for t in spec.targets]
    r = spec.replay
    if r.enabled:
        first = spec.baseline or spec.targets[0].name
        if r.trace is None:
            out.append(IoStep(first, None, "recording the trace", fio_seconds(r.size)))
        for rep in range(spec.repetitions):
            for t in spec.targets:
                for i, (sync, n) in enumerate((s, n) for s in r.sync for n in r.streams):
                    layout = fio_seconds(r.size) if i == 0 else 0.0
                    what = f"replay {n} streams {'osync' if sync else 'nosync'}"
                    secs = fio_seconds(n * r.size) + (r.size / OSYNC_RATE_BPS if sync else 0.0)
                    out.append(IoStep(t.name, rep, what, layout + secs))
    if spec.identities is not None and spec.identities.enabled:
        out += [IoStep(t.name, None, "identity checks", IDENTITIES_S) for t in spec.targets]
    return out


def steps(spec: IoSpec) -> list[IoStep]:
    """Every step, in the order the runner takes them."""
    out: list[IoStep] = []
    if spec.clients is not None:  # the servers start once, before the first repetition
        what = f"starting fio servers on {len(spec.clients.hosts)} hosts"
        out.append(IoStep("", None, what, FIO_SERVERS_S))
    for rep in range(spec.repetitions):
        for t in spec.targets:
            if spec.iozone.enabled:
                out += iozone_steps(spec, t.name, rep)
            if spec.concurrency.enabled:
                out += concurrency_steps(spec, t.name, rep)
            if spec.bonnie.enabled:
                secs = BONNIE_PASSES * spec.bonnie.size / ASSUMED_RATE_BPS + BONNIE_FILES_S
                out.append(IoStep(t.name, rep, "bonnie++", secs))
            out += clients_steps(spec, t.name, rep)
    if spec.consistency.enabled:
        for t in spec.targets:
            secs = consistency_seconds(spec, t.peer is not None)
            out.append(IoStep(t.name, None, "consistency checks", secs))
    out += in_depth_steps(spec)
    if spec.http is not None:
        out.append(IoStep("", None, "HTTP transfers", http_seconds(spec)))
    if spec.resilience is not None:
        what = f"resilience ({len(spec.resilience.faults)} faults, integrity check)"
        out.append(IoStep(spec.resilience.target, None, what, resilience_seconds(spec)))
    if spec.http_clients is not None:
        out.append(IoStep("", None, "HTTP clients at once", http_clients_seconds(spec)))
    if spec.service is not None:
        out.append(IoStep("", None, "service operations", service_seconds(spec)))
    return out


def estimated_seconds(spec: IoSpec) -> float:
    """The whole run: every step plus the fixed start and reports."""
    return RUN_FIXED_S + sum(s.seconds for s in steps(spec))
