"""fio from many client hosts (the io ``clients:`` block) on the suite's lab: fio --server
started by gridbench in each lab host's namespace, fio --client from here. The target is a
directory on this machine's file system, which every lab namespace shares (the GlusterFS
run is test_io_clients_gluster.py). A client host killed mid-run is named, the rest kept;
host names the inventory lacks are refused at validate with a did-you-mean."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from gridbench.io.load import load_io_spec_text
from gridbench.io.metrics import analyze_and_write
from gridbench.io.runner import IoRunner
from lab_fixtures import Lab


def clients_spec(lab: Lab, targets: str, body: str, name: str = "clients") -> str:
    hosts = ", ".join(f"{lab.name}-{k}" for k in (1, 2, 3))
    return (
        f"name: {name}\n{targets}\nrepetitions: 1\ncache: none\n"
        "iozone: {enabled: false, file_size: 4M, record_size: 128k}\n"
        f"clients:\n  inventory: {lab.inventory}\n  hosts: [{hosts}]\n{body}"
    )


def fio_servers_in(netns: str) -> list[int]:
    """The pids of fio servers running in a lab host's namespace."""
    out = subprocess.run(["ip", "netns", "pids", netns], capture_output=True, text=True).stdout
    found = []
    for pid in out.split():
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if cmd and cmd[0].endswith(b"fio") and any(a.startswith(b"--server") for a in cmd):
            found.append(int(pid))
    return found


def servers_left(lab: Lab, wait_s: float = 5.0) -> list[str]:
    """The fio servers still in any lab host after up to ``wait_s`` (pid and host)."""
    deadline = time.monotonic() + wait_s
    while True:
        left = [
            f"{lab.host(k).name}:{p}"
            for k in (1, 2, 3)
            for p in fio_servers_in(str(lab.host(k).netns))
        ]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.2)


def rows(run: Path) -> list[dict[str, Any]]:
    lines = (run / "clients.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def test_client_host_killed_mid_run_is_named_and_the_rest_kept(lab: Lab, tmp_path: Path) -> None:
    (tmp_path / "t").mkdir()
    victim = lab.host(2)
    # 8 MiB at 4 MiB/s per client: each step about 2 s, long enough to kill a host in
    text = clients_spec(
        lab,
        f"targets: [{{name: t, path: {tmp_path / 't'}}}]",
        "  counts: [3]\n  tests: [write, read]\n  same_file: false\n  file_size: 8M\n  rate: 4M\n",
    )
    spec, data = load_io_spec_text(text, "io.yaml")
    killed: list[int] = []

    def kill_victim() -> None:
        for pid in fio_servers_in(str(victim.netns)):
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    def progress(msg: str) -> None:
        if "series 3 host(s) write" in msg:
            threading.Timer(0.8, kill_victim).start()

    run = IoRunner(spec, data, tmp_path / "results", progress=progress).execute()
    metrics = analyze_and_write(run)
    assert killed, "no fio server found in the victim's namespace"
    c = metrics["clients"]
    assert [(x["host"], x["test"], x["layout"]) for x in c["lost"]] == [
        (victim.name, "write", "series")
    ]
    # the write step keeps the two other hosts' figures; 3 clients cannot read on 2 hosts
    by_test = {e["test"]: e for e in c["series"]}
    others = sorted(h.name for h in (lab.host(1), lab.host(3)))
    assert list(by_test) == ["write"]
    assert sorted(by_test["write"]["per_client_kbps"]) == others
    assert all(v > 0 for v in by_test["write"]["per_client_kbps"].values())
    skipped = [r["detail"] for r in rows(run.path) if r.get("event") == "skipped"]
    assert skipped == ["3 clients read not run: 2 hosts left"]
    # each host alone afterwards: the machines compared without the lost one
    assert sorted({e["host"] for e in c["hosts_compared"]}) == others
    flags = [f for f in metrics["validity"]["flags"] if f["rule"] == "host_lost"]
    assert [f["host"] for f in flags] == [victim.name]
    assert metrics["status"] == "complete"
    # every server stopped at the end (the victim's already gone)
    assert not servers_left(lab)


def test_bad_client_host_names_are_refused_with_a_did_you_mean(tmp_path: Path) -> None:
    inv = tmp_path / "hosts.yaml"
    inv.write_text("hosts:\n  node-1: {address: 10.0.0.1}\n  node-2: {address: 10.0.0.2}\n")
    (tmp_path / "t").mkdir()
    spec = tmp_path / "io.yaml"
    spec.write_text(
        f"name: bad\ntargets: [{{name: t, path: {tmp_path / 't'}}}]\n"
        f"clients:\n  inventory: {inv}\n  hosts: [node-1, node2]\n"
    )
    r = subprocess.run(
        [sys.executable, "-m", "gridbench.cli", "io", "validate", str(spec)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    said = r.stdout + r.stderr
    assert r.returncode == 2, said
    assert "io.yaml:5" in said and "no host 'node2'" in said, said
    assert "did you mean 'node-1'" in said or "did you mean 'node-2'" in said, said
    assert "Traceback" not in said
    # a count larger than the hosts, and the same host twice: one error each
    for hosts, extra, words in (
        ("[node-1, node-2]", "  counts: [3]\n", "more than the 2 hosts"),
        ("[node-1, node-1]", "", "node-1 twice"),
    ):
        spec.write_text(
            f"name: bad\ntargets: [{{name: t, path: {tmp_path / 't'}}}]\n"
            f"clients:\n  inventory: {inv}\n  hosts: {hosts}\n{extra}"
        )
        r = subprocess.run(
            [sys.executable, "-m", "gridbench.cli", "io", "validate", str(spec)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert r.returncode == 2 and words in r.stdout + r.stderr, r.stdout + r.stderr


def test_a_killed_controller_leaves_no_fio_server(lab: Lab, tmp_path: Path) -> None:
    """kill -9 of 'gridbench io run' mid-phase: the servers' lifelines close and they stop;
    'gridbench cleanup' then records the run crashed and finds nothing left running."""
    (tmp_path / "t").mkdir()
    spec = tmp_path / "io.yaml"
    spec.write_text(
        clients_spec(
            lab,
            f"targets: [{{name: t, path: {tmp_path / 't'}}}]",
            "  counts: [3]\n  tests: [write]\n  same_file: false\n  compare_hosts: false\n"
            "  file_size: 32M\n  rate: 2M\n",
            name="killed",
        )
    )
    env = {**os.environ, "GRIDBENCH_RESULTS": str(tmp_path / "results")}
    cmd = [sys.executable, "-m", "gridbench.cli", "io", "run", str(spec)]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    book: list[Path] = []
    while time.monotonic() < deadline:
        book = list((tmp_path / "results").glob("*/fio_servers.jsonl"))
        if book and book[0].read_text().count('"ready"') == 3:
            break
        time.sleep(0.2)
    assert book, "the run booked no fio server"
    recorded = [json.loads(x) for x in book[0].read_text().splitlines()]
    assert [r["host"] for r in recorded if r["event"] == "start"] == [
        f"{lab.name}-{k}" for k in (1, 2, 3)
    ]
    time.sleep(1.0)
    assert all(fio_servers_in(str(lab.host(k).netns)) for k in (1, 2, 3))
    proc.kill()
    proc.wait(10)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and any(
        fio_servers_in(str(lab.host(k).netns)) for k in (1, 2, 3)
    ):
        time.sleep(0.2)
    assert not any(fio_servers_in(str(lab.host(k).netns)) for k in (1, 2, 3))
    run = book[0].parent
    r = subprocess.run(
        [sys.executable, "-m", "gridbench.cli", "cleanup", str(run), "--yes"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "none left running" in r.stdout and "crashed" in r.stdout, r.stdout


def _ancestors(pid: int) -> list[str]:
    """The names of a process's ancestors, nearest first."""
    import psutil

    return [p.name() for p in psutil.Process(pid).parents()]


def test_fio_servers_started_over_ssh_on_a_host_without_netns(lab: Lab, tmp_path: Path) -> None:
    """A lab host named in an inventory without its netns is reached as any other host:
    over SSH with its ssh options (gridbench.hosts.remote), its fio server started by the
    host's own sshd. Its figures come back; the clients thresholds read them (one passes,
    one fails with the figure it saw); the progress steps are the plan's; nothing is left
    on the host."""
    import yaml

    from gridbench.io.plan import steps

    host = lab.host(1)
    entry = host.model_dump(exclude={"name", "netns", "proxies", "latency"}, exclude_none=True)
    inv = tmp_path / "hosts.yaml"
    inv.write_text(yaml.safe_dump({"hosts": {"far": entry}}))
    (tmp_path / "t").mkdir()
    text = (
        f"name: ssh\ntargets: [{{name: t, path: {tmp_path / 't'}}}]\nrepetitions: 1\n"
        "cache: none\niozone: {enabled: false, file_size: 4M, record_size: 128k}\n"
        f"clients:\n  inventory: {inv}\n  hosts: [far]\n  tests: [write, read]\n"
        "  same_file: false\n"
        "thresholds:\n"
        "  - {metric: clients.series.t.write.1.last_done_kbps.mean, op: '>', value: 0}\n"
        "  - {metric: clients.lost, op: '==', value: 0}\n"
        "  - {metric: clients.hosts.t.read.far.kbps.mean, op: '>', value: 1e15}\n"
    )
    spec, data = load_io_spec_text(text, "io.yaml")
    said: list[str] = []
    seen: dict[str, list[str]] = {}

    def progress(msg: str) -> None:
        said.append(msg)
        if "series 1 host(s) write" in msg:  # the server runs now: where, and whose child
            pids = fio_servers_in(str(host.netns))
            seen.update({str(p): _ancestors(p) for p in pids})

    run = IoRunner(spec, data, tmp_path / "results", progress=progress).execute()
    metrics = analyze_and_write(run)
    book = [json.loads(x) for x in (run.path / "fio_servers.jsonl").read_text().splitlines()]
    [start] = [r for r in book if r["event"] == "start"]
    assert start["how"] == "ssh" and "gridbench.hosts.remote" in start["argv"], start
    assert [r["event"] for r in book] == ["start", "started", "ready", "stopped"]
    # the server listened in the host's own namespace, started by that host's sshd
    assert seen and all("sshd" in names for names in seen.values()), seen
    c = metrics["clients"]
    [write] = [e for e in c["series"] if e["test"] == "write"]
    assert write["hosts"] == ["far"] and write["per_client_kbps"]["far"] > 0
    got = {t["metric"]: t for t in metrics["thresholds"]}
    assert got["clients.series.t.write.1.last_done_kbps.mean"]["passed"] is True
    assert (
        got["clients.series.t.write.1.last_done_kbps.mean"]["actual"]
        == (write["last_done_kbps"]["mean"])
    )
    assert got["clients.lost"]["passed"] is True and got["clients.lost"]["actual"] == 0
    [far_read] = [e for e in c["hosts_compared"] if e["test"] == "read"]
    assert got["clients.hosts.t.read.far.kbps.mean"]["passed"] is False
    assert got["clients.hosts.t.read.far.kbps.mean"]["actual"] == far_read["kbps"]["mean"]
    assert metrics["thresholds_ok"] is False
    # one progress message per planned step, in the plan's words
    assert [m.split(": ", 1)[-1] for m in said[1:]] == [s.what for s in steps(spec)][1:]
    assert len(said) == len(steps(spec))
    assert not servers_left(lab)


def test_resilience_writers_that_cannot_start_on_a_host_are_one_clear_error(
    lab: Lab, tmp_path: Path
) -> None:
    """resilience.hosts over SSH onto a host whose python is not there: the run stops with
    one error naming the host and what its log said (exit 3), no traceback, nothing left."""
    import yaml

    from conftest import BIN, cli_env

    host = lab.host(2)
    entry = host.model_dump(exclude={"name", "netns", "proxies", "latency"}, exclude_none=True)
    entry["python"] = "/nonexistent/bin/python"
    inv = tmp_path / "hosts.yaml"
    inv.write_text(yaml.safe_dump({"hosts": {"far": entry}}))
    (tmp_path / "t").mkdir()
    spec = tmp_path / "io.yaml"
    spec.write_text(
        f"name: nowriters\ntargets: [{{name: t, path: {tmp_path / 't'}}}]\n"
        "iozone: {enabled: false}\n"
        f"resilience:\n  target: t\n  duration: 2s\n  hosts: [far]\n  inventory: {inv}\n"
    )
    r = subprocess.run(
        [str(BIN), "io", "run", str(spec)],
        env=cli_env(tmp_path / "results"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    said = r.stdout + r.stderr
    assert r.returncode == 3, said
    assert "the resilience writers did not start on far" in said, said
    assert "/nonexistent/bin/python" in said, said
    assert "Traceback" not in said
    assert not list((tmp_path / "t").iterdir())  # the work folder removed


def _writers_in(netns: str) -> list[int]:
    """The pids of resilience host writers running in a lab host's namespace."""
    out = subprocess.run(["ip", "netns", "pids", netns], capture_output=True, text=True).stdout
    found = []
    for pid in out.split():
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"gridbench.io.host_writers" in cmd:
            found.append(int(pid))
    return found


def test_a_resilience_writer_host_lost_mid_load_is_named_its_files_still_checked(
    lab: Lab, tmp_path: Path
) -> None:
    """resilience.hosts on two lab hosts into a local folder (the namespaces share it); the
    second host's writers are killed mid-load: named lost (record, flag, table), the first
    host writes on, and every file either host was told was written is read back."""
    from gridbench.io.report import build_report

    (tmp_path / "t").mkdir()
    a, b = lab.host(1), lab.host(2)
    text = (
        f"name: lost-writer\ntargets: [{{name: t, path: {tmp_path / 't'}}}]\n"
        "iozone: {enabled: false}\n"
        f"resilience:\n  target: t\n  duration: 4s\n  writers: 1\n  file_size: 128k\n"
        f"  hosts: [{a.name}, {b.name}]\n  inventory: {lab.inventory}\n"
    )
    spec, data = load_io_spec_text(text, "io.yaml")
    killed: list[int] = []

    def kill_b() -> None:
        for pid in _writers_in(str(b.netns)):
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    def progress(msg: str) -> None:
        if "resilience load from" in msg:
            threading.Timer(1.5, kill_b).start()

    run = IoRunner(spec, data, tmp_path / "results", progress=progress).execute()
    m = analyze_and_write(run)
    assert killed, "no host writer found in the second host's namespace"
    r = m["resilience"]
    assert [x["host"] for x in r["hosts_lost"]] == [b.name]
    assert [f["host"] for f in m["validity"]["flags"] if f["rule"] == "host_lost"] == [b.name]
    per = {h["host"]: h for h in r["hosts"]}
    assert per[a.name]["writes"] > 0 and per[b.name]["writes"] > 0
    # the lost host's last file ended before it was lost; the other wrote on after it
    lost_t = r["hosts_lost"][0]["t"]
    recs = [json.loads(x) for x in (run.path / "resilience.jsonl").read_text().splitlines()]
    writes = [x for x in recs if x.get("event") == "write" and x["ok"]]
    assert max(x["t1"] for x in writes if x["host"] == b.name) <= lost_t
    assert max(x["t1"] for x in writes if x["host"] == a.name) > lost_t
    integ = r["integrity"]
    assert integ["ok"] is True and integ["files"] == len(writes) == r["writes"]
    assert m["resilience_ok"] is True
    table = next(s for s in build_report(m).sections if s.id == "resilience-hosts")
    assert table is not None
    assert not _writers_in(str(a.netns)) and not _writers_in(str(b.netns))
