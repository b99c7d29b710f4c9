"""The ``clients:`` phase of an io run: fio on several client hosts at once, through fio's
own client/server mode (docs/io.md, "Many client hosts").

A fio server is started on every host once (:mod:`gridbench.io.fio_servers`); then, per
repetition and target, three layouts, each a ``fio --client=HOST JOBFILE ...`` run from the
controller whose JSON+ holds one entry per host:

- ``series``: the DEISA layout, N clients each on its own host (the first N hosts), for
  every N of ``counts`` and every test: per-client rows and the aggregate;
- ``same_file``: the first two hosts read one file at once (fio's ``unique_filename=0``;
  otherwise fio prefixes each file name with the client's address);
- ``hosts``: each host alone, every test: the client machines compared.

Every fio job result is a line of ``RUN/clients.jsonl`` (fsynced as produced). A host whose
server is lost mid-run (fio says "disconnected", its figures are missing) is named in a
``lost`` line; what the other hosts measured in that run is kept, and the host takes no
further part. Only when every host is lost does the phase stop (a BackendError, exit 3).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from gridbench.errors import BackendError, ResultsError
from gridbench.hosts.inventory import load_inventory
from gridbench.io.clients_model import ClientsSpec
from gridbench.io.fio import FioJob, fio_argv, fio_timeout, job_file_text, run_fio
from gridbench.io.fio_servers import FioServer, start_servers, stop_servers
from gridbench.io.matrix import DIRECTION, job_options
from gridbench.io.parse import JobResult, parse_fio_text, row_of
from gridbench.store.records import append_record

if TYPE_CHECKING:
    from gridbench.io.model import IoSpec
    from gridbench.io.safety import TargetState
    from gridbench.store.layout import RunDir


class FioRunner(Protocol):
    """What the client phase uses of io's runner (gridbench.io.runner.IoRunner)."""

    spec: IoSpec
    run: RunDir | None
    fio: str

    def progress(self, text: str) -> None: ...

    def run_jobs(self, label: str, jobs: list[FioJob], bytes_moved: int) -> list[JobResult]: ...

    def drop(self, s: TargetState) -> None: ...

    def raw_base(self, label: str) -> Path: ...


RECORDS = "clients.jsonl"
#: each client's own file (fio prefixes it with the client's address) and the shared one
CLIENT_FILE = "gridbench-clients.dat"
SHARED_FILE = "gridbench-clients-shared.dat"


class ClientsPhase:
    """The client hosts' servers, and the layouts run through them."""

    def __init__(self, runner: FioRunner, spec: ClientsSpec, run_path: Path) -> None:
        inv = load_inventory(spec.inventory)
        hosts = [inv.host(n, f"clients.hosts[{i}]") for i, n in enumerate(spec.hosts)]
        self.runner = runner
        self.spec = spec
        self.run_path = run_path
        self.servers = start_servers(hosts, spec, Path(spec.inventory), run_path)
        self.lost: set[str] = set()

    def close(self) -> None:
        stop_servers(self.servers, self.run_path)

    @property
    def alive(self) -> list[FioServer]:
        """The hosts still taking part, in the spec's order."""
        return [s for s in self.servers if s.host not in self.lost]

    # -- one target, one repetition ------------------------------------------------------
    def target(self, s: TargetState, rep: int) -> None:
        spec = self.spec
        for n in spec.series:
            for test in spec.tests:
                active = self.alive[:n]  # a host lost in the last step takes no part
                if len(active) < n:
                    self._note(s, rep, f"{n} clients {test} not run: {len(active)} hosts left")
                    continue
                self._step(s, rep, "series", test, active)
        if spec.same_file and len(self.alive) >= 2:
            self._layout_shared(s)
            self._step(s, rep, "same_file", "read", self.alive[:2], shared=True)
        if spec.compare_hosts:
            for server in self.alive:
                for test in spec.tests:
                    if server.host not in self.lost:
                        self._step(s, rep, "hosts", test, [server])

    def _options(self, s: TargetState, test: str, filename: str) -> dict[str, str | int | bool]:
        io = self.runner.spec.iozone
        if self.spec.file_size is not None:
            io = io.model_copy(update={"file_size": self.spec.file_size})
        wd = str(s.prepared.workdir)
        opts = dict(
            job_options(test, io, directory=wd, direct=s.mode.used == "direct", filename=filename)
        )
        opts["allow_file_create"] = True
        if self.spec.rate is not None:
            opts["rate"] = self.spec.rate
        return opts

    def _layout_shared(self, s: TargetState) -> None:
        """The shared file, written once by the controller (not recorded)."""
        opts = self._options(s, "write", SHARED_FILE)
        opts.pop("rate", None)
        size = int(opts["size"])
        self.runner.run_jobs(f"{s.prepared.name}-shared-layout", [FioJob("layout", opts)], size)

    def _step(
        self,
        s: TargetState,
        rep: int,
        layout: str,
        test: str,
        servers: list[FioServer],
        *,
        shared: bool = False,
    ) -> None:
        name = s.prepared.name
        alone = f" on {servers[0].host}" if layout == "hosts" else ""
        self.runner.progress(f"{name} rep {rep + 1}: {layout} {len(servers)} host(s) {test}{alone}")
        if DIRECTION[test] == "read":
            self.runner.drop(s)
        opts = self._options(s, test, SHARED_FILE if shared else CLIENT_FILE)
        if shared:
            opts["unique_filename"] = False
            opts["allow_file_create"] = False
        keys = {"target": name, "layout": layout, "test": test, "rep": rep}
        label = f"{name}-r{rep}-{layout}{len(servers)}-{test}"
        results, lost = self._client_run(label, FioJob(test, opts), servers, int(opts["size"]))
        hosts = {sv.address: sv.host for sv in servers}
        for r in results:
            row = _row(r, **keys, clients=len(servers), host=hosts.get(r.client, r.client))
            append_record(self.run_path / RECORDS, row)
        for sv, detail in lost:
            self.lost.add(sv.host)
            append_record(
                self.run_path / RECORDS,
                {
                    "event": "lost",
                    "host": sv.host,
                    **keys,
                    "clients": len(servers),
                    "detail": detail,
                    "t": time.time(),
                },
            )
            s.notes.append(f"client host {sv.host} lost during {layout} {test}: {detail}")

    def _note(self, s: TargetState, rep: int, text: str) -> None:
        append_record(
            self.run_path / RECORDS,
            {"event": "skipped", "target": s.prepared.name, "rep": rep, "detail": text},
        )

    def _client_run(
        self, label: str, job: FioJob, servers: list[FioServer], size: int
    ) -> tuple[list[JobResult], list[tuple[FioServer, str]]]:
        """One fio client run on ``servers``: the results it has, and the hosts lost in it
        (each with what was seen). Raises when fio failed without losing a host, or lost
        every host."""
        runner = self.runner
        assert runner.run is not None
        base = runner.raw_base(label)
        job_file, out = base.with_suffix(".fio"), base.with_suffix(".json")
        job_file.write_text(job_file_text([job], {"group_reporting": False}), encoding="utf-8")
        argv = fio_argv(runner.fio, job_file, out, [sv.client for sv in servers])
        failure: BackendError | None = None
        try:
            stderr = run_fio(argv, timeout=runner_timeout(runner, size * len(servers)))
            if stderr.strip():
                base.with_suffix(".stderr").write_text(stderr, encoding="utf-8")
        except BackendError as exc:
            failure = exc
            base.with_suffix(".stderr").write_text(exc.message, encoding="utf-8")
        text = out.read_text(encoding="utf-8", errors="replace") if out.exists() else ""
        try:
            results = parse_fio_text(text, where=str(out))
        except ResultsError:
            if failure is None:
                raise
            results = []
        seen = {r.client for r in results}
        said = text + (failure.message if failure else "")
        lost = [(sv, _why(sv, said)) for sv in servers if sv.address not in seen]
        if failure is not None and (not lost or len(lost) == len(servers)):
            if lost:
                names = ", ".join(sv.host for sv, _ in lost)
                raise BackendError(
                    f"every client host was lost ({names}): {failure.message}",
                    where=failure.where,
                    fix="check the hosts answer ('gridbench hosts check') and fio runs there; "
                    "what was measured before is kept",
                ) from None
            raise failure
        return results, lost


def runner_timeout(runner: FioRunner, bytes_moved: int) -> float:
    return fio_timeout(runner.spec, bytes_moved)


def _why(server: FioServer, said: str) -> str:
    """What fio (or the server's launcher) said about a lost host, in a few words."""
    for line in said.splitlines():
        if server.address in line and ("disconnect" in line or "timed out" in line):
            return line.strip()[:200]
    gone = "" if server.alive else f"; its server ended (exit {server.proc.returncode})"
    return f"no figures from {server.address}{gone}"


def _row(r: JobResult, **keys: Any) -> dict[str, Any]:
    return row_of(r, **keys)


def start_phase(runner: FioRunner) -> ClientsPhase | None:
    """The client hosts' servers for ``runner``'s run (None without a ``clients:`` block)."""
    spec = runner.spec.clients
    if spec is None or runner.run is None:
        return None
    runner.progress(f"starting fio servers on {', '.join(spec.hosts)}")
    return ClientsPhase(runner, spec, runner.run.path)
