"""Running an ``io`` spec: targets checked, then per repetition and target the iozone
matrix, concurrency, bonnie++, consistency checks and HTTP timing; every result is
written to the results directory as soon as it exists.

Results directory (the job-flow store layout, see store/layout.py)::

    RUN/experiment.json      kind: io, status, targets, cache modes
    RUN/spec.yaml            the spec as run
    RUN/rows.jsonl           one line per fio job and direction (appended as produced)
    RUN/raw/*.fio, *.json    every fio job file and its raw JSON+ output, stderr
    RUN/bonnie.jsonl, consistency.jsonl, http.jsonl
    RUN/metrics.json         the analysis (written by gridbench.io.metrics)
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gridbench.errors import BackendError, GridbenchError, ResultsError
from gridbench.family import runner_identity
from gridbench.family.verdicts import recorded_end
from gridbench.io import bonnie as bon
from gridbench.io import cache
from gridbench.io.fio import FioJob, find_fio, fio_argv, fio_timeout, job_file_text, run_fio
from gridbench.io.load import load_io_spec_text
from gridbench.io.matrix import CLOSE_NOTE, DATA_FILE, job_options, needs_cache_drop, ordered_tests
from gridbench.io.model import IoSpec
from gridbench.io.parse import JobResult, parse_fio_text, row_of
from gridbench.io.plan import steps as plan_of
from gridbench.io.runner_posix import check_in_depth, run_in_depth
from gridbench.io.safety import (
    TargetState,
    check_free_space,
    check_target,
    cleanup,
    make_workdir,
)
from gridbench.store import raw_files
from gridbench.store.layout import RunDir, now_iso, write_text_atomic
from gridbench.store.records import append_record

Progress = Callable[[str], None]

if TYPE_CHECKING:
    from gridbench.io.clients import ClientsPhase
    from gridbench.io.resilience import Servers


#: the records analysis reads; with raw/* their sizes are recorded at the run's end
RECORD_FILES = (
    "rows.jsonl",
    "bonnie.jsonl",
    "consistency.jsonl",
    "http.jsonl",
    "latency_series.jsonl",
    "clients.jsonl",
    "fio_servers.jsonl",
)


def needed_bytes(spec: IoSpec, target: str | None = None) -> int:
    """The most the run keeps on a target at once: the largest phase, because each
    phase's data files are removed before the next phase starts (see ``IoRunner._clear``)."""
    need = spec.iozone.file_size if spec.iozone.enabled else 0
    if spec.concurrency.enabled:
        n = max(spec.concurrency.clients)
        per = 1 if spec.concurrency.files == "same" else n
        need = max(need, per * spec.iozone.file_size)
    if spec.bonnie.enabled:
        need = max(need, spec.bonnie.size)
    if spec.consistency.enabled:
        need = max(need, 4 * spec.consistency.file_size)
    if spec.resilience is not None and target in (None, spec.resilience.target):
        need = max(need, spec.resilience.max_bytes)
    if spec.replay.enabled:
        need = max(need, spec.replay.size)
    if spec.clients is not None:  # a file per host, and the shared one
        need = max(need, (len(spec.clients.hosts) + 1) * (spec.clients.file_size or 0))
        need = max(need, (len(spec.clients.hosts) + 1) * spec.iozone.file_size)
    if spec.http is not None and target is not None and spec.http.compare_target == target:
        need = max(need, max(spec.http.sizes, default=0))
    return need


def plan_steps(spec: IoSpec) -> int:
    """How many progress steps a run has (for the progress bar): those of the plan."""
    return len(plan_of(spec))


def _parse_output(out: Path, argv: list[str]) -> list[JobResult]:
    """fio's JSON+ output; unreadable output is fio failing (a BackendError naming the
    command), so the run is marked failed, the report written and the exit code is 3."""
    text = out.read_text(encoding="utf-8", errors="replace") if out.exists() else ""
    try:
        return parse_fio_text(text, where=str(out))
    except ResultsError as exc:
        raise BackendError(
            f"fio's output could not be used: {exc.message} ({out})",
            where=shlex.join(argv),
            fix=exc.fix or "run the command by hand to see fio's full output",
        ) from None


def server_jobs(
    test: str, opts: dict[str, str | int | bool], n: int, servers: list[str]
) -> list[tuple[str, FioJob]]:
    """``n`` clients spread over the fio servers as evenly as possible: (server, job).
    With separate files each server gets its own file-name prefix: the servers usually
    share the storage, and ``$jobnum`` restarts at 0 on every server."""
    share = [n // len(servers) + (1 if i < n % len(servers) else 0) for i in range(len(servers))]
    out = []
    for i, (srv, k) in enumerate(zip(servers, share, strict=True)):
        if k == 0:
            continue
        o: dict[str, str | int | bool] = {**opts, "numjobs": k}
        if "filename_format" in o:
            o["filename_format"] = f"gridbench-conc.s{i}.$jobnum.dat"
        out.append((srv, FioJob(test, o)))
    return out


class IoRunner:
    """Runs one spec into one results directory."""

    def __init__(
        self,
        spec: IoSpec,
        data: dict[str, Any],
        root: Path,
        *,
        force: bool = False,
        progress: Progress | None = None,
    ) -> None:
        self.spec = spec
        self.data = data
        self.root = root
        self.force = force
        self.progress = progress or (lambda _msg: None)
        uses_fio = spec.iozone.enabled or spec.concurrency.enabled or spec.replay.enabled
        uses_fio = uses_fio or spec.clients is not None
        self.fio = find_fio(spec.fio) if uses_fio else ""
        self.targets: list[TargetState] = []
        self.run: RunDir | None = None
        self._seq = 0
        self.servers: Servers | None = None  # the resilience phase's (gridbench.io.resilience)

    # -- set-up and tear-down ----------------------------------------------------------
    def prepare(self) -> RunDir:
        """Check every target before anything is written, then create the results
        directory and the targets' work directories."""
        spec = self.spec
        check_in_depth(self)
        checked = []
        for t in spec.targets:
            root = check_target(t.name, t.path, force=t.force or self.force)
            check_free_space(t.name, root, needed_bytes(spec, t.name))
            if spec.consistency.enabled and t.peer is not None and not Path(t.peer).is_dir():
                raise GridbenchError(
                    "the peer path is not a directory",
                    where=f"target {t.name!r} peer ({t.peer})",
                    fix="give the same storage's path through the other client or mount",
                )
            checked.append((t, root))
        if spec.resilience is not None:  # the servers faults name exist, before any write
            from gridbench.io.resilience import prepare_servers

            self.servers = prepare_servers(spec.resilience)
        run = RunDir.create(self.root, spec.name)
        self.run = run
        (run.path / "raw").mkdir()
        run.begin(
            "io",
            spec.name,
            self.data,
            status="preparing",
            baseline=spec.baseline,
            repetitions=spec.repetitions,
            **runner_identity(),  # cleanup knows this process again
            ram_bytes=cache.total_ram(),
        )
        try:
            for t, root in checked:
                self.targets.append(self._prepare_target(t.name, root, t.peer, run.id))
        except BaseException as exc:
            # a later target failed: remove the work directories already made
            errors = self.cleanup()
            run.update_experiment(status="failed", error=str(exc), cleanup_errors=errors)
            raise
        run.update_experiment(
            status="running", targets=[self._target_info(s) for s in self.targets]
        )
        return run

    def _prepare_target(self, name: str, root: Path, peer: str | None, run_id: str) -> TargetState:
        spec = self.spec
        prepared = make_workdir(name, root, run_id)
        try:
            mode = cache.choose_mode(spec.cache, prepared.workdir)
        except OSError as exc:
            cleanup(prepared)
            raise BackendError(
                f"cannot create a file in the target: {exc.strerror or exc}",
                where=f"target {name!r} ({prepared.workdir})",
                fix="check the target is mounted, writable and not full",
            ) from None
        state = TargetState(prepared, mode, peer)
        if mode.note:
            state.notes.append(mode.note)
        if spec.iozone.enabled and not spec.iozone.include_close:
            state.notes.append(CLOSE_NOTE)
        warn = cache.cache_warning(spec.iozone.file_size, mode.used)
        if warn and spec.iozone.enabled:
            state.notes.append(warn)
        bwarn = bon.ram_note(spec.bonnie, cache.total_ram()) if spec.bonnie.enabled else None
        if bwarn:
            state.notes.append(bwarn)
        return state

    def _target_info(self, s: TargetState) -> dict[str, Any]:
        return {
            "name": s.prepared.name,
            "path": str(s.prepared.root),
            "workdir": str(s.prepared.workdir),
            "cache_requested": s.mode.requested,
            "cache_used": s.mode.used,
            "notes": s.notes,
        }

    def cleanup(self) -> list[str]:
        """Remove every work directory (unless keep_files); the errors, if any."""
        if self.spec.keep_files:
            return []
        return [e for s in self.targets if (e := cleanup(s.prepared))]

    # -- fio ---------------------------------------------------------------------------
    def _fio(
        self, label: str, jobs: list[FioJob], bytes_moved: int, clients: list[str] | None = None
    ) -> list[JobResult]:
        assert self.run is not None
        self._seq += 1
        base = self.run.path / "raw" / f"{self._seq:04d}-{label}"
        job_file = base.with_suffix(".fio")
        out = base.with_suffix(".json")
        write_text_atomic(job_file, job_file_text(jobs, {"group_reporting": False}))
        argv = fio_argv(self.fio, job_file, out, clients or ())
        stderr = run_fio(argv, timeout=fio_timeout(self.spec, bytes_moved))
        if stderr.strip():
            write_text_atomic(base.with_suffix(".stderr"), stderr)
        return _parse_output(out, argv)

    def run_jobs(self, label: str, jobs: list[FioJob], bytes_moved: int) -> list[JobResult]:
        """One fio run, its job file and raw output kept in raw/ (the in-depth phases)."""
        return self._fio(label, jobs, bytes_moved)

    def raw_base(self, label: str) -> Path:
        """The next numbered name in raw/ for a fio run's job file and output."""
        assert self.run is not None
        self._seq += 1
        return self.run.path / "raw" / f"{self._seq:04d}-{label}"

    def drop(self, s: TargetState) -> None:
        """Drop the page cache before a test that must read from the device."""
        self._drop(s)

    def _drop(self, s: TargetState) -> None:
        if s.mode.used == "drop_caches" and not cache.drop_caches():
            s.notes.append("dropping caches failed during the run")

    # -- the iozone matrix -------------------------------------------------------------
    def iozone(self, s: TargetState, rep: int) -> None:
        assert self.run is not None
        spec = self.spec.iozone
        wd = str(s.prepared.workdir)
        direct = s.mode.used == "direct"
        tests = ordered_tests(spec)
        (s.prepared.workdir / DATA_FILE).unlink(missing_ok=True)
        if "write" not in tests:  # the other tests need the file: lay it out unrecorded
            opts = job_options("write", spec, directory=wd, direct=direct)
            self._fio(f"{s.prepared.name}-layout", [FioJob("layout", opts)], spec.file_size)
        for test in tests:
            self.progress(f"{s.prepared.name} rep {rep + 1}: {test}")
            if needs_cache_drop(test):
                self._drop(s)
            opts = dict(job_options(test, spec, directory=wd, direct=direct))
            label = f"{s.prepared.name}-r{rep}-{test}"
            log_prefix = self.run.path / "raw" / f"{self._seq + 1:04d}-{label}"
            if spec.latency_log:
                # the log goes to the results directory, never to the target
                opts["write_lat_log"] = str(log_prefix)
            results = self._fio(label, [FioJob(test, opts)], spec.file_size)
            if spec.latency_log:
                self._latency_series(s, rep, test, Path(f"{log_prefix}_lat.1.log"))
            self._rows(results, "iozone", s, test, rep, clients=1, files="one")

    def _rows(
        self,
        results: list[JobResult],
        kind: str,
        s: TargetState,
        test: str,
        rep: int,
        *,
        clients: int,
        files: str,
    ) -> None:
        """Append one line per result to RUN/rows.jsonl."""
        assert self.run is not None
        for r in results:
            row = row_of(
                r,
                kind=kind,
                target=s.prepared.name,
                test=test,
                rep=rep,
                clients=clients,
                files=files,
            )
            append_record(self.run.path / "rows.jsonl", row)

    def _latency_series(self, s: TargetState, rep: int, test: str, log: Path) -> None:
        from gridbench.io.latlog import read_lat_log, summarise

        assert self.run is not None
        if not log.exists():
            s.notes.append(f"fio wrote no latency log for {test}")
            return
        summary = summarise(read_lat_log(log))
        append_record(
            self.run.path / "latency_series.jsonl",
            {"target": s.prepared.name, "test": test, "rep": rep, **summary},
        )
        # the per-I/O logs are large; the summary keeps what the report uses
        for f in log.parent.glob(log.name.replace("_lat.1.log", "_*lat.1.log")):
            f.unlink()

    # -- concurrency -------------------------------------------------------------------
    def concurrency(self, s: TargetState, rep: int) -> None:
        assert self.run is not None
        c = self.spec.concurrency
        spec = self.spec.iozone
        wd = str(s.prepared.workdir)
        direct = s.mode.used == "direct"
        for n in c.clients:
            for test in c.tests:
                self.progress(f"{s.prepared.name} rep {rep + 1}: {n} clients {test}")
                if test in ("read", "random_read"):
                    self._drop(s)
                opts: dict[str, str | int | bool] = dict(
                    job_options(
                        test, spec, directory=wd, direct=direct, filename="gridbench-conc.dat"
                    )
                )
                opts["allow_file_create"] = True
                if c.files == "separate":
                    del opts["filename"]
                    opts["filename_format"] = "gridbench-conc.$jobnum.dat"
                results = self._concurrent_fio(s, test, n, opts, rep)
                self._rows(results, "concurrency", s, test, rep, clients=n, files=c.files)

    def _concurrent_fio(
        self, s: TargetState, test: str, n: int, opts: dict[str, str | int | bool], rep: int
    ) -> list[JobResult]:
        servers = self.spec.concurrency.servers
        label = f"{s.prepared.name}-r{rep}-c{n}-{test}"
        moved = n * self.spec.iozone.file_size
        if not servers:
            return self._fio(label, [FioJob(test, {**opts, "numjobs": n})], moved)
        plan = server_jobs(test, opts, n, servers)
        return self._fio_clients(label, [[j] for _, j in plan], [srv for srv, _ in plan], moved)

    def _fio_clients(
        self, label: str, jobs: list[list[FioJob]], servers: list[str], bytes_moved: int
    ) -> list[JobResult]:
        assert self.run is not None
        self._seq += 1
        base = self.run.path / "raw" / f"{self._seq:04d}-{label}"
        out = base.with_suffix(".json")
        argv = [self.fio, "--output-format=json+", f"--output={out}"]
        for i, (srv, js) in enumerate(zip(servers, jobs, strict=True)):
            jf = base.with_name(f"{base.name}-s{i}.fio")
            write_text_atomic(jf, job_file_text(js, {"group_reporting": False}))
            argv += [f"--client={srv}", str(jf)]
        stderr = run_fio(argv, timeout=fio_timeout(self.spec, bytes_moved))
        if stderr.strip():
            write_text_atomic(base.with_suffix(".stderr"), stderr)
        return _parse_output(out, argv)

    # -- bonnie++ ----------------------------------------------------------------------
    def bonnie(self, s: TargetState, rep: int) -> None:
        assert self.run is not None
        self.progress(f"{s.prepared.name} rep {rep + 1}: bonnie++")
        d = s.prepared.workdir / "bonnie"
        d.mkdir(exist_ok=True)
        argv = bon.bonnie_argv(self.spec.bonnie, d)
        text = bon.run_bonnie(argv)
        self._seq += 1
        raw = self.run.path / "raw" / f"{self._seq:04d}-{s.prepared.name}-r{rep}-bonnie.csv"
        write_text_atomic(raw, text)
        try:
            figures = bon.parse_bonnie_csv(text, where=shlex.join(argv))
        except ResultsError as exc:  # bonnie++ failing, as for fio: exit 3 with a report
            raise BackendError(exc.message, where=exc.where, fix=exc.fix) from None
        append_record(
            self.run.path / "bonnie.jsonl", {"target": s.prepared.name, "rep": rep, **figures}
        )

    @staticmethod
    def _clear(s: TargetState) -> None:
        """Remove a phase's data files: the next phase (or repetition) starts clean, and
        the free-space check only needs the largest phase."""
        # fio's client mode prefixes names with the server's host: HOST.gridbench-conc...
        for f in s.prepared.workdir.glob("*gridbench-*.dat"):
            f.unlink()

    # -- the whole run -----------------------------------------------------------------
    def execute(self) -> RunDir:
        """Run everything; the results directory is kept (and marked) on failure."""
        run = self.prepare()

        def finish(status: str, error: str | None) -> None:
            errors = self.cleanup()
            raw_files.record(run, [*RECORD_FILES, *raw_files.in_folder(run, "raw")])
            run.update_experiment(
                status=status,
                error=error,
                finished=now_iso(),
                targets=[self._target_info(s) for s in self.targets],
                cleanup_errors=errors,
            )

        with recorded_end(finish):
            try:
                self._phases(run)
            except OSError as exc:
                # the target itself failed (I/O error, full, unmounted): one clear message
                raise BackendError(
                    f"I/O error on a target: {exc.strerror or exc}",
                    where=str(exc.filename) if exc.filename else None,
                    fix="check the target is mounted, writable and not full; results so far "
                    "are kept",
                ) from None
        return run

    def _phases(self, run: RunDir) -> None:
        """Every phase of the spec, in order, into ``run``."""
        from gridbench.io.clients import start_phase

        clients = start_phase(self)  # fio servers on the client hosts, for every repetition
        try:
            self._repetitions(clients)
        finally:
            if clients is not None:
                clients.close()
        self._after_repetitions(run)

    def _repetitions(self, clients: ClientsPhase | None) -> None:
        for rep in range(self.spec.repetitions):
            for s in self.targets:
                if self.spec.iozone.enabled:
                    self.iozone(s, rep)
                    self._clear(s)
                if self.spec.concurrency.enabled:
                    self.concurrency(s, rep)
                    self._clear(s)
                if self.spec.bonnie.enabled:
                    self.bonnie(s, rep)
                if clients is not None:
                    clients.target(s, rep)
                    self._clear(s)

    def _after_repetitions(self, run: RunDir) -> None:
        if self.spec.consistency.enabled:
            from gridbench.io.consistency import run_checks

            for s in self.targets:
                self.progress(f"{s.prepared.name}: consistency checks")
                for res in run_checks(self.spec.consistency, s.prepared, s.peer):
                    append_record(
                        run.path / "consistency.jsonl", {"target": s.prepared.name, **res}
                    )
        run_in_depth(self)  # conformance, trace replay, identities
        if self.spec.http is not None:
            from gridbench.io.http import run_http

            self.progress("HTTP transfers")
            compare = next(
                (
                    s.prepared
                    for s in self.targets
                    if s.prepared.name == self.spec.http.compare_target
                ),
                None,
            )
            for res in run_http(self.spec.http, run.id, compare):
                append_record(run.path / "http.jsonl", res)
        if self.spec.resilience is not None:
            from gridbench.io.resilience import run_resilience

            rs = self.spec.resilience
            st = next(s for s in self.targets if s.prepared.name == rs.target)
            run_resilience(rs, st.prepared, run.path, self.servers, self.progress)
        if self.spec.http_clients is not None:
            from gridbench.io.http_clients import run_http_clients

            run_http_clients(self.spec.http_clients, run.id, run.path, self.progress)
        if self.spec.service is not None:
            from gridbench.io.service import run_service

            run_service(self.spec.service, run.id, run.path, self.progress)


def runner_for_text(text: str, root: Path) -> IoRunner:
    """A runner of the spec ``text``, validated now and not started (``Storage.runner_for``,
    the dashboard's /start): as ``gridbench io run`` without ``--force``."""
    spec, data = load_io_spec_text(text, "spec")
    return IoRunner(spec, data, root)
