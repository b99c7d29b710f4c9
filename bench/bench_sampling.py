"""Server sampling's cost on the controller and its timestamps (issue 37, Performance).

Starts ``--hosts`` real node_exporters (Debian's prometheus-node-exporter) on loopback,
samples them with :class:`gridbench.hosts.sampling.sampler.Sampler` every ``--interval``
seconds for ``--seconds`` seconds, and prints:

1. the controller's CPU (this process: user + system time, the sampler's thread and its
   fsynced appends included) as a share of one core over the sampling window; the target
   is at most 1% for 4 hosts once a second;
2. how far each scrape's timestamp lies from the host's own clock: the sample's ``t`` is
   node_exporter's ``node_time_seconds`` moved onto the controller's clock by the offset
   the sampler estimates (quickest round trip); on loopback the true offset is 0, so
   ``|t - node_time_seconds|`` is the timestamp's error. The target is within 5 ms. The
   middle of each scrape's round trip is printed too, for comparison.

    .venv/bin/python bench/bench_sampling.py [--hosts 4] [--interval 1] [--seconds 30]
"""

from __future__ import annotations

import argparse
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gridbench.hosts.sampling.analysis import read_sample_file
from gridbench.hosts.sampling.sampler import HostTarget, Sampler


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, timeout: float = 15.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise SystemExit(f"node_exporter did not listen on {port} within {timeout} s")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hosts", type=int, default=4)
    ap.add_argument("--interval", type=float, default=1.0)
    ap.add_argument("--seconds", type=float, default=30.0)
    args = ap.parse_args()
    exe = shutil.which("prometheus-node-exporter")
    if exe is None:
        print("prometheus-node-exporter is not installed (scripts/debian-packages.txt)")
        return 2
    procs: list[subprocess.Popen[bytes]] = []
    with tempfile.TemporaryDirectory(prefix="gb-bench-sampling-") as tmp:
        try:
            targets = []
            for i in range(max(1, min(args.hosts, 32))):
                port = free_port()
                procs.append(
                    subprocess.Popen(
                        [exe, f"--web.listen-address=127.0.0.1:{port}"],
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                    )
                )
                wait_port(port)
                targets.append(
                    HostTarget(
                        f"host-{i + 1}",
                        exporter=f"http://127.0.0.1:{port}/metrics",
                        address="127.0.0.1",
                    )
                )
            folder = Path(tmp) / "samples"
            sampler = Sampler(folder, targets, args.interval)
            sampler.start()
            time.sleep(min(3.0, args.seconds / 5))  # the first scrapes (connections) apart
            cpu0, wall0 = time.process_time(), time.monotonic()
            time.sleep(max(1.0, min(args.seconds, 3600)))
            cpu1, wall1 = time.process_time(), time.monotonic()
            sampler.stop()
        finally:
            for p in procs:
                p.send_signal(signal.SIGTERM)
            for p in procs:
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(5)
        errors, mids, rtts, samples, warnings = [], [], [], 0, 0
        for path in sorted(folder.glob("*.jsonl")):
            records, _ = read_sample_file(path)
            for r in records:
                if r.get("kind") == "warning":
                    warnings += 1
                if r.get("kind") != "sample":
                    continue
                samples += 1
                if r.get("host_t") is not None:
                    # loopback: the hosts' clock is this clock (true offset 0), so a
                    # timestamp's error is its distance from the host's own time
                    errors.append(abs(r["t"] - r["host_t"]) * 1000)
                    mids.append(abs(r["t_mid"] - r["host_t"]) * 1000)
                    rtts.append(r["rtt_s"] * 1000)
    share = 100.0 * (cpu1 - cpu0) / (wall1 - wall0)
    print(
        f"sampling {len(targets)} hosts every {args.interval:g} s for {wall1 - wall0:.1f} s: "
        f"{samples} samples, {warnings} warnings"
    )
    print(
        f"controller CPU: {cpu1 - cpu0:.3f} s = {share:.2f}% of one core "
        f"(target <= 1%: {'ok' if share <= 1.0 else 'OVER'})"
    )
    if errors:
        errors.sort()
        p99 = errors[min(len(errors) - 1, int(0.99 * len(errors)))]
        print(
            "scrape timestamp vs host clock after offset: "
            f"median {errors[len(errors) // 2]:.2f} ms, "
            f"p99 {p99:.2f} ms, max {errors[-1]:.2f} ms "
            f"(target <= 5 ms: {'ok' if errors[-1] <= 5.0 else 'OVER'}); "
            f"round trip median {sorted(rtts)[len(rtts) // 2]:.2f} ms"
        )
        mids.sort()
        print(
            "(the round trip's middle as the timestamp instead: "
            f"median {mids[len(mids) // 2]:.2f} ms, max {mids[-1]:.2f} ms)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
