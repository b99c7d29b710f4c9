"""The reference grid as a real HTTP service on loopback (in-process thread or subprocess)."""

from __future__ import annotations

import asyncio
import calendar
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from defusedxml import ElementTree

from gridbench.jobflow.reference import ReferenceGrid, build_config
from gridbench.jobflow.reference.config import merge

# Fast timings so a test takes a second or two; the chain is the demo's.
FAST: dict[str, Any] = {
    "ce": {"service": {"dist": "fixed", "mean": 0.005}},
    "bridge": {
        "service": {"dist": "fixed", "mean": 0.005},
        "transfer": {"dist": "fixed", "mean": 0.005},
    },
    "workers": {"runtime": {"dist": "fixed", "mean": 0.05}},
    "status_update": {"per_job_cost_s": 0.01, "interval_s": 0.05},
    "reports": {"rotate_s": 0.3, "publication_delay_s": 1.5},
}
TERMINAL = {"done", "failed", "cancelled"}


def start(tmp_path: Path, preset: str = "sequential", **over: Any) -> ReferenceGrid:
    cfg = build_config(
        preset, overrides=merge(merge(FAST, {"reports": {"dir": str(tmp_path)}}), over)
    )
    grid = ReferenceGrid(cfg)
    grid.start_background()
    return grid


@pytest.fixture
def grid(tmp_path: Path) -> Iterator[ReferenceGrid]:
    g = start(tmp_path)
    yield g
    g.stop()


async def wait_states(
    client: httpx.AsyncClient, ids: list[str], timeout: float = 20.0
) -> dict[str, dict[str, str]]:
    deadline = time.monotonic() + timeout
    while True:
        jobs = (await client.post("/jobs/status", json={"ids": ids})).json()["jobs"]
        if all(jobs.get(i, {}).get("state") in TERMINAL for i in ids):
            return dict(jobs)
        assert time.monotonic() < deadline, f"jobs not finished: {jobs}"
        await asyncio.sleep(0.05)


async def state_of(client: httpx.AsyncClient, job: str) -> str:
    return str(
        (await client.post("/jobs/status", json={"ids": [job]})).json()["jobs"][job]["state"]
    )


async def submit_many(client: httpx.AsyncClient, n: int, **body: Any) -> list[str]:
    ids = []
    for k in range(n):
        r = await client.post("/jobs", json={"name": f"job-{k}", **body})
        assert r.status_code == 201, r.text
        ids.append(r.json()["id"])
    return ids


def _t(dt: str) -> int:
    base, _, ms = dt.partition(".")
    return calendar.timegm(time.strptime(base, "%Y-%m-%d %H:%M:%S")) * 1000 + int(ms)


def parse_reports(blobs: list[bytes]) -> list[dict[str, str]]:
    rows = []
    for blob in blobs:
        root = ElementTree.fromstring(blob)
        assert root.tag == "report"
        assert root.get("timezone") == "GMT" and root.get("version") == "1.1"
        assert re.fullmatch(r"\d{13}", root.get("timestamp", ""))
        for md in root.findall("metric_data"):
            rows.append({child.tag: child.text or "" for child in md})
    return rows


def listed(html: str) -> list[str]:
    return re.findall(r'<a href="([^"]+\.xml)">', html)


# -- the happy path ----------------------------------------------------------------------
async def test_jobs_flow_through_and_reports_chain_the_ids(grid: ReferenceGrid) -> None:
    async with httpx.AsyncClient(base_url=grid.url) as client:
        health = (await client.get("/health")).json()
        assert health["ok"] is True and health["policy"] == "sequential"
        ids = await submit_many(client, 8, application="dsp")
        ids.append((await client.post("/jobs", json={"name": "x", "runtime_s": 0.3})).json()["id"])
        states = await wait_states(client, ids)
        assert {s["state"] for s in states.values()} == {"done"}
        out = await client.get(f"/jobs/{ids[0]}/output")
        assert out.status_code == 200 and out.text.startswith("job-0: finished on dg-")
        assert (await client.get("/queue")).json()["total"] == 0

        # The file holding the last T7 was closed < rotate_s ago (or is still open):
        # it is not published yet and cannot be downloaded.
        on_disk = sorted(p.name for p in (grid.reports_dir / "ce").glob("*.xml"))
        holder = next(
            name
            for name in reversed(on_disk)
            if f"<job_id>{ids[-1]}</job_id>\n    <status>Finished"
            in (grid.reports_dir / "ce" / name).read_text()
        )
        assert holder not in listed((await client.get("/reports/ce/")).text)
        assert (await client.get(f"/reports/ce/{holder}")).status_code == 404

        # After the publication delay (and rotation) everything is listed.
        root = (await client.get("/reports/")).text
        assert '<a href="ce/">' in root and '<a href="bridge/">' in root
        deadline = time.monotonic() + 10
        while True:
            names = {t: listed((await client.get(f"/reports/{t}/")).text) for t in ("ce", "bridge")}
            if holder in names["ce"] and names["bridge"]:
                break
            assert time.monotonic() < deadline, "reports never published"
            await asyncio.sleep(0.1)
        blobs = {
            t: [(await client.get(f"/reports/{t}/{n}")).content for n in names[t]]
            for t in ("ce", "bridge")
        }
    ce_rows, br_rows = parse_reports(blobs["ce"]), parse_reports(blobs["bridge"])
    for row in ce_rows + br_rows:
        assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}", row["dt"])

    def stamps(rows: list[dict[str, str]], jid: str) -> dict[str, dict[str, str]]:
        out = {}
        for r in rows:
            if r["job_id"] == jid:
                key = r["event"] if r["event"] != "job_status" else r["status"]
                out[key] = r
        return out

    for cid in ids:
        ce = stamps(ce_rows, cid)
        bridge_id = ce["job_submission"]["job_id_bridge"]
        br = stamps(br_rows, bridge_id)
        assert br["job_entry"]["job_id"] == bridge_id  # the id chain CE -> bridge
        assert br["job_submission"]["job_id_bridge"].startswith("dg-")
        assert ce["job_entry"]["input_grid_name"] == br["job_entry"]["input_grid_name"]
        if cid != ids[-1]:
            assert ce["job_entry"]["application"] == "dsp"
        chain = [
            ce["job_entry"],  # T2
            ce["job_submission"],  # T3
            br["job_entry"],  # T4
            br["job_submission"],  # T5
            br["Finished"],  # T6
            ce["Finished"],  # T7
        ]
        t = [_t(r["dt"]) for r in chain]
        assert t == sorted(t), (cid, t)
    # The job that asked for a 0.3 s runtime ran for it in the worker pool (T6 - T5).
    last = stamps(br_rows, stamps(ce_rows, ids[-1])["job_submission"]["job_id_bridge"])
    ran = _t(last["Finished"]["dt"]) - _t(last["job_submission"]["dt"])
    assert ran >= 300


# -- overload and faults -----------------------------------------------------------------
@pytest.mark.parametrize("on_full", ["reject", "timeout"])
async def test_full_queue_answers_503_and_cancel_makes_room(tmp_path: Path, on_full: str) -> None:
    g = start(
        tmp_path,
        ce={"concurrency": 1, "queue_limit": 2, "service": {"dist": "fixed", "mean": 30}},
        faults={"on_full": on_full, "hold_s": 0.2},
    )
    try:
        async with httpx.AsyncClient(base_url=g.url) as client:
            ids = await submit_many(client, 2)
            full = await client.post("/jobs", json={"name": "one too many"})
            assert full.status_code == 503
            assert full.json()["kind"] == ("rejected" if on_full == "reject" else "timeout")
            assert (await client.get("/queue")).json()["ce"] == 2
            assert (await client.post("/jobs/cancel", json={"ids": [*ids, "nope"]})).json() == {
                "cancelled": 2
            }
            states = (await client.post("/jobs/status", json={"ids": [*ids, "nope"]})).json()
            assert set(states["jobs"]) == set(ids)  # unknown ids are omitted
            assert {s["state"] for s in states["jobs"].values()} == {"cancelled"}
            assert (await client.post("/jobs", json={"name": "fits now"})).status_code == 201
    finally:
        g.stop()


async def test_job_failures_are_reported_as_failed(tmp_path: Path) -> None:
    g = start(tmp_path, faults={"job_failure_prob": 1.0}, reports={"publication_delay_s": 0})
    try:
        async with httpx.AsyncClient(base_url=g.url) as client:
            ids = await submit_many(client, 4)
            states = await wait_states(client, ids)
            assert {s["state"] for s in states.values()} == {"failed"}
            assert "injected failure" in states[ids[0]]["message"]
            out = await client.get(f"/jobs/{ids[0]}/output")
            assert out.status_code == 200 and "failed" in out.text
    finally:
        g.stop()
    rows = parse_reports([p.read_bytes() for p in sorted((tmp_path / "ce").glob("*.xml"))])
    final = [r["status"] for r in rows if r["event"] == "job_status" and r["status"] != "Running"]
    assert final == ["Failed"] * 4


async def test_requested_failure_and_injected_submit_failure(tmp_path: Path) -> None:
    g = start(tmp_path, faults={"submit_failure_prob": 1.0})
    h = start(tmp_path / "h")
    try:
        async with httpx.AsyncClient(base_url=g.url) as client:
            r = await client.post("/jobs", json={"name": "a"})
            assert r.status_code == 500 and r.json()["kind"] == "error"
            assert (await client.get("/queue")).json()["total"] == 0
        async with httpx.AsyncClient(base_url=h.url) as client:
            good, bad = await submit_many(client, 1), await submit_many(client, 1, fail=True)
            states = await wait_states(client, good + bad)
            assert states[good[0]]["state"] == "done"
            assert states[bad[0]]["state"] == "failed"
    finally:
        g.stop()
        h.stop()


async def test_cancel_a_running_job_frees_its_slot(tmp_path: Path) -> None:
    g = start(tmp_path, workers={"slots": 1})
    try:
        async with httpx.AsyncClient(base_url=g.url) as client:
            [long] = await submit_many(client, 1, runtime_s=60)
            [short] = await submit_many(client, 1, runtime_s=0.01)
            deadline = time.monotonic() + 10
            while (await state_of(client, long)) != "running":
                assert time.monotonic() < deadline
                await asyncio.sleep(0.05)
            assert (await client.get(f"/jobs/{long}/output")).status_code == 409
            cancelled = await client.post("/jobs/cancel", json={"ids": [long]})
            assert cancelled.json()["cancelled"] == 1
            states = await wait_states(client, [short])  # got the slot
            assert states[short]["state"] == "done"
            assert (await client.get("/jobs/nope/output")).status_code == 404
    finally:
        g.stop()


# -- the finishing-stage bottleneck ------------------------------------------------------
async def _drive(url: str, rate: float, n: int) -> list[str]:
    loop = asyncio.get_running_loop()
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        t0 = loop.time()

        async def one(k: int) -> str:
            r = await client.post("/jobs", json={"name": f"j{k}"})
            assert r.status_code == 201
            return str(r.json()["id"])

        tasks = []
        for k in range(n):
            await asyncio.sleep(max(0.0, t0 + k / rate - loop.time()))
            tasks.append(asyncio.create_task(one(k)))
        ids = list(await asyncio.gather(*tasks))
        await wait_states(client, ids, timeout=30)
        return ids


def _finishing_latencies(reports_dir: Path) -> list[int]:
    ce = parse_reports([p.read_bytes() for p in sorted((reports_dir / "ce").glob("*.xml"))])
    br = parse_reports([p.read_bytes() for p in sorted((reports_dir / "bridge").glob("*.xml"))])
    t6 = {r["job_id"]: _t(r["dt"]) for r in br if r.get("status") == "Finished"}
    to_bridge = {r["job_id"]: r["job_id_bridge"] for r in ce if r["event"] == "job_submission"}
    return [
        _t(r["dt"]) - t6[to_bridge[r["job_id"]]]
        for r in ce
        if r.get("status") == "Finished" and r["event"] == "job_status"
    ]


async def test_sequential_status_loop_is_the_bottleneck_batched_is_not(tmp_path: Path) -> None:
    # Capacity of the sequential loop: 1 / 0.02 = 50 jobs/s; offer 100 jobs/s.
    over = {"status_update": {"per_job_cost_s": 0.02, "interval_s": 0.05}}
    seq = start(tmp_path / "seq", "sequential", **over)
    bat = start(tmp_path / "bat", "batched", **over)
    try:
        await asyncio.gather(_drive(seq.url, 100, 150), _drive(bat.url, 100, 150))
    finally:
        seq.stop()
        bat.stop()
    lat_seq = _finishing_latencies(tmp_path / "seq")
    lat_bat = _finishing_latencies(tmp_path / "bat")
    assert len(lat_seq) == len(lat_bat) == 150
    mean_seq, mean_bat = sum(lat_seq) / 150, sum(lat_bat) / 150
    assert mean_seq > 3 * max(mean_bat, 1), (mean_seq, mean_bat)


# -- bad input ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/jobs", {}, "name"),
        ("/jobs", {"name": "a", "runtime_s": -1}, "runtime_s"),
        ("/jobs", {"name": "a", "runtime_s": "soon"}, "runtime_s"),
        ("/jobs", {"name": "a", "colour": "red"}, "colour"),
        ("/jobs", {"name": "a\x00b"}, "name"),
        ("/jobs", {"name": "x" * 300}, "name"),
        ("/jobs/status", {"ids": "abc"}, "ids"),
        ("/jobs/cancel", {"ids": [1, 2]}, "ids"),
        ("/jobs", [1, 2], "body"),
    ],
)
async def test_bad_bodies_get_422_naming_the_field(
    grid: ReferenceGrid, path: str, body: Any, field: str
) -> None:
    async with httpx.AsyncClient(base_url=grid.url) as client:
        r = await client.post(path, json=body)
    assert r.status_code == 422
    data = r.json()
    assert data["kind"] == "invalid" and field in data["error"]


async def test_malformed_and_oversized_bodies(grid: ReferenceGrid) -> None:
    async with httpx.AsyncClient(base_url=grid.url) as client:
        r = await client.post(
            "/jobs", content=b"{not json", headers={"content-type": "application/json"}
        )
        assert r.status_code == 422 and "invalid request" in r.json()["error"]
        big = b'{"ids": ["' + b"x" * (9 * 1024 * 1024) + b'"]}'
        r = await client.post("/jobs/status", content=big)
        assert r.status_code == 413
        assert (await client.get("/queue")).json()["total"] == 0


async def test_reports_path_traversal_is_404(tmp_path: Path) -> None:
    g = start(tmp_path, reports={"publication_delay_s": 0, "rotate_s": 0.1})
    try:
        async with httpx.AsyncClient(base_url=g.url) as client:
            await wait_states(client, await submit_many(client, 1))
            deadline = time.monotonic() + 10
            while not (names := listed((await client.get("/reports/ce/")).text)):
                assert time.monotonic() < deadline
                await asyncio.sleep(0.05)
            ok = await client.get(f"/reports/ce/{names[0]}")  # control: a real file is served
            assert ok.status_code == 200 and ok.content.startswith(b"<report ")
            (tmp_path / "secret.txt").write_text("secret")
            for raw in [
                "/reports/ce/..%2Fsecret.txt",
                "/reports/ce/..%2F..%2Fetc%2Fpasswd",
                "/reports/ce/%2e%2e/secret.txt",
                "/reports/..%2Fce/" + names[0],
                "/reports/ce/%2e%2e",
                "/reports/secret.txt/",
                "/reports/etc/passwd",
                "/reports/ce/bridge-000001.xml",
                "/reports/ce/ce-999999.xml",
            ]:
                r = await client.get(httpx.URL(g.url + raw))
                assert r.status_code == 404, raw
                assert b"secret" not in r.content and b"root:" not in r.content
    finally:
        g.stop()


# -- the process entry point -------------------------------------------------------------
def test_module_entry_point_prints_url_and_refuses_remote(tmp_path: Path) -> None:
    cfg = tmp_path / "grid.yaml"
    cfg.write_text("status_update:\n  policy: batched\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "gridbench.jobflow.reference", "--config", str(cfg), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        m = re.fullmatch(r"listening on (http://127\.0\.0\.1:\d+)\n", line)
        assert m, line
        health = httpx.get(m.group(1) + "/health").json()
        assert health["ok"] is True and health["policy"] == "batched"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    refused = subprocess.run(
        [sys.executable, "-m", "gridbench.jobflow.reference", "--host", "0.0.0.0", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert refused.returncode == 2
    assert "non-loopback" in refused.stderr and "--allow-remote" in refused.stderr
    assert "Traceback" not in refused.stderr
