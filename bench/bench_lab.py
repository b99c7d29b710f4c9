"""``gridbench lab up`` of 4 hosts (issue 37, Performance: at most 10 s).

Makes a lab of ``--hosts`` hosts (namespaces on a bridge, sshd and node_exporter each,
every link shaped by tc tbf, one Toxiproxy path), until every service answers, and removes
it again; prints the time of each ``lab up`` (as the command line runs it: a fresh
process, imports included) and of each ``lab down``, ``--repeat`` times. Root only.

    .venv/bin/python bench/bench_lab.py [--hosts 4] [--repeat 3]
"""

from __future__ import annotations

import argparse
import secrets
import statistics
import subprocess
import sys
import time

TARGET_S = 10.0


def _timed(args: list[str]) -> float:
    t0 = time.perf_counter()
    r = subprocess.run(
        [sys.executable, "-m", "gridbench.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    took = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit(f"gridbench {' '.join(args)} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    return took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    ups, downs = [], []
    for _ in range(a.repeat):
        name = "b" + secrets.token_hex(3)
        up = [
            "lab", "up", "--name", name, "--hosts", str(a.hosts),
            "--rate", "100mbit", "--latency", f"{name}-2:10ms",
        ]  # fmt: skip
        try:
            ups.append(_timed(up))
        finally:
            downs.append(_timed(["lab", "down", "--name", name]))
    med = statistics.median(ups)
    print(f"lab up, {a.hosts} hosts: " + ", ".join(f"{t:.2f}" for t in ups) + " s")
    print("lab down: " + ", ".join(f"{t:.2f}" for t in downs) + " s")
    verdict = "ok" if med <= TARGET_S else "ABOVE TARGET"
    print(f"median lab up {med:.2f} s (target <= {TARGET_S:g} s): {verdict}")


if __name__ == "__main__":
    main()
