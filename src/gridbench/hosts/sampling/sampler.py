"""The sampler: every named host, every interval, each sample on disk as it arrives.

One asyncio task per host (in a thread of its own, so any family can start and stop it
around its run). A host with a node_exporter is scraped; one without (or whose exporter
stops answering) is sampled by the psutil probe over SSH; named processes on a host are
always read by the probe. The host called ``local`` (unless the inventory names one) is
the controller itself, read in-process by the same probe.

Each record is one line of ``RUN/samples/<host>.jsonl``, appended and fsynced by
:mod:`gridbench.store.records` (nothing lost on kill -9). Kinds:

* ``sample``: host-wide figures (:class:`~gridbench.hosts.sampling.figures.Figures`) at
  ``t`` (the controller's clock), with ``host_t`` (the host's own clock), ``offset_s``
  (host minus controller, as known: given, or the exporter's round trip) and the processes;
* ``processes``: named processes only (when the exporter gives the host's figures);
* ``warning``: a named problem (``code``), e.g. ``nothing-sampled``: "nothing sampled on
  HOST: exporter down and no SSH". A host that gives nothing is never silent.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gridbench.errors import GridbenchError, resource_error
from gridbench.hosts.sampling.clock import interval_s
from gridbench.hosts.sampling.exporter import Scrape, scrape
from gridbench.hosts.sampling.figures import (
    Counters,
    Figures,
    Problem,
    counters_from_json,
    rates,
)
from gridbench.hosts.sampling.host_state import HostState
from gridbench.hosts.sampling.host_state import HostTarget as HostTarget
from gridbench.hosts.sampling.ssh import clean_processes, probe_lines
from gridbench.store.records import append_record

log = logging.getLogger(__name__)

SAMPLES_DIR = "samples"
#: how long a probe started over SSH lives at most (it is stopped with the run anyway)
PROBE_LIFETIME_S = 7 * 24 * 3600.0
#: a host with no figures for this many intervals (and at least 3 s) is warned about
SILENT_INTERVALS = 3


def _clean(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if v is not None}


class Sampler:
    """Samples ``targets`` every ``interval`` seconds into ``folder`` (``RUN/samples``)
    until :meth:`stop`; :meth:`start` runs it in a thread of its own, :meth:`run` in the
    caller's event loop."""

    def __init__(
        self,
        folder: Path,
        targets: Sequence[HostTarget],
        interval: float = 1.0,
        *,
        timeout: float | None = None,
        probe_lifetime: float = PROBE_LIFETIME_S,
    ) -> None:
        if interval <= 0:
            raise ValueError("the sampling interval must be positive")
        self.folder = folder
        self.targets = tuple(targets)
        self.interval = interval
        self.timeout = timeout if timeout is not None else min(5.0, max(0.5, 0.9 * interval))
        self.probe_lifetime = probe_lifetime
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._grid0 = time.monotonic()
        self.states: dict[str, HostState] = {}
        self.error: BaseException | None = None
        #: one clear message per host whose sampling stopped (its file cannot be written)
        self.problems: list[str] = []

    # ---- lifecycle -------------------------------------------------------------------
    def start(self) -> None:
        """Start sampling in a background thread (returns at once)."""
        self._thread = threading.Thread(
            target=self._thread_main, name="gridbench-sampler", daemon=True
        )
        self._thread.start()
        self._ready.wait(10)

    def stop(self, timeout: float = 10.0) -> None:
        """Stop sampling; every sample taken is on disk already."""
        loop, ev = self._loop, self._stop
        if loop is not None and ev is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(ev.set)
        if self._thread is not None:
            self._thread.join(timeout)

    def _thread_main(self) -> None:
        try:
            asyncio.run(self.run())
        except BaseException as exc:  # a bug must not kill the run being measured
            self.error = exc
            log.warning("sampling stopped: %s", exc)
        finally:
            self._ready.set()

    async def run(self, stop: asyncio.Event | None = None) -> None:
        """Sample until ``stop`` is set (or :meth:`stop` is called)."""
        self._loop = asyncio.get_running_loop()
        self._stop = stop or asyncio.Event()
        self.folder.mkdir(parents=True, exist_ok=True)
        self._ready.set()
        self._grid0 = time.monotonic()  # every host's ticks on one grid: one wake-up each
        tasks = [asyncio.create_task(self._host(t), name=f"sample-{t.name}") for t in self.targets]
        tasks.append(asyncio.create_task(self._watch(), name="sample-watch"))
        try:
            await self._stop.wait()
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    # ---- records ---------------------------------------------------------------------
    async def _write(self, st: HostState, obj: dict[str, Any]) -> None:
        await asyncio.to_thread(append_record, st.path, _clean(obj))
        st.written += 1

    async def _warn(self, st: HostState, problem: Problem, *, once: bool = True) -> None:
        if once and problem.code in st.warned:
            return
        st.warned.add(problem.code)
        log.warning("sampling %s: %s", st.target.name, problem.text)
        await self._write(
            st,
            {
                "kind": "warning",
                "host": st.target.name,
                "t": time.time(),
                "code": problem.code,
                "text": problem.text,
            },
        )

    # ---- one host --------------------------------------------------------------------
    async def _host(self, target: HostTarget) -> None:
        st = self.states[target.name] = HostState.begin(target, self.folder)
        try:
            await self._sample_host(st)
        except (GridbenchError, OSError) as exc:
            # the host's own file cannot take a record (a planted link, not a regular file,
            # a full disk): say so once, loudly, and let the run go on
            err = resource_error(exc, st.path) if isinstance(exc, OSError) else exc
            text = f"sampling of {target.name} stopped: {err or exc}"
            self.problems.append(text)
            log.warning("%s", text)

    async def _sample_host(self, st: HostState) -> None:
        target = st.target
        await self._write(
            st,
            {
                "kind": "start",
                "host": target.name,
                "t": time.time(),
                "interval_s": self.interval,
                "exporter": target.exporter,
                "ssh": target.reachable_by_ssh,
                "local": target.address is None,
                "processes": list(target.processes),
            },
        )
        jobs = []
        if target.address is None:
            jobs.append(self._local(st))
        else:
            if target.exporter:
                jobs.append(self._exporter(st, target.exporter))
            jobs.append(self._ssh(st))
        await asyncio.gather(*jobs)

    async def _ticks(self) -> Any:
        """Sleep to the next tick of a grid ``interval`` apart (skipping missed ones)."""
        nxt = self._grid0
        while True:
            yield
            nxt += self.interval
            now = time.monotonic()
            if nxt < now:
                nxt = now + self.interval - ((now - nxt) % self.interval)
            await asyncio.sleep(nxt - now)

    async def _watch(self) -> None:
        """Warn when a host has given no figures for a while (once per silence)."""
        silent = max(3.0, SILENT_INTERVALS * self.interval)
        while True:
            await asyncio.sleep(min(self.interval, 1.0))
            now = time.monotonic()
            for st in list(self.states.values()):
                if now - st.last_figures <= silent or st.silent_warned:
                    continue
                st.silent_warned = True
                why = "exporter down" if st.target.exporter else "no exporter"
                why += " and no SSH" if not st.ssh_ok else " and the SSH probe silent"
                text = f"nothing sampled on {st.target.name}: {why}"
                await self._warn(st, Problem("nothing-sampled", text), once=False)

    async def _bad_values(self, st: HostState, c: Counters) -> None:
        if c.bad:
            text = (
                f"{st.target.name} gave values no counter or gauge can have (not finite, or "
                f"negative) for {', '.join(c.bad)}: those figures are left out"
            )
            await self._warn(st, Problem("bad-values", text))

    async def _resets(self, st: HostState, figs: Figures) -> None:
        # a disk or an interface that goes (a container's veth) is marked in its sample
        # only; CPU seconds that go back are a reboot or a host that misreports
        if "cpu_seconds" in figs.reset:
            text = (
                f"the CPU counters of {st.target.name} went back (a reboot, or CPUs taken "
                "off): no CPU figures over that interval"
            )
            await self._warn(st, Problem("counter-reset", text))

    def _got_figures(self, st: HostState) -> None:
        st.last_figures = time.monotonic()
        st.silent_warned = False

    async def _exporter(self, st: HostState, url: str) -> None:
        from gridbench.hosts.sampling.deadline_http import deadline_client

        with deadline_client() as client:  # one per host: calls never overlap
            await self._scrapes(st, client, url)

    async def _scrapes(self, st: HostState, client: Any, url: str) -> None:
        """Scrape every tick (in a worker thread), a sample per scrape after the first.

        The sample's ``t`` is the host's own time of the scrape (``node_time_seconds``)
        moved onto the controller's clock by the offset (given, or the host's time minus
        the middle of the round trip of the quickest scrape so far); without the host's
        time, the middle of the round trip."""
        prev: Scrape | None = None
        async for _ in self._ticks():
            got = await asyncio.to_thread(scrape, client, url, self.timeout)
            if isinstance(got, Problem):
                if st.exporter_ok or got.code not in st.warned:
                    st.warned.discard(got.code)
                    await self._warn(st, got)
                st.exporter_ok, prev = False, None
                st.exporter_down.set()
                continue
            if not st.exporter_ok:
                st.warned.discard("exporter-down")
            st.exporter_ok = True
            st.exporter_down.clear()
            rtt = got.t_received - got.t_sent
            t, host_t, clock_problem = st.clock.place_scrape(
                got.counters.host_t, got.t_sent, got.t_received
            )
            if clock_problem is not None:
                await self._warn(st, clock_problem)
            if host_t is None and got.counters.host_t is not None:  # not to be believed
                got = Scrape(
                    dataclasses.replace(got.counters, host_t=None), got.t_sent, got.t_received
                )
            await self._bad_values(st, got.counters)
            if prev is not None:
                slack = (rtt + prev.t_received - prev.t_sent) / 2
                dt = interval_s(prev.counters.host_t, host_t, prev.t, got.t, slack)
                figs = rates(prev.counters, got.counters, dt)
                if isinstance(figs, Problem):
                    await self._warn(st, figs)
                else:
                    await self._resets(st, figs)
                    self._got_figures(st)
                    await self._write(
                        st,
                        {
                            "kind": "sample",
                            "host": st.target.name,
                            "source": "exporter",
                            "t": round(t, 6),
                            "t_mid": round(got.t, 6),
                            "host_t": host_t,
                            "rtt_s": round(rtt, 6),
                            "offset_s": st.clock.offset,
                            "offset_from": st.clock.offset_from,
                            **figs.to_json(),
                        },
                    )
            prev = got

    async def _ssh(self, st: HostState) -> None:
        """The probe over SSH, restarted (every 5 s at most) while it is needed."""
        t = st.target
        while True:
            if not t.processes and t.exporter and not st.exporter_down.is_set():
                await st.exporter_down.wait()  # the exporter does it all until it fails
                continue
            started = time.monotonic()
            prev: Counters | None = None
            lines = probe_lines(
                t.address or "",
                dict(t.ssh),
                t.python,
                self.interval,
                self.probe_lifetime,
                t.processes,
            )
            async with contextlib.aclosing(lines):  # the connection closed when left
                async for obj in lines:
                    if isinstance(obj, Problem):
                        st.ssh_ok = False
                        await self._warn(st, obj)
                        break
                    st.ssh_ok = True
                    st.warned.discard("ssh-failed")
                    prev = await self._probe_record(st, obj, prev, "ssh")
                    if not t.processes and st.exporter_ok:
                        break  # the exporter is back: it gives the figures
            st.ssh_ok = False
            await asyncio.sleep(max(0.0, 5.0 - (time.monotonic() - started)))

    async def _local(self, st: HostState) -> None:
        from gridbench.hosts.sampling.probe import Probe

        probe = Probe(list(st.target.processes))
        st.ssh_ok = True
        st.clock.offset, st.clock.offset_from = 0.0, "controller"
        prev: Counters | None = None
        async for _ in self._ticks():
            obj = await asyncio.to_thread(probe.sample)
            prev = await self._probe_record(st, obj, prev, "local")

    async def _probe_record(
        self, st: HostState, obj: dict[str, Any], prev: Counters | None, source: str
    ) -> Counters | None:
        """One probe line: the host's figures (unless the exporter gives them) and the
        processes, recorded; returns the counters for the next line's rates."""
        t_recv = time.time()
        cur = counters_from_json(obj.get("counters"))
        if isinstance(cur, Problem):
            await self._warn(st, cur)
            return prev
        line_t, st.line_t = st.line_t, t_recv
        t, host_t, clock_problem = st.clock.place_line(cur.host_t, t_recv)
        if clock_problem is not None:
            await self._warn(st, clock_problem)
        await self._bad_values(st, cur)
        if host_t is None and cur.host_t is not None:  # not to be believed: no rate from it
            cur = dataclasses.replace(cur, host_t=None)
        procs, dropped = clean_processes(obj.get("processes"))
        if dropped:
            text = f"the probe on {st.target.name} printed {dropped} process row(s) not its own"
            await self._warn(st, Problem("probe-malformed", text + ": left out"))
        base = {
            "host": st.target.name,
            "source": source,
            "t": round(t, 6),
            "host_t": host_t,
            "offset_s": st.clock.offset,
            "offset_from": st.clock.offset_from,
        }
        if st.exporter_ok:
            if procs:
                await self._write(st, {"kind": "processes", **base, "processes": procs})
            return cur
        if prev is not None:
            # a line's delay varies: the host's interval counts unless half one off
            dt = interval_s(prev.host_t, cur.host_t, line_t, t_recv, self.interval / 2)
            figs = rates(prev, cur, dt)
            if isinstance(figs, Problem):
                await self._warn(st, figs)
            else:
                await self._resets(st, figs)
                self._got_figures(st)
                await self._write(
                    st, {"kind": "sample", **base, **figs.to_json(), "processes": procs}
                )
        return cur


def sample_files(run: Path) -> list[Path]:
    """The sample files of a run folder (``RUN/samples/*.jsonl``), by host name."""
    folder = run / SAMPLES_DIR
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob("*.jsonl") if p.is_file() and not p.is_symlink())
