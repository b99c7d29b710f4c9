"""The resilience faults while clients on other hosts write (``resilience.hosts``): the
writers run on two lab hosts (tests/lab_fixtures.py) into the replica-3 GlusterFS volume
(tests/gluster_fixtures.py; FUSE-mounted on this machine, and the lab's namespaces share its
mounts), a brick is killed and restarted under their load, and every file the hosts were
told was written is read back here and checked: one of them removed through the mount
before the check is named lost, every other one passes.

The volume and the lab: conftest puts this module in the "gluster" group, whose worker
makes the session lab too (as test_io_clients_gluster.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gluster_fixtures import GlusterVolume
from gridbench.io.load import load_io_spec_text
from gridbench.io.metrics import analyze_and_write
from gridbench.io.report import build_report
from gridbench.io.runner import IoRunner
from lab_fixtures import Lab


def test_faults_while_two_client_hosts_write_every_byte_checked(
    lab: Lab,
    gluster_volume: GlusterVolume,
    tmp_path: Path,
) -> None:
    v = gluster_volume
    hosts = [lab.host(1).name, lab.host(2).name]
    text = (
        f"name: res-hosts\ntargets: [{{name: gfs, path: {v.mount}, force: true}}]\n"
        "repetitions: 1\niozone: {enabled: false}\n"
        f"resilience:\n  target: gfs\n  system: {{volume: {v.volume}, cli: [{', '.join(v.cli)}]}}\n"
        f"  duration: 7s\n  writers: 1\n  file_size: 256k\n"
        f"  hosts: [{', '.join(hosts)}]\n  inventory: {lab.inventory}\n"
        "  faults:\n    - {at: 2s, action: kill, server: brick2}\n"
        "    - {at: 4s, action: restart, server: brick2}\n"
    )
    spec, data = load_io_spec_text(text, "io.yaml")
    removed: list[str] = []

    def progress(msg: str) -> None:
        # before the check: one file lab-2 wrote disappears (through the mount)
        if "integrity check of" in msg:
            [run] = list((tmp_path / "results").iterdir())
            recs = [json.loads(x) for x in (run / "resilience.jsonl").read_text().splitlines()]
            mine = [r for r in recs if r.get("event") == "write" and r.get("host") == hosts[1]]
            victim = next(r for r in mine if r["ok"])
            [wd] = list(Path(v.mount).glob("gridbench-io-*"))
            (wd / "resilience" / victim["file"]).unlink()
            removed.append(victim["file"])

    run = IoRunner(spec, data, tmp_path / "results", progress=progress).execute()
    m = analyze_and_write(run)
    r = m["resilience"]
    records: list[dict[str, Any]] = [
        json.loads(x) for x in (run.path / "resilience.jsonl").read_text().splitlines()
    ]
    writes = [x for x in records if x.get("event") == "write"]
    # the writes came from the two hosts (their processes ran in the hosts' namespaces)
    started = [x for x in records if x.get("event") == "host_writers"]
    assert [(x["host"], x["how"]) for x in started] == [(h, "netns") for h in hosts]
    assert {x["host"] for x in writes} == set(hosts)
    assert all(x["file"].startswith(f"{x['host']}-w00-") for x in writes)
    # the brick was killed and restarted while both hosts wrote: each host had started
    # writing before the kill and finished files after the restart
    faults = {f["action"]: f["t"] for f in r["faults"]}
    assert all(f["ok"] for f in r["faults"]), r["faults"]
    for h in hosts:
        mine = [x for x in writes if x["host"] == h and x["ok"]]
        assert min(x["t0"] for x in mine) < faults["kill"], (h, faults)
        assert max(x["t1"] for x in mine) > faults["restart"], (h, faults)
    # every acknowledged file of both hosts was read back here: the removed one is lost
    acked = [x for x in writes if x["ok"]]
    integ = r["integrity"]
    assert removed and integ["files"] == len(acked) == r["writes"]
    assert integ["bytes"] == sum(x["bytes"] for x in acked) == r["bytes_written"]
    assert [(b["file"], b["problem"]) for b in integ["bad"]] == [(removed[0], "lost")]
    assert integ["ok"] is False and m["resilience_ok"] is False
    # per host: what each wrote, adding up to the whole
    per = {h["host"]: h for h in r["hosts"]}
    assert list(per) == hosts and not r["hosts_lost"]
    for h in hosts:
        assert per[h]["writes"] == sum(1 for x in acked if x["host"] == h) > 3
    assert sum(h["bytes_written"] for h in r["hosts"]) == r["bytes_written"]
    rep = build_report(m)
    assert "resilience-hosts" in {s.id for s in rep.sections}
    assert any(removed[0] in f.text for f in rep.headline.findings)
