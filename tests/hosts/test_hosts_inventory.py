"""The inventory of hosts (docs/hosts.md): loading, line-numbered errors, did-you-mean."""

from __future__ import annotations

from pathlib import Path

import pytest

from gridbench.errors import GridbenchError, SpecError
from gridbench.hosts.check import offset_from
from gridbench.hosts.inventory import hosts_block, load_inventory, load_inventory_text
from gridbench.hosts.lab.build import parse_latency

TEXT = """\
hosts:
  lab-1:
    address: 10.0.0.2
    ssh: {username: root, port: 2222}
    roles: [client]
  lab-2:
    address: 10.0.0.3
    python: /opt/venv/bin/python
    roles: [server, storage-client]
    exporter: http://10.0.0.3:9100/metrics
"""


def test_an_inventory_names_each_host_by_its_key(tmp_path: Path) -> None:
    path = tmp_path / "hosts.yaml"
    path.write_text(TEXT)
    inv = load_inventory(path)
    assert list(inv.hosts) == ["lab-1", "lab-2"]
    h = inv.host("lab-1", "load.agents.hosts[0]")
    assert (h.name, h.address, h.ssh, h.interpreter) == (
        "lab-1",
        "10.0.0.2",
        {"username": "root", "port": 2222},
        "python3",
    )
    assert inv.hosts["lab-2"].interpreter == "/opt/venv/bin/python"
    assert [h.name for h in inv.with_role("server")] == ["lab-2"]


def test_an_unknown_host_is_one_error_with_a_did_you_mean(tmp_path: Path) -> None:
    path = tmp_path / "hosts.yaml"
    path.write_text(TEXT)
    inv = load_inventory(path)
    with pytest.raises(SpecError) as e:
        inv.host("lab2", "load.agents.hosts[1]")
    text = str(e.value)
    assert text.startswith("load.agents.hosts[1]: no host 'lab2' in ")
    assert str(path) in text
    assert "did you mean 'lab-2'?" in text
    assert "fix: use one of its hosts (lab-1, lab-2)" in text
    with pytest.raises(SpecError) as e:
        inv.host("storage", "io.clients[0]")
    assert "did you mean" not in str(e.value)  # nothing near: no guess


def test_a_malformed_inventory_names_its_line() -> None:
    bad = TEXT.replace("roles: [server, storage-client]", "roles: [sever]").replace(
        "    address: 10.0.0.2\n", "    adress: 10.0.0.2\n"
    )
    with pytest.raises(SpecError) as e:
        load_inventory_text(bad, "lab.yaml")
    text = str(e.value)
    assert "lab.yaml:9: field 'hosts.lab-2.roles.0'" in text
    assert "did you mean 'server'?" in text
    assert "lab.yaml:3: field 'hosts.lab-1.adress'" in text
    assert "did you mean 'address'?" in text
    with pytest.raises(SpecError, match="name: 'other'"):
        load_inventory_text("hosts: {a: {address: x, name: other}}", "x.yaml")
    with pytest.raises(SpecError, match="hosts"):
        load_inventory_text("hosts: {}", "x.yaml")


def test_a_specs_hosts_block_is_an_inventory() -> None:
    spec = "name: x\nload: {model: open}\n" + TEXT
    inv = hosts_block(spec, "spec.yaml")
    assert inv is not None and list(inv.hosts) == ["lab-1", "lab-2"]
    assert "spec.yaml" in inv.origin
    assert hosts_block("name: x\n", "spec.yaml") is None
    with pytest.raises(SpecError, match=r"spec\.yaml:5: field 'hosts.lab-1.adress'"):
        hosts_block("name: x\nhosts:\n  lab-1:\n    address: a\n    adress: b\n", "spec.yaml")


def test_the_four_timestamp_offset_takes_the_shortest_round_trip() -> None:
    ms = 1_000_000
    # (sent, their clock, received): their clock 5 ms ahead; the slow probe is ignored
    samples = [(0, 30 * ms, 40 * ms), (100 * ms, 106 * ms, 102 * ms)]
    off, bound = offset_from(samples)
    assert off == pytest.approx(5.0) and bound == pytest.approx(1.0)


def test_latency_paths_are_read_or_refused() -> None:
    p = parse_latency("lab-2:50ms")
    assert (p.host, p.ports, p.delay_ms) == ("lab-2", (22, 5201), 50.0)
    p = parse_latency("lab-3:7000,7001:0.1")
    assert (p.host, p.ports, p.delay_ms) == ("lab-3", (7000, 7001), 100.0)
    for bad in ("lab-2", "lab-2:x:50ms", ":50ms", "lab-2:0ms"):
        with pytest.raises(GridbenchError, match="--latency"):
            parse_latency(bad)


SPEC = """\
name: agents-on-lab
backend: {type: noop}
load:
  model: open
  rate: 10/s
  agents:
    inventory: INVENTORY
    hosts: [lab-1, HOST]
trial: {duration: 5s}
"""


def test_job_flow_agents_name_inventory_hosts(tmp_path: Path) -> None:
    from gridbench.jobflow.spec.load import load_spec

    inv = tmp_path / "hosts.yaml"
    inv.write_text(
        "hosts:\n"
        "  lab-1: {address: 10.0.0.2, python: /opt/v/bin/python, ssh: {username: root}}\n"
        "  lab-2: {address: 10.0.0.3, python: /opt/v/bin/python, ssh: {username: root}}\n"
    )
    spec_path = tmp_path / "spec.yaml"
    spec_path.write_text(SPEC.replace("INVENTORY", str(inv)).replace("HOST", "lab2"))
    with pytest.raises(SpecError) as e:  # at validate, before anything starts
        load_spec(spec_path)
    text = str(e.value)
    assert f"{spec_path}:8: field 'load.agents.hosts.1': no host 'lab2'" in text
    assert "did you mean 'lab-2'?" in text
    spec_path.write_text(SPEC.replace("INVENTORY", str(inv)).replace("HOST", "lab-2"))
    spec, data = load_spec(spec_path)
    block = spec.load.remote_agents
    assert block is not None and data["load"]["agents"]["hosts"] == ["lab-1", "lab-2"]
    got = block.resolved()
    assert (got.hosts, got.venv, got.ssh_options) == (
        ["10.0.0.2", "10.0.0.3"],
        "/opt/v",
        {"username": "root"},
    )
    # the old form, addresses with ssh_options and venv, is unchanged
    old = SPEC.replace("    inventory: INVENTORY\n", "    venv: /opt/v\n").replace("HOST", "h2")
    spec_path.write_text(old)
    spec, _ = load_spec(spec_path)
    assert spec.load.remote_agents is not None
    assert spec.load.remote_agents.resolved().hosts == ["lab-1", "h2"]
