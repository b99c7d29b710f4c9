"""fio from 3 lab hosts at once onto one GlusterFS volume (the resilience tests' replica-3
volume, tests/gluster_fixtures.py), against a local directory as the baseline: per-client
rows and the aggregate, the two clients reading one file, in metrics and report.

The volume is FUSE-mounted on this machine; the lab's namespaces share its mounts, so each
host's fio server writes through that one mount (the hosts' traffic to the bricks does not
cross their own links). This test uses the volume and the lab: conftest puts it in the
"gluster" group, whose worker makes the session lab too."""

from __future__ import annotations

import json
from pathlib import Path

from gluster_fixtures import GlusterVolume
from gridbench.io.load import load_io_spec_text
from gridbench.io.metrics import analyze_and_write
from gridbench.io.report import build_report
from gridbench.io.runner import IoRunner
from lab_fixtures import Lab
from test_io_clients import clients_spec, servers_left


def test_three_client_hosts_onto_one_glusterfs_volume(
    lab: Lab,
    gluster_volume: GlusterVolume,
    tmp_path: Path,
) -> None:
    (tmp_path / "local").mkdir()
    targets = (
        f"targets: [{{name: local, path: {tmp_path / 'local'}}}, "
        f"{{name: gfs, path: {gluster_volume.mount}, force: true}}]\nbaseline: local"
    )
    text = clients_spec(lab, targets, "  counts: [1, 3]\n  compare_hosts: false\n")
    spec, data = load_io_spec_text(text, "io.yaml")
    run = IoRunner(spec, data, tmp_path / "results").execute()
    metrics = analyze_and_write(run)
    names = [f"{lab.name}-{k}" for k in (1, 2, 3)]
    addresses = {lab.host(k).address: f"{lab.name}-{k}" for k in (1, 2, 3)}
    c = metrics["clients"]
    gfs = {(e["test"], e["clients"]): e for e in c["series"] if e["target"] == "gfs"}
    assert set(gfs) == {("write", 1), ("read", 1), ("write", 3), ("read", 3)}
    for test in ("write", "read"):
        three = gfs[(test, 3)]
        assert three["hosts"] == names
        assert sorted(three["per_client_kbps"]) == names
        # the aggregate is the bytes of the three clients over the slowest one's run time
        mine = [
            json.loads(x)
            for x in (run.path / "clients.jsonl").read_text().splitlines()
            if '"gfs"' in x and f'"test": "{test}"' in x and '"clients": 3' in x
        ]
        assert sorted(r["host"] for r in mine) == names
        expect = sum(r["bytes"] for r in mine) / 1024 / max(r["runtime_s"] for r in mine)
        assert abs(three["last_done_kbps"]["mean"] - expect) <= 1e-6 * expect
        assert three["sum_kbps"]["mean"] == sum(r["kbps"] for r in mine)
        assert three["speedup"] is not None  # against the local directory at N = 3
        assert three["lat_ms"]["p99"] > 0
    # every host's figures came from its own fio server (fio names the client's address)
    raw = (run.path / "raw").glob("*-gfs-r0-series3-write.json")
    text_out = next(raw).read_text()
    assert all(f'"hostname" : "{a}"' in text_out for a in addresses)
    same = [e for e in c["same_file"] if e["target"] == "gfs"]
    assert [sorted(e["per_client_kbps"]) for e in same] == [names[:2]]
    assert not c["lost"]
    report = build_report(metrics)
    ids = {getattr(s, "id", None) for s in report.sections}
    assert {"clients-series", "clients-per-client", "clients-same-file"} <= ids
    assert not servers_left(lab)
    # nothing of the run's stays on the volume
    assert not list(Path(gluster_volume.mount).glob("gridbench-io-*"))
