"""Benchmark: dashboard page loads on a 1,000,000-job results set.

Builds the 1M-job trial of bench_analysis.py (10 million events), analyses it and writes
its reports as ``gridbench run`` does, copies it as a second run (for compare and
history), starts ``gridbench serve`` on it and times, over HTTP on loopback:

- the baseline: a small static file (the HTTP stack's floor, same server, same run);
- the experiments list, the results page (first view after start, then warm), the
  metrics.json and CSV downloads, the compare and history pages;
- the results view built from scratch in-process (the cost the cache saves);
- with Chromium and Playwright installed: the results page in a real browser
  (DOMContentLoaded, load, and every chart drawn).

Target: each page < 1 s. Run:

    .venv/bin/python bench/bench_web.py [--jobs 1000000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).with_name("gridbench")
CHROMIUM = Path("/usr/bin/chromium")
SPEC = """\
name: bench-1m
backend: {type: reference}
load: {model: open, rate: 1000/s}
trial: {duration: 1000s}
thresholds: [{metric: latency.overall.p99, op: "<", value: 60}]
safety: {max_rate: 2000/s, max_jobs: 2000000}
"""


def _generate(run: Path, jobs: int) -> int:
    spec = importlib.util.spec_from_file_location("bench_analysis", HERE / "bench_analysis.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    n: int = mod.generate(run, jobs)
    return n


def build(root: Path, jobs: int) -> list[str]:
    """Two analysed copies of the 1M-job run under ``root``; returns their ids."""
    from gridbench.pipeline import analyze_and_report
    from gridbench.store.layout import RunDir
    from gridbench.web.results import warm

    ids = ["20260101T000000Z-bench-1m", "20260102T000000Z-bench-1m"]
    first = root / ids[0]
    t = time.perf_counter()
    events = _generate(first, jobs)
    print(f"generated {jobs:,} jobs ({events:,} events) in {time.perf_counter() - t:.1f} s")
    (first / "spec.yaml").write_text(SPEC)
    RunDir(first).update_experiment(
        id=ids[0], name="bench-1m", backend="reference", load_model="open",
        status="complete", created="2026-01-01T00:00:00+00:00", trials_planned=1, trials_done=1,
    )  # fmt: skip
    t = time.perf_counter()
    # as `gridbench run/analyze` do: the dashboard's view is built right after the reports
    analyze_and_report(first, after=(lambda p: warm(p, p.parent),))
    print(f"analysed and reported in {time.perf_counter() - t:.1f} s")
    second = root / ids[1]
    shutil.copytree(first, second, ignore=shutil.ignore_patterns(".web-view.json"))
    exp = json.loads((second / "experiment.json").read_text())
    exp.update(id=ids[1], created="2026-01-02T00:00:00+00:00")
    (second / "experiment.json").write_text(json.dumps(exp))
    os.utime(second / "metrics.json")  # a different version for the view cache
    return ids


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def timed(client: httpx.Client, url: str, repeat: int) -> tuple[float, float, int]:
    """(first, median of the rest, bytes) in seconds."""
    times, size = [], 0
    for _ in range(repeat):
        t = time.perf_counter()
        r = client.get(url)
        times.append(time.perf_counter() - t)
        r.raise_for_status()
        size = len(r.content)
    rest = times[1:] or times
    return times[0], statistics.median(rest), size


COLD = r"""
import sys, time
from pathlib import Path
t = time.perf_counter()
from gridbench.web.results import _build
imported = time.perf_counter() - t
t = time.perf_counter()
v = _build(Path(sys.argv[1]))
print(f"{time.perf_counter() - t:.3f} {imported:.3f} {len(v.chart_ids)}")
"""


def browser_times(url: str) -> dict[str, float] | None:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    if not CHROMIUM.exists():
        return None
    args = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update"]  # fmt: skip
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=args)
        page = b.new_page(viewport={"width": 1280, "height": 900})
        out: dict[str, float] = {}
        for i in range(3):  # the first load warms the browser's caches (plotly.js)
            t = time.perf_counter()
            page.goto(url)
            load = time.perf_counter() - t
            page.wait_for_selector(".plot[data-drawn]", timeout=60_000)
            first_chart = time.perf_counter() - t
            page.wait_for_selector("body[data-charts=drawn]", timeout=60_000)
            drawn = time.perf_counter() - t
            nav: dict[str, float] = page.evaluate(
                "(() => { const t = performance.timing, s = t.navigationStart;"
                " return {dcl: t.domContentLoadedEventEnd - s, load: t.loadEventEnd - s}; })()"
            )
            if i == 0:
                out["cold_load_s"] = load
                out["cold_charts_s"] = drawn
            out["dcl_s"], out["load_s"], out["charts_s"] = nav["dcl"] / 1e3, load, drawn
            out["first_chart_s"] = first_chart
        b.close()
        return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=6)
    ap.add_argument("--keep", type=Path, help="build into this directory and keep it")
    args = ap.parse_args()
    base = args.keep or Path(tempfile.mkdtemp(prefix="gridbench-bench-web-"))
    root = base / "results"
    try:
        ids = (
            sorted(p.name for p in root.iterdir() if (p / "metrics.json").is_file())
            if root.is_dir()
            else []
        )
        if len(ids) < 2:
            shutil.rmtree(root, ignore_errors=True)
            root.mkdir(parents=True)
            ids = build(root, args.jobs)
        # the first run's view was built when it was analysed (the CLI's after-report
        # step), as for any run; COLD below times building one from scratch
        cold = subprocess.run(
            [sys.executable, "-c", COLD, str(root / ids[0])],
            check=True, capture_output=True, text=True,
        ).stdout.split()  # fmt: skip
        port = free_port()
        log = (base / "serve.log").open("w")
        proc = subprocess.Popen(
            [str(BIN), "serve", "--port", str(port), "--results", str(root)],
            stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        url = f"http://127.0.0.1:{port}"
        try:
            with httpx.Client(base_url=url, timeout=120) as c:
                t0 = time.perf_counter()
                while True:
                    try:
                        c.get("/static/dashboard.css").raise_for_status()
                        break
                    except httpx.TransportError:
                        if time.perf_counter() - t0 > 60:
                            raise
                        time.sleep(0.1)
                print(f"server answered {time.perf_counter() - t0:.1f} s after start")
                t = time.perf_counter()
                c.get(f"/experiments/{ids[0]}").raise_for_status()
                print(
                    f"results page, first view right after server start (view built at analysis): "
                    f"{time.perf_counter() - t:.3f} s"
                )
                t = time.perf_counter()
                cmp = f"/compare?ids={ids[0]}&ids={ids[1]}"
                first_cmp = time.perf_counter()
                pending = 'id="samples-pending"' in c.get(cmp).text
                first_cmp = time.perf_counter() - first_cmp
                while 'id="samples-pending"' in c.get(cmp).text:
                    if time.perf_counter() - t > 300:
                        raise SystemExit("the per-job samples were not read within 300 s")
                    time.sleep(0.5)
                print(
                    f"compare, first view: {first_cmp:.3f} s "
                    f"({'per-trial tests while per-job samples load' if pending else 'per-job'}"
                    f"); per-job samples of both runs ready after "
                    f"{time.perf_counter() - t:.1f} s in the background"
                )
                pages = [
                    ("baseline: static CSS", "/static/dashboard.css"),
                    ("experiments list", "/"),
                    ("list, searched", "/?q=bench"),
                    ("results page", f"/experiments/{ids[0]}"),
                    ("results page (2nd run)", f"/experiments/{ids[1]}"),
                    ("metrics.json download", f"/experiments/{ids[0]}/download/metrics.json"),
                    ("latency.csv download", f"/experiments/{ids[0]}/download/latency.csv"),
                    ("compare (2 runs)", f"/compare?ids={ids[0]}&ids={ids[1]}"),
                    (
                        "history (p99)",
                        f"/history?experiment={ids[1]}&metric=latency.overall.p99",
                    ),
                    ("new experiment", "/new"),
                    ("/metrics", "/metrics"),
                ]
                print("steady state (caches warm):")
                print(f"{'page':28s} {'first':>8s} {'median':>8s} {'bytes':>10s}  (< 1 s?)")
                worst = 0.0
                for name, path in pages:
                    first, med, size = timed(c, path, args.repeat)
                    worst = max(worst, first, med)
                    ok = "yes" if max(first, med) < 1.0 else "NO"
                    print(f"{name:28s} {first:8.3f} {med:8.3f} {size:10,d}  {ok}")
            print(
                f"results view built from scratch (no cache): {float(cold[0]):.3f} s "
                f"({cold[2]} charts; imports {float(cold[1]):.2f} s before the clock)"
            )
            br = browser_times(f"{url}/experiments/{ids[0]}")
            if br is None:
                print("browser timings: skipped (no playwright or /usr/bin/chromium)")
            else:
                print(
                    f"browser, results page: DOMContentLoaded {br['dcl_s']:.3f} s, load "
                    f"{br['load_s']:.3f} s, first chart drawn {br['first_chart_s']:.3f} s, "
                    f"all {br['charts_s']:.3f} s "
                    f"(first visit: load {br['cold_load_s']:.3f} s, charts "
                    f"{br['cold_charts_s']:.3f} s)"
                )
            print(f"slowest HTTP page: {worst:.3f} s (target < 1 s)")
        finally:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
            log.close()
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
