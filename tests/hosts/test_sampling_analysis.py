"""Samples + phases → per-phase figures, the client-bound rule, the report's sections and
the sampling: block (pure: no daemon)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from gridbench.errors import SpecError
from gridbench.hosts.inventory import load_inventory_text
from gridbench.hosts.sampling.analysis import (
    Phase,
    client_bound,
    phase_figures,
    process_figures,
    read_samples,
    samples_from_records,
)
from gridbench.hosts.sampling.report import sampling_sections
from gridbench.hosts.sampling.spec import SamplingSpec, host_targets
from gridbench.sections import Chart, Statements, Table


def _sample(host: str, t: float, busy: float, mem: float = 1e9, **kw: Any) -> dict[str, Any]:
    return {
        "kind": "sample",
        "host": host,
        "source": "exporter",
        "t": t,
        "interval_s": 1.0,
        "cpu_busy": busy,
        "mem_used": mem,
        "load1": busy / 50,
        "net_rx_bps": 100.0,
        **kw,
    }


def _records() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(1, 21):  # 20 s: the client saturates in the second phase, the server never
        t = 1000.0 + i
        out.append(_sample("client", t, 40.0 if i <= 10 else 95.0))
        out.append(
            _sample(
                "server",
                t,
                30.0 if i <= 10 else 60.0,
                mem=2e9,
                processes=[
                    {
                        "label": "slurmctld",
                        "pid": 7,
                        "cpu_percent": 10.0 * (i > 10),
                        "rss_bytes": 5e6,
                        "state": "running",
                    }
                ],
            )
        )
    out.append(
        {
            "kind": "warning",
            "host": "server",
            "t": 1005.0,
            "code": "exporter-down",
            "text": "the exporter at X did not answer in 1 s",
        }
    )
    return out


PHASES = [Phase("rate 1", 1000.0, 1010.5), Phase("rate 2", 1010.5, 1021.0)]


def test_per_phase_figures() -> None:
    s = samples_from_records(_records())
    f = phase_figures(s, PHASES)
    rows = {(r["phase"], r["host"]): r for r in f.iter_rows(named=True)}
    assert rows[("rate 1", "client")]["cpu_busy_mean"] == pytest.approx(40.0)
    assert rows[("rate 2", "client")]["cpu_busy_max"] == pytest.approx(95.0)
    assert rows[("rate 2", "server")]["mem_used_max"] == 2e9
    assert rows[("rate 1", "server")]["samples"] == 10
    assert rows[("rate 1", "client")]["net_rx_bps"] == 100.0
    p = process_figures(s, PHASES)
    prow = {r["phase"]: r for r in p.iter_rows(named=True)}
    assert prow["rate 1"]["cpu_mean"] == 0.0 and prow["rate 2"]["cpu_mean"] == 10.0
    assert prow["rate 2"]["rss_max"] == 5e6


def test_client_bound_rule() -> None:
    s = samples_from_records(_records())
    f = phase_figures(s, PHASES)
    got = client_bound(f, PHASES, "client", ["server"])
    assert got.flagged and got.phase == "rate 2" and "client-bound" in got.reason
    # the server saturating first (or with it) clears the client
    assert not client_bound(f, PHASES, "client", ["server"], threshold=50.0).flagged
    assert not client_bound(f, PHASES, "nobody", ["server"]).flagged


def test_sections_chart_tables_and_notes() -> None:
    s = samples_from_records(_records())
    secs = sampling_sections(s, PHASES, client="client", servers=["server"])
    charts = [x for x in secs if isinstance(x, Chart)]
    tables = [x for x in secs if isinstance(x, Table)]
    notes = [x for x in secs if isinstance(x, Statements)]
    assert len(charts) == 1
    layout = charts[0].figure["layout"]
    assert len(layout["shapes"]) == 2  # each phase marked
    assert [a["text"] for a in layout["annotations"]] == ["rate 1", "rate 2"]
    assert {t.title for t in tables} >= {
        "Hosts during rate 1",
        "Hosts during rate 2",
        "Processes during rate 2",
    }
    assert notes and any("client-bound" in line for _, line in notes[0].lines)
    assert any("exporter-down" in line for _, line in notes[0].lines)
    assert sampling_sections(samples_from_records([]), PHASES) == []


def test_foreign_records_never_raise(tmp_path: Path) -> None:
    hostile: list[Any] = [
        [],
        1,
        None,
        {"kind": "sample"},
        {"kind": "sample", "host": 5, "t": 1},
        {"kind": "sample", "host": "h", "t": "soon", "cpu_busy": 5},
        {"kind": "sample", "host": "h", "t": 1.0, "cpu_busy": True, "processes": [1, {"pid": 3}]},
        {"kind": "processes", "host": "h", "t": 2.0, "processes": [{"label": "x", "pid": "1"}]},
    ]
    s = samples_from_records(hostile)
    assert s.hosts.height == 1 and s.hosts["cpu_busy"].to_list() == [None]
    assert s.processes.height == 1 and s.processes["pid"].to_list() == [None]
    d = tmp_path / "samples"
    d.mkdir()
    (d / "h.jsonl").write_text('{"kind": "sample", "host": "h", "t": 1}\nnot json\n{"torn')
    s = read_samples(tmp_path)
    assert s.hosts.height == 1 and s.bad_lines == 1


INVENTORY = """
hosts:
  lab-1: {address: 10.247.3.2, exporter: "http://10.247.3.2:9100/metrics"}
  lab-2: {address: 10.247.3.3, ssh: {username: root}, python: /opt/venv/bin/python}
"""


def test_the_sampling_block() -> None:
    spec = SamplingSpec.model_validate(
        {
            "hosts": ["local", "lab-2"],
            "interval": "500ms",
            "processes": [{"host": "lab-2", "name": "slurmctld"}, {"pid": 12, "label": "ARC"}],
        }
    )
    assert spec.interval == 0.5
    inv = load_inventory_text(INVENTORY)
    local, lab2 = host_targets(spec, inv)
    assert local.address is None and local.processes == ({"label": "ARC", "pid": 12},)
    assert lab2.address == "10.247.3.3" and lab2.python == "/opt/venv/bin/python"
    assert lab2.exporter is None and lab2.processes == (
        {"label": "slurmctld", "name": "slurmctld"},
    )
    with pytest.raises(SpecError, match="did you mean"):
        host_targets(SamplingSpec(hosts=["lab-11"]), inv)
    with pytest.raises(SpecError, match="no inventory"):
        host_targets(SamplingSpec(hosts=["lab-1"]), None)
    with pytest.raises(ValidationError, match=r"not in sampling\.hosts"):
        SamplingSpec.model_validate({"hosts": ["local"], "processes": [{"host": "x", "pid": 1}]})
    with pytest.raises(ValidationError, match="each host once"):
        SamplingSpec.model_validate({"hosts": ["local", "local"]})
    with pytest.raises(ValidationError):
        SamplingSpec.model_validate({"hosts": ["../etc"]})
