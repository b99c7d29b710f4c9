"""Benchmark: 40 participants answering a study at once on one ``gridbench serve``.

Creates a study run with the seed's AHE shape (4 tools x 3 tasks: 32 pages a session),
issues a personal link per participant, starts ``gridbench serve`` on it and lets N
concurrent clients (each an ``httpx.AsyncClient`` with its own cookies, as N browsers)
walk their whole session at once, with no think time: GET the page, POST the answer (a
task: Start, then Stop), follow the redirect to the next page. Every answer is fsynced to
the log before the server answers, so the submit latency includes the disk.

The baseline, in the same run and at the same concurrency: GETs of a small static file
(/static/study.css), the HTTP stack's floor on this machine. The table gives page-load and
submit latency (p50, p99, max) and their ratio to the baseline, and the whole run's time;
then the log is replayed to check that every session finished with every answer. The first
page of each session is shown apart: the 40 arrive together at a server that has not opened
the study yet, and each starts its session (an fsynced record, one at a time per run).

    .venv/bin/python bench/bench_study.py [--participants 40] [--think 0] [--keep DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx
import numpy as np

BIN = Path(sys.executable).with_name("gridbench")
TOOLS = ("globus_cli", "ahe_cli", "unicore_gui", "ahe_gui")
TASKS = ("launch", "monitor", "download")


def spec_text(n: int) -> str:
    tools = "\n".join(
        f"  - id: {tool}\n    title: {tool}\n    tasks:\n"
        + "".join(
            f"      - {{id: {task}, title: {task}, instructions: Do {task} with {tool}.,"
            f" docs: 'man {tool} {task}'}}\n"
            for task in TASKS
        )
        for tool in TOOLS
    )
    people = ", ".join(f"P{i:02d}" for i in range(1, n + 1))
    return (
        "name: bench-study\npurpose: Which grid client is easier to use?\n"
        f"tools:\n{tools}participants: [{people}]\n"
        "questionnaires:\n  background:\n"
        "    - {id: years, text: Years of grid use?, kind: number, required: true}\n"
        "    - {id: role, text: Role?, kind: choice, choices: [student, staff]}\n"
    )


ANSWERS = {
    "purpose": ("next", {}),
    "background": ("submit", {"years": "3", "role": "staff"}),
    "likert": ("submit", {"difficulty": "2", "satisfaction": "4"}),
    "sus": ("submit", {f"sus{i}": str(1 + i % 5) for i in range(1, 11)}),
    "free_text": ("submit", {"comments": "fine"}),
}
STEP = re.compile(r'data-kind="([^"]*)" data-step="([^"]*)"')
CSRF = re.compile(r'name="csrf" value="([^"]+)"')


def make_run(root: Path, n: int) -> tuple[str, dict[str, str]]:
    """The study run and a secret per participant (issued before the server opens it)."""
    from gridbench.study.delivery import StudyDelivery
    from gridbench.study.load import load_study_spec_text
    from gridbench.study.runs import create_study_run

    spec, data = load_study_spec_text(spec_text(n), "bench")
    run = create_study_run(root, spec, data, delivery="browser")
    delivery = StudyDelivery.open(run.path)
    return run.path.name, {p: delivery.issue_link(p, "admin") for p in spec.participants}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Times:
    def __init__(self) -> None:
        self.first: list[float] = []  # the first visit: the session starts (a write)
        self.page: list[float] = []
        self.submit: list[float] = []
        self.static: list[float] = []


async def participant(url: str, path: str, times: Times, think: float) -> int:
    """Walk one session to its end; returns the number of posts."""
    posts = 0
    async with httpx.AsyncClient(base_url=url, timeout=120) as c:
        t = time.perf_counter()
        r = await c.get(path)
        times.first.append(time.perf_counter() - t)
        while True:
            r.raise_for_status()
            m = STEP.search(r.text)
            assert m, r.text[-500:]
            kind, step = m.groups()
            if kind == "done":
                return posts
            if kind == "task":
                action, fields = ("stop" if 'id="stop"' in r.text else "start"), dict[str, str]()
            else:
                action, fields = ANSWERS[kind]
            token = CSRF.search(r.text)
            assert token
            if think:
                await asyncio.sleep(think)
            form = {"csrf": token.group(1), "step": step, "action": action, **fields}
            t = time.perf_counter()
            posted = await c.post(path, data=form)
            times.submit.append(time.perf_counter() - t)
            assert posted.status_code == 303, (step, posted.status_code, posted.text[-500:])
            posts += 1
            t = time.perf_counter()  # the redirect, followed: the next page's load
            r = await c.get(posted.headers["location"])
            times.page.append(time.perf_counter() - t)


async def static_client(url: str, n: int, times: Times) -> None:
    async with httpx.AsyncClient(base_url=url, timeout=120) as c:
        for _ in range(n):
            t = time.perf_counter()
            (await c.get("/static/study.css")).raise_for_status()
            times.static.append(time.perf_counter() - t)


async def run_all(url: str, rid: str, secrets: dict[str, str], think: float) -> dict[str, float]:
    times = Times()
    t = time.perf_counter()
    await asyncio.gather(*(static_client(url, 64, times) for _ in secrets))
    static_total = time.perf_counter() - t
    t = time.perf_counter()
    posts = await asyncio.gather(
        *(participant(url, f"/p/{rid}/{s}", times, think) for s in secrets.values())
    )
    total = time.perf_counter() - t
    table(times, len(secrets), static_total, total, sum(posts))
    return {"total_s": total}


def ms(values: list[float]) -> tuple[float, float, float]:
    a = np.asarray(values) * 1e3
    return float(np.percentile(a, 50)), float(np.percentile(a, 99)), float(a.max())


def table(times: Times, n: int, static_total: float, total: float, posts: int) -> None:
    base = ms(times.static)
    print(f"\n{n} concurrent clients on one `gridbench serve` (loopback)\n")
    print(f"{'':29} {'n':>6} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'p50 x':>7} {'p99 x':>7}")
    for name, values in (
        ("baseline: GET static file", times.static),
        ("first page (session starts)", times.first),
        ("page load (GET next step)", times.page),
        ("submit (POST, fsynced)", times.submit),
    ):
        p50, p99, top = ms(values)
        print(
            f"{name:29} {len(values):6d} {p50:8.1f} {p99:8.1f} {top:8.1f} "
            f"{p50 / base[0]:7.1f} {p99 / base[1]:7.1f}"
        )
    print(
        f"\nbaseline: {len(times.static)} GETs in {static_total:.2f} s; sessions: {n} x "
        f"{posts // n} posts ({posts} answers) and {len(times.page) + n} pages in {total:.2f} s "
        f"({posts / total:.0f} answers/s)"
    )


def check_log(run: Path, n: int) -> None:
    from gridbench.study.records import Finished, read_log

    records = read_log(run)
    done = {r.participant for r in records if isinstance(r, Finished)}
    kinds = Counter(type(r).__name__ for r in records)
    assert len(done) == n, f"{len(done)} of {n} sessions finished"
    print(f"log: {len(records)} records, {len(done)} sessions finished; {dict(kinds)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--participants", type=int, default=40)
    ap.add_argument("--think", type=float, default=0.0, help="seconds before each answer")
    ap.add_argument("--keep", type=Path, help="build into this directory and keep it")
    args = ap.parse_args()
    base = args.keep or Path(tempfile.mkdtemp(prefix="gridbench-bench-study-"))
    root = base / "results"
    try:
        rid, secrets = make_run(root, args.participants)
        port = free_port()
        log = (base / "serve.log").open("w")
        proc = subprocess.Popen(
            [str(BIN), "serve", "--port", str(port), "--results", str(root)],
            stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        url = f"http://127.0.0.1:{port}"
        try:
            t0 = time.perf_counter()
            while True:
                try:
                    httpx.get(f"{url}/static/study.css").raise_for_status()
                    break
                except httpx.TransportError:
                    if time.perf_counter() - t0 > 60:
                        raise
                    time.sleep(0.1)
            asyncio.run(run_all(url, rid, secrets, args.think))
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=30)
        check_log(root / rid, args.participants)
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
