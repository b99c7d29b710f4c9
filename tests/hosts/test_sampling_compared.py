"""What every family writes of its samples, compares and flags (gridbench.hosts.sampling.
compared): the per-phase figures in metrics.json, ``gridbench compare`` and ``history``
over two real sampled runs (net: flat figures; job flow: swept, a value per trial), the
client-bound rule on a real run whose client host is made busy, and a host's known clock
offset (``clock_offset_ms``, written by ``gridbench hosts check --write``) used by the
sampler."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import BIN, cli_env
from gridbench.errors import EXIT_INVALID
from gridbench.hosts.inventory import load_inventory, load_inventory_text
from gridbench.hosts.sampling.analysis import read_samples
from gridbench.hosts.sampling.compared import (
    CLIENT_BOUND,
    client_bound_flag,
    phase_values,
    sampling_figures,
    swept_sampling_figures,
    with_sampling_metrics,
)
from gridbench.hosts.sampling.sampler import Sampler
from gridbench.hosts.sampling.spec import SamplingSpec, host_targets
from lab_fixtures import Lab
from sampling_fixtures import EXPORTER, Exporter, exporter, free_port, stop, wait_port  # noqa: F401

NET_SPEC = """
name: sampled-net-cmp
environments: [process]
pingpong:
  transports: [tcp]
  sizes: {min: 0, max: 64}
  tests: 3
  round_trips: 10
floor:
  duration: 1s
sampling:
  hosts: [local]
  interval: 0.2s
"""

JOBFLOW_SPEC = """
name: {name}
backend: {{type: local, options: {{slots: 2}}}}
job: {{command: [/bin/sleep, "0.1"]}}
load: {{model: open, rate: 4/s}}
trials: {trials}
trial: {{duration: {duration}}}
sampling:
  hosts: [local{more}]
  interval: 0.5s
  client: local
{inventory}"""


def run(*args: str, results: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN), *args],
        env=cli_env(results),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _runs(results: Path) -> list[Path]:
    return sorted(p.parent for p in results.glob("*/experiment.json"))


# -- pure --------------------------------------------------------------------------------


def _sampled(flagged: bool) -> dict[str, object]:
    return {
        "hosts": ["local", "srv"],
        "client": "local",
        "phases": [
            {"phase": "p00-t00", "host": "local", "cpu_busy_mean": 95.0,
             "cpu_busy_values": [94.0, 96.0]},
            {"phase": "p00-t00", "host": "srv", "cpu_busy_mean": 3.0},
            {"phase": "p00-t01", "host": "local", "cpu_busy_mean": 91.0, "cpu_busy_values": []},
            {"phase": "bad", "host": 3},
        ],
        "client_bound": {"flagged": flagged, "phase": "p00-t00" if flagged else None,
                         "reason": "client-bound: ..."},
    }  # fmt: skip


def test_figures_flag_and_values_from_the_sampling_object() -> None:
    metrics = {"sampling": _sampled(True)}
    figs = {f.key: f for f in sampling_figures(metrics)}
    assert set(figs) == {
        "sampling.local.p00-t00.cpu_busy_pct",
        "sampling.srv.p00-t00.cpu_busy_pct",
        "sampling.local.p00-t01.cpu_busy_pct",
    }
    assert figs["sampling.local.p00-t00.cpu_busy_pct"].samples == (94.0, 96.0)
    assert figs["sampling.local.p00-t01.cpu_busy_pct"].samples == (91.0,)  # the mean
    assert figs["sampling.srv.p00-t00.cpu_busy_pct"].higher_is_better is False
    swept = swept_sampling_figures([metrics, {"sampling": {"phases": [
        {"phase": "p00-t00", "host": "local", "cpu_busy_mean": 10.0}]}}])  # fmt: skip
    assert [f.key for f in swept] == ["sampling.local.cpu_busy_pct"]
    assert phase_values(metrics, "sampling.local.cpu_busy_pct", ["p00-t01", "p00-t00"]) == [
        91.0,
        95.0,
    ]
    assert phase_values(metrics, "latency.overall.p99", ["p00-t00"]) == []
    flag = client_bound_flag(metrics["sampling"])
    assert flag is not None and flag["rule"] == CLIENT_BOUND and flag["phase"] == "p00-t00"
    assert client_bound_flag(_sampled(False)) is None
    doc = {"validity": {"valid": True, "flags": [], "rules": []}, "x": 1}
    out = with_sampling_metrics(doc, _sampled(True))
    assert out["validity"]["valid"] is False and out["validity"]["flags"][0]["rule"] == CLIENT_BOUND
    assert out["sampling"]["hosts"] == ["local", "srv"] and doc["validity"]["valid"] is True
    assert with_sampling_metrics(doc, _sampled(False))["validity"]["valid"] is True
    assert with_sampling_metrics(doc, None) is doc


def test_every_sampling_family_lists_the_client_bound_rule() -> None:
    from gridbench.family import family

    for name in ("jobflow", "io", "net"):
        assert CLIENT_BOUND in [r.name for r in family(name).validity_rules], name


# -- compare and history over real runs --------------------------------------------------


def test_compare_and_history_of_two_sampled_net_runs(tmp_path: Path) -> None:
    spec = tmp_path / "net.yaml"
    spec.write_text(NET_SPEC)
    results = tmp_path / "results"
    for _ in range(2):
        r = run("net", "run", str(spec), results=results)
        assert r.returncode in (0, 1), r.stdout[-2000:] + r.stderr[-3000:]
    a, b = _runs(results)
    metrics = json.loads((a / "metrics.json").read_text())
    rows = metrics["sampling"]["phases"]
    assert rows and all(r["host"] == "local" for r in rows)
    assert all(len(r["cpu_busy_values"]) == r["samples"] for r in rows if r["samples"])
    r = run("compare", a.name, b.name, "--metric", "sampling.*", "--json", results=results)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    cmp = json.loads(r.stdout)
    found = cmp["points"][0]["metrics"]
    keys = [k for k in found if k.startswith("sampling.local.") and k.endswith(".cpu_busy_pct")]
    assert keys, list(found)
    diff = found[keys[0]]["diffs"][0]
    assert diff["experiment"] == b.name and isinstance(diff["difference"], float), diff
    shown = run("compare", a.name, b.name, "--metric", keys[0], results=results)
    assert shown.returncode == 0 and "sampling.local." in shown.stdout, shown.stdout
    h = run("history", b.name, "--metric", keys[0], "--json", results=results)
    assert h.returncode == 0, h.stdout[-2000:] + h.stderr[-3000:]
    entries = json.loads(h.stdout)["entries"]
    assert [e["experiment"] for e in entries] == [a.name, b.name]
    assert all(v["value"] is not None for e in entries for v in e["values"].values())


def test_compare_and_history_of_two_sampled_job_flow_runs(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        JOBFLOW_SPEC.format(name="sampled-cmp", trials=2, duration="1.5s", more="", inventory="")
    )
    results = tmp_path / "results"
    for _ in range(2):
        r = run("run", str(spec), "--yes", results=results)
        assert r.returncode in (0, 1), r.stdout[-2000:] + r.stderr[-3000:]
    a, b = _runs(results)
    key = "sampling.local.cpu_busy_pct"
    r = run("compare", a.name, b.name, "--metric", key, "--json", results=results)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    cmp = json.loads(r.stdout)
    assert [m["metric"] for m in cmp["metrics"]] == [key]
    got = cmp["points"][0]["metrics"][key]
    assert [v["n"] for v in got["values"]] == [2, 2]  # a value per trial
    assert isinstance(got["diffs"][0]["difference"], float), got
    shown = run("compare", a.name, b.name, "--metric", key, results=results)
    assert shown.returncode == 0 and "sampled" in shown.stdout, shown.stdout
    h = run("history", b.name, "--metric", key, "--json", results=results)
    assert h.returncode == 0, h.stdout[-2000:] + h.stderr[-3000:]
    entries = json.loads(h.stdout)["entries"]
    assert [e["experiment"] for e in entries] == [a.name, b.name]
    assert all(e["values"] for e in entries), entries


# -- the client-bound rule on a real run ---------------------------------------------------


class IdleProc:
    """A procfs for node_exporter (``--path.procfs``) of an idle host: /proc's own files,
    but /proc/stat's CPU lines count idle time only, a second per second per CPU."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True)
        for name in ("meminfo", "loadavg"):
            shutil.copyfile(f"/proc/{name}", root / name)
        self.lines = Path("/proc/stat").read_text().splitlines()
        self.ticks = 0
        self.stop = threading.Event()
        self._write()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _write(self) -> None:
        idle = 1_000_000 + self.ticks
        out = []
        for line in self.lines:
            if line.startswith("cpu"):
                name = line.split()[0]
                n = 1 if name != "cpu" else os.cpu_count() or 1
                line = f"{name} 1000 0 1000 {idle * n} 0 0 0 0 0 0"
            out.append(line)
        tmp = self.root / "stat.tmp"
        tmp.write_text("\n".join(out) + "\n")
        tmp.replace(self.root / "stat")

    def _loop(self) -> None:
        while not self.stop.wait(0.1):
            self.ticks += 10  # USER_HZ 100: 0.1 s
            self._write()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)


@pytest.fixture
def idle_exporter(tmp_path: Path) -> Iterator[str]:
    """node_exporter on loopback reading the procfs of an idle host (:class:`IdleProc`):
    the server host that is not busy."""
    exe = shutil.which(EXPORTER)
    if exe is None:
        pytest.fail(f"{EXPORTER} is not installed (scripts/debian-packages.txt lists it)")
    proc_dir = IdleProc(tmp_path / "idle-proc")
    port = free_port()
    log = tmp_path / "idle-exporter.log"
    with log.open("wb") as lf:
        proc = subprocess.Popen(
            [exe, f"--web.listen-address=127.0.0.1:{port}", f"--path.procfs={proc_dir.root}"],
            stdout=lf,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_port(port, proc, log)
        yield f"http://127.0.0.1:{port}/metrics"
    finally:
        stop(proc)
        proc_dir.close()


def test_a_busy_client_host_makes_the_run_client_bound(tmp_path: Path, idle_exporter: str) -> None:
    inv = tmp_path / "inventory.yaml"
    inv.write_text(f'hosts:\n  srv: {{address: 127.0.0.1, exporter: "{idle_exporter}"}}\n')
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        JOBFLOW_SPEC.format(
            name="client-bound",
            trials=1,
            duration="4s",
            more=", srv",
            inventory=f"  inventory: {inv}\n",
        )
    )
    results = tmp_path / "results"
    loop = "import os\nos.nice(19)\nwhile True: pass"  # busy, yet last in line for the CPU
    busy = [
        subprocess.Popen([sys.executable, "-c", loop]) for _ in range((os.cpu_count() or 1) + 1)
    ]
    try:
        r = run("run", str(spec), "--yes", "--fail-invalid", results=results)
    finally:
        for p in busy:
            p.kill()
            p.wait(10)
    (one,) = _runs(results)
    metrics = json.loads((one / "metrics.json").read_text())
    by_host = {row["host"]: row for row in metrics["sampling"]["phases"]}
    assert by_host["local"]["cpu_busy_mean"] >= 90.0, by_host
    assert (by_host["srv"]["cpu_busy_mean"] or 0.0) < 5.0, by_host
    assert metrics["sampling"]["client_bound"]["flagged"] is True
    assert metrics["validity"]["valid"] is False
    assert any(CLIENT_BOUND in reason for reason in metrics["validity"]["reasons"])
    assert r.returncode == EXIT_INVALID, r.stdout[-2000:] + r.stderr[-3000:]
    assert "client-bound" in r.stdout, r.stdout[-3000:]


# -- a known clock offset --------------------------------------------------------------------


async def test_a_known_clock_offset_is_used_by_the_sampler(
    tmp_path: Path,
    exporter: Exporter,  # noqa: F811
) -> None:
    inv = load_inventory_text(
        f'hosts:\n  exp-1: {{address: 127.0.0.1, exporter: "{exporter.url}", '
        "clock_offset_ms: 250.0}\n"
    )
    spec = SamplingSpec.model_validate({"hosts": ["exp-1"], "interval": "0.2s"})
    [target] = host_targets(spec, inv)
    assert target.offset_s == 0.25
    assert host_targets(spec, inv, offsets={"exp-1": 0.5})[0].offset_s == 0.5  # given wins
    sampler = Sampler(tmp_path / "samples", [target], spec.interval)
    ev = asyncio.Event()
    task = asyncio.create_task(sampler.run(ev))
    await asyncio.sleep(1.5)
    ev.set()
    await asyncio.wait_for(task, 15)
    lines = [json.loads(x) for x in (tmp_path / "samples" / "exp-1.jsonl").read_text().splitlines()]
    samples = [x for x in lines if x["kind"] == "sample"]
    assert len(samples) >= 3, lines
    for x in samples:
        assert x["offset_from"] == "given" and x["offset_s"] == 0.25
        assert abs(x["t"] - (x["host_t"] - 0.25)) < 1e-3  # the host's time moved by it
    assert not read_samples(tmp_path).hosts.is_empty()


def test_hosts_check_writes_each_offset(tmp_path: Path, lab: Lab) -> None:
    inv = tmp_path / "inventory.yaml"
    text = "# the lab's hosts\n" + lab.inventory.read_text()
    inv.write_text(text)
    r = run(
        "hosts", "check", str(inv), "--host", lab.host(1).name, "--write", results=tmp_path / "r"
    )
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "clock_offset_ms written" in r.stdout, r.stdout
    after = inv.read_text()
    assert after.startswith("# the lab's hosts\n")  # the file edited, not rewritten
    got = load_inventory(inv)
    offset = got.hosts[lab.host(1).name].clock_offset_ms
    assert offset is not None and abs(offset) < 50.0  # one machine, one clock
    assert got.hosts[lab.host(2).name].clock_offset_ms is None  # not checked


def test_io_and_net_show_a_client_bound_flag_and_io_is_comparable() -> None:
    from gridbench.family import Comparable, family
    from gridbench.io.analysis import matrix
    from gridbench.io.report import build_report as io_report
    from gridbench.io.validity import validity as io_validity
    from gridbench.messaging.report import _validity_findings as net_findings
    from gridbench.sections import Table
    from gridbench.store.layout import RunDir

    io = family("io")
    assert isinstance(io, Comparable)
    metrics = with_sampling_metrics(
        {
            "schema": "gridbench.io/1",
            "name": "x",
            "status": "completed",
            "baseline": None,
            "repetitions": 1,
            "iozone": {"file_size": 2**20, "record_size": 2**16, "include_flush": False},
            "targets": [],
            "matrix": matrix([], None),
            "thresholds": [],
            "thresholds_ok": True,
            "consistency_ok": True,
            "validity": io_validity([], []),
        },
        _sampled(True),
    )
    assert [f.key for f in io.figures(RunDir(Path("/nonexistent")), metrics)][:1] == [
        "sampling.local.p00-t00.cpu_busy_pct"
    ]
    report = io_report(metrics)
    [table] = [s for s in report.sections if isinstance(s, Table) and s.id == "validity"]
    assert table.text is not None and table.text[0][0] == CLIENT_BOUND
    assert "local during p00-t00" in table.text[0]
    assert any("client-bound" in f.text for f in report.headline.findings)
    assert [f.status for f in net_findings(metrics)] == ["warn"]
